package decide

import (
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/popup"
	"popupsvc/internal/popup/rules"
	"popupsvc/internal/snapshot"
	"popupsvc/internal/testenv"
)

var lt0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// gens are snapshots without popups, gens[n] of generation, config version and Config n: a new
// one is a config change. anyReq is a request of the plain kind the keys are built from.
var (
	gens   = [...]*snapshot.Snapshot{nil, {Gen: 1, Version: 1, Config: 1}, {Gen: 2, Version: 2, Config: 2}}
	anyReq = &popup.Request{UID: "u1", Platform: popup.PlatformIOS}
)

func gen(n int) *snapshot.Snapshot { return gens[n] }

func keyOf(uid string) *localKey {
	var k localKey
	k.build(&popup.Request{UID: uid, Platform: popup.PlatformIOS, AppVersion: popup.Version{8, 10}, Region: "us", Lang: "en"}, nil)
	return &k
}

func TestLocalAnswersStayWithinTheirSize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		size int
	}{
		{"smaller than a shard", 10},
		{"one entry", 1},
		{"not a multiple of the shard count", 5000},
		{"many shards", 20000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := NewLocalAnswers(tt.size)
			prometheus.NewPedanticRegistry().MustRegister(l.Collectors()...)
			const inserts = 3 * 100000
			for i := 0; i < min(inserts, 3*tt.size+100); i++ {
				l.remember(keyOf("u"+strconv.Itoa(i)), gen(1), anyReq, lt0, lt0.Add(time.Hour))
			}
			n := min(inserts, 3*tt.size+100)
			assert.LessOrEqual(t, l.Len(), tt.size)
			assert.Greater(t, l.Len(), 0)
			evictions := value(t, l, "popup_local_answers_evictions_total")
			assert.Equal(t, float64(n-l.Len()), evictions, "every insert beyond the size evicted one entry")
		})
	}
}

// value reads the one series of the collector of l named name.
func value(t *testing.T, l *LocalAnswers, name string) float64 {
	t.Helper()
	for _, c := range l.Collectors() {
		ch := make(chan prometheus.Metric, 1)
		c.Collect(ch)
		m := <-ch
		if !strings.Contains(m.Desc().String(), `"`+name+`"`) {
			continue
		}
		var out dto.Metric
		require.NoError(t, m.Write(&out))
		if out.Counter != nil {
			return out.Counter.GetValue()
		}
		return out.Gauge.GetValue()
	}
	t.Fatalf("no collector %s", name)
	return 0
}

func TestLocalAnswersCountHitsAndMisses(t *testing.T) {
	t.Parallel()
	l := NewLocalAnswers(100)
	k := keyOf("u1")
	assert.False(t, l.lookup(k, gen(1), anyReq, lt0), "empty")
	l.remember(k, gen(1), anyReq, lt0, lt0.Add(time.Minute))
	assert.True(t, l.lookup(k, gen(1), anyReq, lt0.Add(59*time.Second)))
	assert.False(t, l.lookup(k, gen(1), anyReq, lt0.Add(time.Minute)), "expired")
	assert.False(t, l.lookup(k, gen(2), anyReq, lt0), "older config")
	l.remember(k, gen(2), anyReq, lt0, time.Time{})
	assert.True(t, l.lookup(k, gen(2), anyReq, lt0.Add(10000*24*time.Hour)), "never eligible: held until the config changes")
	l.remember(keyOf("u2"), gen(2), anyReq, lt0, lt0) // an instant not after now is not remembered
	assert.False(t, l.lookup(keyOf("u2"), gen(2), anyReq, lt0))
	assert.Equal(t, float64(2), value(t, l, "popup_local_answers_hits_total"))
	assert.Equal(t, float64(4), value(t, l, "popup_local_answers_misses_total"))
}

func TestLocalKeyRejectsOversizedRequests(t *testing.T) {
	t.Parallel()
	var k localKey
	long := string(make([]byte, 600))
	k.build(&popup.Request{UID: long, Platform: popup.PlatformIOS}, nil)
	l := NewLocalAnswers(10)
	l.remember(&k, gen(1), anyReq, lt0, time.Time{})
	assert.Zero(t, l.Len())
	assert.False(t, l.lookup(&k, gen(1), anyReq, lt0))

	// attribute values that do not fit: no key either
	var ka localKey
	ka.build(&popup.Request{UID: "u1", Platform: popup.PlatformIOS,
		Where: popup.Where{Attrs: rules.NewAttrs([]rules.Pair{{Key: "a", Value: string(make([]byte, 256))}, {Key: "b", Value: string(make([]byte, 256))}})}},
		[]string{"a", "b"})
	assert.Zero(t, ka.n)
}

// TestLocalKeyNamesWhatTheDecisionReads: the key tells apart requests whose placement, or whose
// value (or lack) of an attribute the placement's rules read, differ; attributes no rule reads
// do not split it; a request carrying an event has no key.
func TestLocalKeyNamesWhatTheDecisionReads(t *testing.T) {
	t.Parallel()
	keyFor := func(w popup.Where, ruleKeys ...string) string {
		var k localKey
		k.build(&popup.Request{UID: "u1", Platform: popup.PlatformIOS, AppVersion: popup.Version{8, 10}, Where: w}, ruleKeys)
		return string(k.bytes())
	}
	attrs := func(kv ...string) rules.Attrs {
		var ps []rules.Pair
		for i := 0; i+1 < len(kv); i += 2 {
			ps = append(ps, rules.Pair{Key: kv[i], Value: kv[i+1]})
		}
		return rules.NewAttrs(ps)
	}
	home := keyFor(popup.Where{})
	assert.Equal(t, home, keyFor(popup.Where{Placement: "home"}))
	assert.NotEqual(t, home, keyFor(popup.Where{Placement: "checkout"}))
	assert.Equal(t, home, keyFor(popup.Where{Attrs: attrs("plan", "pro")}), "no rule reads plan")
	pro := keyFor(popup.Where{Attrs: attrs("plan", "pro", "x", "1")}, "plan")
	assert.Equal(t, pro, keyFor(popup.Where{Attrs: attrs("plan", "pro", "x", "2")}, "plan"), "x is read by no rule")
	assert.NotEqual(t, pro, keyFor(popup.Where{Attrs: attrs("plan", "team")}, "plan"))
	assert.NotEqual(t, keyFor(popup.Where{}, "plan"), keyFor(popup.Where{Attrs: attrs("plan", "")}, "plan"), "absent is not empty")
	assert.NotEqual(t, keyFor(popup.Where{Attrs: attrs("a", "1")}, "a", "b"), keyFor(popup.Where{Attrs: attrs("b", "1")}, "a", "b"))
	assert.Empty(t, keyFor(popup.Where{Event: "purchase"}), "an event request is decided in full")
	// the values of the read keys in the keys' order, 0x02 for each one missing, whatever else
	assert.Equal(t, home+"\x02\x012\x00\x02\x013\x00\x02",
		keyFor(popup.Where{Attrs: attrs("e", "3", "a", "1", "c", "2", "g", "4")}, "b", "c", "d", "e", "f"))
	assert.Empty(t, keyFor(popup.Where{Attrs: attrs("plan", "a\x00b")}, "plan"), "a NUL would end the value early")
	assert.Empty(t, keyFor(popup.Where{Attrs: attrs("plan", "a\xffb")}, "plan"), "0xFF would start a placement")
}

func TestLocalAnswersConcurrentUse(t *testing.T) {
	t.Parallel()
	l := NewLocalAnswers(1000)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				k := keyOf("u" + strconv.Itoa((g*7919+i)%3000))
				if !l.lookup(k, gen(1), anyReq, lt0) {
					l.remember(k, gen(1), anyReq, lt0, lt0.Add(time.Hour))
				}
			}
		}()
	}
	wg.Wait()
	require.LessOrEqual(t, l.Len(), 1000)
}

// BenchmarkLocalAnswerHit is the steady-state user's whole cost on top of the HTTP layer:
// building the key, hashing it, a read lock and a map lookup.
func BenchmarkLocalAnswerHit(b *testing.B) {
	l := NewLocalAnswers(100000)
	req := popup.Request{UID: "user-1234567", Platform: popup.PlatformIOS, AppVersion: popup.Version{8, 10}, Region: "us", Lang: "en"}
	var k localKey
	k.build(&req, nil)
	l.remember(&k, gen(1), anyReq, lt0, lt0.Add(time.Hour))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			var k localKey
			k.build(&req, nil)
			if !l.lookup(&k, gen(1), anyReq, lt0) {
				b.Fatal("miss")
			}
		}
	})
}

// BenchmarkLocalAnswerRemember is the cost added to a full decision that chose nothing, with
// the cache full (every insert evicts).
func BenchmarkLocalAnswerRemember(b *testing.B) {
	l := NewLocalAnswers(10000)
	keys := make([]localKey, 50000)
	for i := range keys {
		keys[i].build(&popup.Request{UID: "user-" + strconv.Itoa(i), Platform: popup.PlatformIOS, AppVersion: popup.Version{8, 10}}, nil)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		l.remember(&keys[i%len(keys)], gen(1), anyReq, lt0, lt0.Add(time.Hour))
	}
}

// TestLocalAnswersAfterAConfigChangeKeepTheNewGeneration fills the local answers with one
// generation, then remembers as many answers of the next generation under other keys (a config
// change that adds attributes to the keys, say): every new answer is held, the old ones gave way.
// Evicting at random lost about a third of the new ones again.
func TestLocalAnswersAfterAConfigChangeKeepTheNewGeneration(t *testing.T) {
	const size = 20000
	l := NewLocalAnswers(size)
	for i := range 3 * size {
		l.remember(keyOf("old"+strconv.Itoa(i)), gen(1), anyReq, lt0, lt0.Add(time.Hour))
	}
	// each shard holds size/shards: remember that many new answers in every shard
	perShard, shards := l.perShard, len(l.shards)
	var keys []*localKey
	counts := make(map[*localShard]int, shards)
	for i := 0; len(keys) < perShard*shards; i++ {
		k := keyOf("new" + strconv.Itoa(i))
		if s := l.shard(k); counts[s] < perShard {
			counts[s]++
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		l.remember(k, gen(2), anyReq, lt0, lt0.Add(time.Hour))
	}
	held := 0
	for _, k := range keys {
		if l.lookup(k, gen(2), anyReq, lt0) {
			held++
		}
	}
	assert.Equal(t, len(keys), held, "answers of the new generation evicted by each other")
}

// BenchmarkLocalKey is a steady-state request's local-answer key and lookup (a hit), single
// threaded: the plain homepage request, and the same carrying attr.plan and attr.build under a
// snapshot whose rules read both (make bench's run K; docs/PERFORMANCE.md, "Rules").
func BenchmarkLocalKey(b *testing.B) {
	plain := popup.Request{UID: "user-1234", Platform: popup.PlatformIOS, AppVersion: popup.Version{8, 10}, Region: "us", Lang: "en"}
	attrs := plain
	attrs.Attrs = rules.NewAttrs([]rules.Pair{{Key: "plan", Value: "pro"}, {Key: "build", Value: "9.2.0"}})
	for _, bc := range []struct {
		name     string
		req      popup.Request
		ruleKeys []string
	}{{"plain", plain, nil}, {"attrs", attrs, []string{"build", "plan"}}} {
		b.Run(bc.name, func(b *testing.B) {
			l := NewLocalAnswers(1000)
			var k localKey
			k.build(&bc.req, bc.ruleKeys)
			l.remember(&k, gen(1), anyReq, lt0, lt0.Add(time.Hour))
			b.ReportAllocs()
			cpu0 := testenv.ProcessCPU(b)
			for b.Loop() {
				var k localKey
				k.build(&bc.req, bc.ruleKeys)
				if !l.lookup(&k, gen(1), anyReq, lt0) {
					b.Fatal("miss")
				}
			}
			b.ReportMetric(float64(testenv.ProcessCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}
