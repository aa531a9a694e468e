package drain_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/event"
	"popupsvc/internal/popup"
	"popupsvc/internal/redisstore"
	"popupsvc/internal/testenv"
)

// BenchmarkEventCost measures what one event costs the stores behind the API, for the scale
// model (docs/SCALING.md): b.N events are recorded through redisstore.UserStore.Record as the API
// records them (the user's state written, the event queued, an action's event id remembered),
// then drained into MariaDB by the real drain and writer (batches of 500). The mix is a
// homepage's: 85% impressions, 10% closes, 5% clicks, over b.N/2 users and 20 popups. Reported:
//
//	redis_state_B     Redis bytes per user state (MEMORY USAGE of the state keys, averaged)
//	redis_queued_B    Redis bytes per queued event (MEMORY USAGE of the queue lists / events)
//	mysql_rows/ev     rows written per event: Handler_write + _update + _delete (SHOW GLOBAL STATUS)
//	mysql_B/ev        bytes on disk per event: what the database's .ibd files grew by in the
//	                  drain (data and indexes, preallocated extents included) over b.N
//	mysql_data_B/ev   the same for data_length + index_length (information_schema, after ANALYZE)
//	action_log_B/ev   the action log's share of it; user_state_B/ev the user states' share
//	mariadb_cpu_ms/1k MariaDB's CPU (its /proc stat) per 1,000 events drained
//	worker_cpu_ms/1k  this process's CPU (the drain and writer) per 1,000 events drained
//	redis_cpu_ms/1k   redis-server's CPU (INFO cpu) per 1,000 events drained
//	events/s          the drain's rate
//
// MariaDB and Redis must be this machine's own (the test harness's), idle but for the benchmark:
// their CPU and counters are read from the servers. Run it with a fixed count:
//
//	go test -tags jsoniter,nomsgpack -run '^$' -bench '^BenchmarkEventCost$' -benchtime 1000000x ./internal/drain/
func BenchmarkEventCost(b *testing.B) {
	for _, shards := range []int{1, 16} {
		b.Run(fmt.Sprintf("shards-%d", shards), func(b *testing.B) {
			n := b.N
			e := newEnv(b, shards, 15*time.Second)
			ctx := context.Background()

			mem0 := redisUsedMemory(b, e.rdb)
			recordMix(b, e, n)
			var queued int64
			for s := range shards {
				queued += memoryUsage(b, e.rdb, e.keys.Queue(s))
			}
			stateB := sampleKeyBytes(b, e, n)
			b.Logf("Redis used_memory grew by %d bytes for %d events over %d users", redisUsedMemory(b, e.rdb)-mem0, n, users(n))

			disk0, data0, tables0 := databaseBytes(b, e.db)
			rows0, cpu0 := mariadbRows(b, e.db), mariadbCPU(b, e.db)
			redis0, self0 := testenv.RedisCPU(b, e.rdb), testenv.ProcessCPU(b)
			elapsed := e.drainTimed(b, n, e.writer.WriteBatch, 30*time.Minute)
			perK := 1000 / float64(n)
			b.ReportMetric(float64(n)/elapsed.Seconds(), "events/s")
			b.ReportMetric(float64(mariadbRows(b, e.db)-rows0)/float64(n), "mysql_rows/ev")
			b.ReportMetric((mariadbCPU(b, e.db)-cpu0).Seconds()*1000*perK, "mariadb_cpu_ms/1k")
			b.ReportMetric((testenv.RedisCPU(b, e.rdb)-redis0).Seconds()*1000*perK, "redis_cpu_ms/1k")
			b.ReportMetric((testenv.ProcessCPU(b)-self0).Seconds()*1000*perK, "worker_cpu_ms/1k")

			disk, data, tables := databaseBytes(b, e.db)
			b.ReportMetric(float64(disk-disk0)/float64(n), "mysql_B/ev")
			b.ReportMetric(float64(data-data0)/float64(n), "mysql_data_B/ev")
			for _, t := range []string{"popup_action_log", "popup_user_state"} {
				b.ReportMetric(float64(tables[t]-tables0[t])/float64(n), strings.TrimPrefix(t, "popup_")+"_B/ev")
			}
			// (reported after the timer stopped: ResetTimer discards the metrics reported before)
			b.ReportMetric(stateB, "redis_state_B")
			b.ReportMetric(float64(queued)/float64(n), "redis_queued_B")
			var logRows int64
			require.NoError(b, e.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM popup_action_log").Scan(&logRows))
			require.Equal(b, int64(n), logRows, "every event is in the action log once")
		})
	}
}

// users is how many users the mix of n events spreads over.
func users(n int) int { return max(n/2, 1) }

// mixEvent is event i of the homepage mix: user i%users, popup 1-20, 17 in 20 impressions, then
// a close, then a click (each user's own events at increasing times).
func mixEvent(i, n int) event.Event {
	u := i % users(n)
	at := t0.Add(time.Duration(i) * time.Millisecond)
	action := event.Impression
	switch i % 20 {
	case 7, 13:
		action = event.Close
	case 17:
		action = event.Click
	}
	return event.Event{
		ID: "cost-" + strconv.Itoa(i), UID: "user-" + strconv.Itoa(u), PopupID: int64(1 + u%20),
		Action: action, At: at, NextShowAt: at.Add(24 * time.Hour), Impressions: 1, DayCount: 1,
	}
}

// recordMix records the n events of the mix through the user store, 16 at a time, as the API's
// requests would: each writes its user's state (one popup shown) and queues its event; clicks and
// closes remember their event id.
func recordMix(b *testing.B, e *env, n int) {
	b.Helper()
	store := redisstore.NewUserStore(e.rdb, e.keys, 30*24*time.Hour, nil, 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				ev := mixEvent(i, n)
				st := &popup.UserState{Popups: popup.StatesOf(map[int64]popup.PopupState{ev.PopupID: {
					NextShowAt: ev.NextShowAt, Impressions: 1, LastImpressionAt: ev.At,
				}}), Day: popup.DayNumber(ev.At), DayCount: 1, LastShownAt: ev.At}
				// the compare-and-set's prev: the state as the request read it
				prev, err := e.rdb.Get(ctx, e.keys.User(ev.UID)).Result()
				if err != nil && err != redis.Nil {
					errs <- err
					return
				}
				out, err := store.Record(ctx, ev.UID, prev, st, []event.Event{ev}, ev.Action != event.Impression)
				if err != nil || out != popup.Recorded {
					errs <- fmt.Errorf("record event %d: outcome %v, %v", i, out, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(b, err)
	}
}

// sampleKeyBytes returns the average MEMORY USAGE of up to 1,000 users' state keys. (What a
// remembered event id costs depends on how full its generation's hashes are, which this run's
// few clicks are not: BenchmarkMarkerMemory in internal/redisstore measures it.)
func sampleKeyBytes(b *testing.B, e *env, n int) (state float64) {
	b.Helper()
	var sum, cnt int64
	for i := 0; i < users(n) && cnt < 1000; i++ {
		sum += memoryUsage(b, e.rdb, e.keys.User(mixEvent(i, n).UID))
		cnt++
	}
	require.NotZero(b, cnt)
	return float64(sum) / float64(cnt)
}

// memoryUsage is MEMORY USAGE of key with every element counted (SAMPLES 0); 0 if there is no
// such key.
func memoryUsage(b *testing.B, rdb redis.UniversalClient, key string) int64 {
	b.Helper()
	v, err := rdb.MemoryUsage(context.Background(), key, 0).Result()
	if err == redis.Nil {
		return 0
	}
	require.NoError(b, err, "MEMORY USAGE %s", key)
	return v
}

// infoField returns one numeric field of INFO section.
func infoField(b *testing.B, rdb redis.UniversalClient, section, field string) float64 {
	b.Helper()
	info, err := rdb.Info(context.Background(), section).Result()
	require.NoError(b, err)
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			f, err := strconv.ParseFloat(v, 64)
			require.NoError(b, err, field)
			return f
		}
	}
	b.Fatalf("INFO %s has no %s", section, field)
	return 0
}

func redisUsedMemory(b *testing.B, rdb redis.UniversalClient) int64 {
	return int64(infoField(b, rdb, "memory", "used_memory"))
}

// mariadbRows is the rows the server's storage handlers were asked to insert, update or delete
// (Handler_write + Handler_update + Handler_delete) since it started: an upsert that updates
// counts as an attempted write and an update.
func mariadbRows(b *testing.B, db *sql.DB) int64 {
	b.Helper()
	rows, err := db.Query("SHOW GLOBAL STATUS WHERE Variable_name IN ('Handler_write', 'Handler_update', 'Handler_delete')")
	require.NoError(b, err)
	defer rows.Close()
	var total int64
	for rows.Next() {
		var name string
		var v int64
		require.NoError(b, rows.Scan(&name, &v))
		total += v
	}
	require.NoError(b, rows.Err())
	return total
}

// mariadbCPU is the CPU time (user + system) of the MariaDB server, read from /proc by the pid
// in its pid file: the server must run on this machine.
func mariadbCPU(b *testing.B, db *sql.DB) time.Duration {
	b.Helper()
	var pidFile string
	require.NoError(b, db.QueryRow("SELECT @@pid_file").Scan(&pidFile))
	pid, err := os.ReadFile(pidFile)
	require.NoError(b, err, "MariaDB's pid file (the server must run on this machine)")
	return procCPU(b, strings.TrimSpace(string(pid)))
}

// procCPU reads utime + stime of a process from /proc/PID/stat (clock ticks of 10 ms).
func procCPU(b *testing.B, pid string) time.Duration {
	b.Helper()
	stat, err := os.ReadFile("/proc/" + pid + "/stat")
	require.NoError(b, err)
	// the fields after the command name, which is in parentheses and may hold spaces
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
	utime, err := strconv.ParseInt(f[11], 10, 64)
	require.NoError(b, err)
	stime, err := strconv.ParseInt(f[12], 10, 64)
	require.NoError(b, err)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// databaseBytes returns the size of the current database's tablespace files (.ibd) on disk, and
// its tables' data_length + index_length after ANALYZE TABLE, in all and by table.
func databaseBytes(b *testing.B, db *sql.DB) (disk, data int64, byTable map[string]int64) {
	b.Helper()
	var dir, name string
	require.NoError(b, db.QueryRow("SELECT @@datadir, DATABASE()").Scan(&dir, &name))
	entries, err := os.ReadDir(dir + "/" + name)
	require.NoError(b, err, "the database's directory (MariaDB must run on this machine)")
	for _, ent := range entries {
		if strings.HasSuffix(ent.Name(), ".ibd") {
			info, err := ent.Info()
			require.NoError(b, err)
			disk += info.Size()
		}
	}
	rows, err := db.Query("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND ENGINE = 'InnoDB'")
	require.NoError(b, err)
	var tables []string
	for rows.Next() {
		var t string
		require.NoError(b, rows.Scan(&t))
		tables = append(tables, "`"+t+"`")
	}
	require.NoError(b, rows.Err())
	rows.Close()
	_, err = db.Exec("ANALYZE TABLE " + strings.Join(tables, ", "))
	require.NoError(b, err)
	rows, err = db.Query(`SELECT TABLE_NAME, DATA_LENGTH + INDEX_LENGTH FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE()`)
	require.NoError(b, err)
	defer rows.Close()
	byTable = map[string]int64{}
	for rows.Next() {
		var t string
		var n int64
		require.NoError(b, rows.Scan(&t, &n))
		byTable[t] = n
		data += n
	}
	require.NoError(b, rows.Err())
	return disk, data, byTable
}
