package redisstore_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/config"
	"popupsvc/internal/popup"
	"popupsvc/internal/redisstore"
	"popupsvc/internal/testenv"
)

// TestDeadClusterMasterDelaysOnlyItsOwnUsers is docs/CONTRACT.md §3's promise at the store: on a
// Redis Cluster, while one master is down (killed: its port refuses; frozen: it accepts and never
// answers, like a host that vanished) and before any replica has taken its slots over, a user
// whose state lives on another master reads and records within the request budget as usual. It
// runs the hot path as popup-api does (the client of NewClient with the service's defaults, the
// autopipeliner or not, a GET and the impression's record script under one 80 ms budget) for many
// users of every master at once, and counts: the fault may cost the bystanders at most 1 in 100
// steps beyond what failed in as long a run before it (a loaded machine's own misses), while the
// victim's users must fail (or the fault never showed).
func TestDeadClusterMasterDelaysOnlyItsOwnUsers(t *testing.T) {
	if testenv.RedisCluster(t) {
		t.Skip("starts a cluster of its own; the single-node pass runs it")
	}
	testenv.Timed(t)
	tests := []struct {
		name      string
		fault     syscall.Signal
		pipelined bool
	}{
		{"killed, autopipelined", syscall.SIGKILL, true},
		{"frozen, autopipelined", syscall.SIGSTOP, true},
		{"killed, one round trip per command", syscall.SIGKILL, false},
		{"frozen, one round trip per command", syscall.SIGSTOP, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := runDeadMaster(t, tt.fault, tt.pipelined)
			t.Logf("while the master was down: bystanders %d of %d steps failed (first: %s), its own users %d of %d; before it, %d failed",
				got.bystanderFailed, got.bystanders, got.bystanderErr, got.victimFailed, got.victims, got.healthyFailed)
			require.Positive(t, got.bystanders, "no bystander step ran")
			assert.LessOrEqual(t, got.bystanderFailed, got.healthyFailed+got.bystanders/100,
				"the dead master cost its bystanders more than 1 in 100 steps beyond what failed before the fault")
			assert.Positive(t, got.victimFailed, "the fault never showed: the dead master's users were served")
		})
	}
}

// deadMasterCounts are the steps (a GET and a record, under one budget) run while the master was
// down, and how many failed, for its own users and the others.
type deadMasterCounts struct {
	victims, victimFailed, bystanders, bystanderFailed int
	bystanderErr                                       string // the first bystander's failure
	// healthyFailed is how many steps of anyone failed in as long a run before the fault: what
	// the machine's own hiccups (a busy CPU, the race detector) cost without any fault.
	healthyFailed int
}

func runDeadMaster(t *testing.T, fault syscall.Signal, pipelined bool) deadMasterCounts {
	t.Helper()
	nodes := testenv.StartRedisCluster(t, 3)
	addrs := make([]string, len(nodes))
	for i, n := range nodes {
		addrs[i] = n.Addr
	}
	cfg, err := config.Parse(map[string]string{"POPUP_REDIS_ADDR": strings.Join(addrs, ",")})
	require.NoError(t, err)
	rdb, err := redisstore.NewClient(redisstore.OptionsOf(cfg))
	require.NoError(t, err)
	defer rdb.Close()
	var pipe *redisstore.Pipeline
	if pipelined {
		pipe, err = redisstore.NewPipeline(rdb)
		require.NoError(t, err)
		defer pipe.Close()
	}
	keys := redisstore.Keys{Prefix: "p", Shards: config.ClusterQueueShards}
	store := redisstore.NewUserStore(rdb, keys, time.Hour, nil, 1, pipe)

	// The victim is the master of queue shard 0, as in the chaos scenario; 8 of its users and
	// 16 of the others', each seeded with a state so that a GET finds it.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cc := rdb.(*redis.ClusterClient)
	victim, err := cc.MasterForKey(ctx, keys.Queue(0))
	require.NoError(t, err)
	type user struct {
		uid    string
		victim bool
	}
	var users []user
	var nv, nb int
	for i := 0; nv < 8 || nb < 16; i++ {
		uid := "u" + strconv.Itoa(i)
		m, err := cc.MasterForKey(ctx, keys.User(uid))
		require.NoError(t, err)
		onVictim := m.Options().Addr == victim.Options().Addr
		if (onVictim && nv == 8) || (!onVictim && nb == 16) {
			continue
		}
		users = append(users, user{uid, onVictim})
		if onVictim {
			nv++
		} else {
			nb++
		}
		require.NoError(t, rdb.Set(ctx, keys.User(uid), redisstore.AppendState(nil, &popup.UserState{Day: 1}), time.Hour).Err())
	}

	// Every user steps in a loop of its own, bounded in count and time, while the master is up
	// (warm) and then down (counted).
	run := func(d time.Duration, counts *deadMasterCounts) {
		var victims, victimFailed, bystanders, bystanderFailed atomic.Int64
		var firstErr atomic.Value
		var wg sync.WaitGroup
		end := time.Now().Add(d)
		for _, u := range users {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for n := 0; n < 400 && time.Now().Before(end); n++ {
					err := recordStep(store, u.uid, n)
					switch {
					case u.victim:
						victims.Add(1)
						if err != nil {
							victimFailed.Add(1)
						}
					default:
						bystanders.Add(1)
						if err != nil {
							bystanderFailed.Add(1)
							firstErr.CompareAndSwap(nil, err.Error())
						}
					}
					time.Sleep(10 * time.Millisecond)
				}
			}()
		}
		wg.Wait()
		if counts != nil {
			*counts = deadMasterCounts{victims: int(victims.Load()), victimFailed: int(victimFailed.Load()),
				bystanders: int(bystanders.Load()), bystanderFailed: int(bystanderFailed.Load())}
			if e, ok := firstErr.Load().(string); ok {
				counts.bystanderErr = e
			}
		}
	}
	var healthy deadMasterCounts
	run(300*time.Millisecond, nil)
	run(1500*time.Millisecond, &healthy)
	for _, n := range nodes {
		if n.Addr == victim.Options().Addr {
			n.Signal(t, fault)
		}
	}
	var counts deadMasterCounts
	run(1500*time.Millisecond, &counts)
	counts.healthyFailed = healthy.bystanderFailed + healthy.victimFailed
	return counts
}
