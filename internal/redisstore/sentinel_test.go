package redisstore_test

import (
	"context"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/config"
	"popupsvc/internal/event"
	"popupsvc/internal/popup"
	"popupsvc/internal/redisstore"
	"popupsvc/internal/testenv"
)

// TestSentinelFollowsEveryPromotion: the sentinels promote a replica twice in a row, each
// time making the old primary a replica of the new one (SENTINEL FAILOVER), while users read and
// record without pause; after each promotion the store's writes succeed again within a few
// seconds. A client that kept a connection to a demoted primary would read
// on as before and have every write refused (READONLY) until it restarts: the sentinels of a
// make chaos run switched the master twice in two seconds and the service never answered normally
// again (issue 39).
func TestSentinelFollowsEveryPromotion(t *testing.T) {
	if testenv.RedisCluster(t) {
		t.Skip("starts a Sentinel topology of its own; the single-node pass runs it")
	}
	// Mostly a wait for the sentinels (they see a demoted primary as a good replica only after
	// their next look at it, up to ten seconds): it runs beside the package's other parallel tests.
	t.Parallel()
	runPromotions(t, 2)
}

func runPromotions(t *testing.T, promotions int) {
	t.Helper()
	const master = "popup"
	primary := testenv.RedisServer(t)
	host, port, err := net.SplitHostPort(primary)
	require.NoError(t, err)
	for range 2 {
		testenv.WaitReplicaLinked(t, testenv.RedisServer(t, "--replicaof", host, port))
	}
	sentinels := make([]string, 3)
	for i := range sentinels {
		sentinels[i] = testenv.StartSentinel(t, master, primary)
	}
	scs := make([]*redis.SentinelClient, len(sentinels))
	for i, a := range sentinels {
		scs[i] = redis.NewSentinelClient(&redis.Options{Addr: a})
		defer scs[i].Close()
	}
	waitSentinelsReady(t, scs, master)

	cfg, err := config.Parse(map[string]string{"POPUP_REDIS_ADDR": strings.Join(sentinels, ","), "POPUP_REDIS_MASTER_NAME": master})
	require.NoError(t, err)
	rdb, err := redisstore.NewClient(redisstore.OptionsOf(cfg))
	require.NoError(t, err)
	defer rdb.Close()
	pipe, err := redisstore.NewPipeline(rdb)
	require.NoError(t, err)
	defer pipe.Close()
	keys := redisstore.Keys{Prefix: "p", Shards: 1}
	store := redisstore.NewUserStore(rdb, keys, time.Hour, nil, 1, pipe)
	// As popup-api with POPUP_REDIS_ACK_REPLICAS=1: reads through the pipeline, records on a
	// client of their own that waits for a replica (two clients to follow the promotions).
	acfg := cfg
	acfg.RedisTimeout = 4*cfg.RequestBudget + cfg.RedisTimeout
	ackRDB, err := redisstore.NewClient(redisstore.OptionsOf(acfg))
	require.NoError(t, err)
	defer ackRDB.Close()
	store.SetAckReplicas(1, ackRDB)

	for w := range 8 {
		require.NoError(t, rdb.Set(context.Background(), keys.User("u"+strconv.Itoa(w)), redisstore.AppendState(nil, &popup.UserState{Day: 1}), time.Hour).Err())
	}
	// Users step (read, then record an impression, under one budget of a GET) without pause, so
	// that connections are dialled while the sentinels disagree; ok counts the steps that worked
	// since the last promotion was done. A client stuck on a demoted primary has every record
	// refused; a busy machine only misses some budgets.
	var ok, steps atomic.Int64
	var lastErr atomic.Value
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			uid := "u" + strconv.Itoa(w)
			for n := 0; n < 100_000 && ctx.Err() == nil; n++ {
				steps.Add(1)
				if err := recordStep(store, uid, n); err != nil {
					lastErr.Store(err.Error())
					time.Sleep(5 * time.Millisecond)
					continue
				}
				ok.Add(1)
			}
		})
	}
	defer func() { stop(); wg.Wait() }()

	current := primary
	for i := range promotions {
		waitSentinelsReady(t, scs, master)
		require.NoError(t, scs[i%len(scs)].Failover(context.Background(), master).Err(), "promotion %d", i+1)
		// The switch is done when every sentinel names a new primary.
		deadline := time.Now().Add(30 * time.Second)
		var now string
		for {
			now = agreedMaster(scs, master)
			if now != "" && now != current {
				break
			}
			require.False(t, time.Now().After(deadline), "promotion %d: sentinels did not agree on a new primary in 30 s", i+1)
			time.Sleep(20 * time.Millisecond)
		}
		current = now
		ok.Store(0)
		// Writes work again: 200 steps that worked, within a bounded wait.
		deadline = time.Now().Add(10 * time.Second)
		for ok.Load() < 200 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		last, _ := lastErr.Load().(string)
		require.GreaterOrEqual(t, ok.Load(), int64(200), "promotion %d to %s: writes did not come back within 10 s (last error: %s)", i+1, current, last)
	}
	assert.Positive(t, steps.Load())
}

// waitSentinelsReady waits until every sentinel knows the two others and two replicas, each
// linked to the primary: then any of them can lead a failover and find a replica to promote.
func waitSentinelsReady(t *testing.T, scs []*redis.SentinelClient, master string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	ready := func(sc *redis.SentinelClient) bool {
		m, err := sc.Master(context.Background(), master).Result()
		if err != nil || m["num-other-sentinels"] != "2" || m["num-slaves"] != "2" {
			return false
		}
		rs, err := sc.Replicas(context.Background(), master).Result()
		if err != nil {
			return false
		}
		for _, r := range rs {
			if r["flags"] != "slave" || r["master-link-status"] != "ok" {
				return false
			}
		}
		return true
	}
	for _, sc := range scs {
		for !ready(sc) {
			require.False(t, time.Now().After(deadline), "sentinels not ready in 30 s")
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// agreedMaster is the primary every sentinel names, "" while they disagree or one cannot answer.
func agreedMaster(scs []*redis.SentinelClient, master string) string {
	var agreed string
	for _, sc := range scs {
		addr, err := sc.GetMasterAddrByName(context.Background(), master).Result()
		if err != nil {
			return ""
		}
		a := net.JoinHostPort(addr[0], addr[1])
		if agreed != "" && a != agreed {
			return ""
		}
		agreed = a
	}
	return agreed
}

// recordStep is what a GET of popup-api does with Redis: read uid's state, record an impression,
// under one 80 ms budget.
func recordStep(store *redisstore.UserStore, uid string, n int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 80*time.Millisecond)
	defer cancel()
	now := time.Now()
	st, err := store.Get(ctx, uid, now)
	if err != nil {
		return err
	}
	next := st.UserState
	next.DayCount++
	ev := event.Event{ID: uid + "-" + strconv.Itoa(n), UID: uid, PopupID: 1, Action: event.Impression, At: now.UTC()}
	out, err := store.Record(ctx, uid, st.Raw, &next, []event.Event{ev}, false)
	if err == nil && out != popup.Recorded {
		return nil // a conflict with a concurrent write is an answer, not a failure
	}
	return err
}
