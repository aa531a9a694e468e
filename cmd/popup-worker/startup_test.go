package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/event"
	"popupsvc/internal/testenv"
)

// health is the worker's /healthz answer.
type health struct {
	Code       int
	Status     string   `json:"status"`
	WaitingFor []string `json:"waiting_for"`
}

func getHealth(t *testing.T, addr string) health {
	t.Helper()
	res, err := http.Get("http://" + addr + "/healthz")
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	var h health
	require.NoError(t, json.Unmarshal(raw, &h), string(raw))
	h.Code = res.StatusCode
	return h
}

// TestWorkerStartsWithADependencyDownAndDrainsOnceItIsBack starts the real binary while MySQL or
// Redis is refused by a fault proxy in front of it, with events already queued: the worker must
// stay up, say on /healthz (200) what it waits for, and drain every event once the dependency is
// back.
func TestWorkerStartsWithADependencyDownAndDrainsOnceItIsBack(t *testing.T) {
	t.Parallel()
	testenv.SingleNodeRedis(t) // the fault proxy stands in front of one node
	tests := []struct {
		name string
		down string
	}{
		{name: "mysql down", down: "mysql"},
		{name: "redis down", down: "redis"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorkerEnv(t, 2)
			dsn, err := mysql.ParseDSN(w.dsn)
			require.NoError(t, err)
			mysqlProxy := testenv.NewProxy(t, dsn.Addr)
			redisProxy := testenv.NewProxy(t, w.redisAddr)
			proxy := map[string]*testenv.Proxy{"mysql": mysqlProxy, "redis": redisProxy}[tt.down]
			proxy.SetDown(true)
			dsn.Addr = mysqlProxy.Addr()
			rdb := testenv.Redis(t)
			db := openDB(t, w.dsn)
			keys := w.keys()
			const total = 50
			for i := range total {
				ev := mkEvent(i)
				require.NoError(t, rdb.RPush(context.Background(), keys.Queue(keys.Shard(ev.UID)), event.Append(nil, &ev)).Err())
			}
			addr := freeAddr(t)
			logs := newLogSink(t)

			p := startWorker(t, w.with("POPUP_MYSQL_DSN="+dsn.FormatDSN(), "POPUP_REDIS_ADDR="+redisProxy.Addr(),
				"POPUP_WORKER_ADDR="+addr), logs)
			waitHealthy(t, addr)
			// several retries of the one that is down, and the other one found up
			require.Eventually(t, func() bool {
				return proxy.Refused() >= 3 && slices.Equal(getHealth(t, addr).WaitingFor, []string{tt.down})
			}, 15*time.Second, 10*time.Millisecond, "several retries")

			h := getHealth(t, addr)
			assert.Equal(t, http.StatusOK, h.Code)
			assert.Equal(t, "waiting", h.Status)
			assert.Equal(t, []string{tt.down}, h.WaitingFor)
			assert.False(t, drained(t, rdb, db, keys, total), "nothing drained while %s is down", tt.down)
			select {
			case <-p.done:
				t.Fatalf("worker exited while %s was down: %v", tt.down, p.err)
			default:
			}

			proxy.SetDown(false)
			require.Eventually(t, func() bool { return drained(t, rdb, db, keys, total) }, 20*time.Second, 50*time.Millisecond,
				"every queued event written once %s is back", tt.down)
			assert.Equal(t, health{Code: http.StatusOK, Status: "ok"}, getHealth(t, addr))
			ids := make([]string, total)
			for i := range ids {
				ids[i] = mkEvent(i).ID
			}
			requireExactlyOnce(t, db, ids)
		})
	}
}

func TestWorkerRefusesANewerSchema(t *testing.T) {
	t.Parallel()
	w := newWorkerEnv(t, 1)
	_, err := openDB(t, w.dsn).Exec("INSERT INTO goose_db_version (version_id, is_applied) VALUES (99999, 1)")
	require.NoError(t, err)
	logs := newLogSink(t)

	p := startWorker(t, w.with(), logs)
	ws := p.waitExit(t, 20*time.Second)

	assert.NotZero(t, ws.ExitStatus())
	assert.Contains(t, logs.String(), "newer than this binary")
}
