package snapshot

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/audience"
	"popupsvc/internal/popup"
)

// memAudiences is a unit-test source of audience versions: each version is the full member list.
// (mysqlstore.AudienceRepo is tested against MariaDB; this tests the loader's rules.)
type memAudiences struct {
	mu       sync.Mutex
	key      audience.Key
	versions map[int64][][]string // id → members of version 1, 2, ...
	down     bool
	loads    int
	deltas   int // loads that started from a held set
}

func (m *memAudiences) set(id int64, members ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.versions == nil {
		m.versions = map[int64][][]string{}
	}
	m.versions[id] = append(m.versions[id], members)
}

func (m *memAudiences) Versions(_ context.Context, ids []int64) (map[int64]int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return nil, errors.New("mysql down")
	}
	out := map[int64]int64{}
	for _, id := range ids {
		if vs, ok := m.versions[id]; ok {
			out[id] = int64(len(vs))
		}
	}
	return out, nil
}

func (m *memAudiences) LoadSet(_ context.Context, id int64, have *audience.Set) (*audience.Set, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return nil, errors.New("mysql down")
	}
	vs, ok := m.versions[id]
	if !ok {
		return nil, popup.ErrNotFound
	}
	m.loads++
	if have != nil {
		m.deltas++
	}
	members := vs[len(vs)-1]
	fps := make([]uint64, len(members))
	for i, u := range members {
		fps[i] = audience.Fingerprint(m.key, u)
	}
	return audience.NewSet(id, int64(len(vs)), m.key, audience.SortUnique(fps))
}

func newLoader(src AudienceSource) *AudienceLoader {
	return &AudienceLoader{Source: src, Memory: 1 << 30, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

func TestLoaderHoldsTheWantedAudiencesAtTheirNewestVersion(t *testing.T) {
	src := &memAudiences{}
	src.set(1, "a", "b")
	src.set(2, "c")
	l := newLoader(src)
	var told []*audience.Sets
	l.OnChange = func(s *audience.Sets) { told = append(told, s) }

	l.Want([]int64{1, 2, 3}) // 3 does not exist
	require.NoError(t, l.Sync(context.Background()))
	sets := l.Sets()
	require.Len(t, told, 1)
	assert.Equal(t, 2, sets.Len())
	assert.True(t, sets.Get(1).Contains("a"))
	assert.Nil(t, sets.Get(3))

	require.NoError(t, l.Sync(context.Background()))
	assert.Len(t, told, 1, "nothing changed: no new generation")

	src.set(1, "b", "z")
	require.NoError(t, l.Sync(context.Background()))
	require.Len(t, told, 2)
	next := l.Sets()
	assert.Greater(t, next.Gen, sets.Gen)
	assert.False(t, next.Get(1).Contains("a"))
	assert.True(t, next.Get(1).Contains("z"))
	assert.Same(t, sets.Get(2), next.Get(2), "an unchanged audience keeps its set")
	assert.True(t, sets.Get(1).Contains("a"), "the old generation is unchanged")
	assert.Equal(t, 1, src.deltas, "a new version starts from the held set")

	l.Want([]int64{2})
	require.NoError(t, l.Sync(context.Background()))
	assert.Nil(t, l.Sets().Get(1), "an audience no popup targets is dropped")
}

func TestLoaderKeepsServingWhatItHoldsWhenTheSourceFails(t *testing.T) {
	src := &memAudiences{}
	src.set(1, "a")
	l := newLoader(src)
	l.Want([]int64{1})
	require.NoError(t, l.Sync(context.Background()))
	held := l.Sets()

	src.set(1, "b")
	src.down = true
	assert.Error(t, l.Sync(context.Background()))
	assert.Same(t, held, l.Sets())
	assert.True(t, l.Sets().Get(1).Contains("a"))

	src.down = false
	require.NoError(t, l.Sync(context.Background()))
	assert.True(t, l.Sets().Get(1).Contains("b"))
}

func TestLoaderRefusesASetPastTheMemoryBound(t *testing.T) {
	src := &memAudiences{}
	src.set(1, "a", "b", "c")
	src.set(2, "d")
	l := newLoader(src)
	one, err := src.LoadSet(context.Background(), 2, nil)
	require.NoError(t, err)
	l.Memory = one.Bytes() // room for audience 2 only
	l.Want([]int64{1, 2})
	require.NoError(t, l.Sync(context.Background()))
	assert.Nil(t, l.Sets().Get(1))
	assert.NotNil(t, l.Sets().Get(2))
	assert.Equal(t, uint64(1), l.OverMemory.Load())
}

// TestSnapshotAnswersFailClosedUntilItsAudiencesAreLoaded: an include is "not a member" and an
// exclude "a member" until the set is held; then the rebuilt snapshot answers from the sets, and
// the refresher's rebuild publishes it under the same config version with a new Gen.
func TestSnapshotAnswersFailClosedUntilItsAudiencesAreLoaded(t *testing.T) {
	src := &memAudiences{}
	src.set(1, "vip")
	src.set(2, "churned")
	in := activePopup(10)
	in.Targeting.Audiences.Include = []int64{1}
	ex := activePopup(11)
	ex.Targeting.Audiences.Exclude = []int64{2}

	l := newLoader(src)
	holder := &Holder{}
	r := &Refresher{Holder: holder, Audiences: l, Now: fixedNow, Log: l.Log}
	l.OnChange = func(*audience.Sets) { r.Rebuild() }
	r.install(5, []popup.Popup{in, ex}, popup.Team{})

	s := holder.Load()
	assert.Len(t, s.Unbound(), 2)
	assert.Equal(t, popup.ReasonAudienceNotLoaded, s.Entry(10).Match(req("vip")))
	assert.Equal(t, popup.ReasonAudienceNotLoaded, s.Entry(11).Match(req("someone")))
	assert.Equal(t, []int64{1, 2}, AudienceIDs([]popup.Popup{in, ex}))
	assert.Equal(t, uint64(2), l.FailClosed())
	_, cands := popup.Explain(s.Ordered, req("vip"), nil, t0, popup.Pacing{})
	for _, c := range cands {
		assert.Equal(t, popup.ReasonAudienceNotLoaded, c.Reason)
		assert.Contains(t, []int64{1, 2}, c.Audience)
	}
	failed := l.FailClosed()
	assert.Equal(t, uint64(4), failed, "an explained check counts once, like a served one")

	require.NoError(t, l.Sync(context.Background()))
	s2 := holder.Load()
	assert.Equal(t, int64(5), s2.Version)
	assert.Greater(t, s2.Gen, s.Gen)
	assert.Empty(t, s2.Unbound())
	tests := []struct {
		popup int64
		uid   string
		want  popup.Reason
	}{
		{10, "vip", popup.ReasonNone},
		{10, "someone", popup.ReasonNotInAudience},
		{11, "someone", popup.ReasonNone},
		{11, "churned", popup.ReasonInExcludedAudience},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, s2.Entry(tt.popup).Match(req(tt.uid)), "popup %d uid %s", tt.popup, tt.uid)
	}
	assert.Equal(t, failed, l.FailClosed(), "answers from held sets are not fail-closed")
}

func req(uid string) popup.Request {
	return popup.Request{UID: uid, Platform: popup.PlatformIOS}
}

func fixedNow() time.Time { return t0 }

func activePopup(id int64) popup.Popup {
	return popup.Popup{ID: id, Name: "p" + strconv.FormatInt(id, 10), Status: popup.StatusActive, Targeting: popup.Targeting{RolloutPercent: 100}}
}

// heldBytes records what a loader tells its HeapBudget.
type heldBytes struct{ told []int64 }

func (h *heldBytes) Held(bytes int64) { h.told = append(h.told, bytes) }

// TestLoaderTellsItsBudgetTheBytesHeldAfterEverySync: the collector's limit follows the sets
// held, changed or not, dropped ones no longer counted.
func TestLoaderTellsItsBudgetTheBytesHeldAfterEverySync(t *testing.T) {
	src := &memAudiences{}
	src.set(1, "a", "b")
	src.set(2, "c")
	l := newLoader(src)
	budget := &heldBytes{}
	l.Budget = budget

	l.Want([]int64{1, 2})
	require.NoError(t, l.Sync(context.Background()))
	both := l.Sets().Get(1).Bytes() + l.Sets().Get(2).Bytes()
	require.NoError(t, l.Sync(context.Background()))
	l.Want([]int64{2})
	require.NoError(t, l.Sync(context.Background()))
	assert.Equal(t, []int64{both, both, l.Sets().Get(2).Bytes()}, budget.told)
}
