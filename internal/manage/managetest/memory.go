// Package managetest is a test-only store of the write use case: Memory, an in-memory
// manage.Store, and Conformance, the tests every manage.Store passes (the memory one and
// mysqlstore's).
package managetest

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"popupsvc/internal/manage"
	"popupsvc/internal/popup"
)

// Memory is a manage.Store in memory: one transaction at a time, each on a copy of the state that
// replaces it only when the transaction succeeds. It stores popups as MySQL does (times at
// millisecond precision in UTC, live names unique up to trailing spaces) so that a rule's test
// here means the same over mysqlstore.
type Memory struct {
	mu    sync.Mutex
	state memState
	now   func() time.Time
}

type memState struct {
	popups    map[int64]popup.Popup
	revisions map[[2]int64]popup.Popup // by popup id and revision
	audit     []popup.Change
	version   int64
	lastID    int64
	audiences map[int64]bool  // the audiences that exist
	goals     map[string]bool // the goals that exist
}

// NewMemory returns an empty store whose rows take their times from now.
func NewMemory(now func() time.Time) *Memory {
	return &Memory{now: now, state: memState{popups: map[int64]popup.Popup{}, revisions: map[[2]int64]popup.Popup{}, audiences: map[int64]bool{}, goals: map[string]bool{}}}
}

// InTx runs fn on a copy of the state, which becomes the state when fn returns nil.
func (m *Memory) InTx(ctx context.Context, fn func(manage.Tx) error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	tx := &memTx{s: memState{popups: maps.Clone(m.state.popups), revisions: maps.Clone(m.state.revisions),
		audit: slices.Clone(m.state.audit), version: m.state.version, lastID: m.state.lastID, audiences: maps.Clone(m.state.audiences),
		goals: maps.Clone(m.state.goals)}, now: m.now}
	if err := fn(tx); err != nil {
		return err
	}
	m.state = tx.s
	return nil
}

// AddAudience makes an audience exist, as a popup write sees it (ExistingAudiences), and returns
// its id.
func (m *Memory) AddAudience() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	id := int64(len(m.state.audiences) + 1)
	m.state.audiences[id] = true
	return id
}

// AddGoal makes goal key exist, as a popup write sees it (GoalExists).
func (m *Memory) AddGoal(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.state.goals[key] = true
}

// Get returns popup id as stored.
func (m *Memory) Get(id int64) (popup.Popup, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.state.popups[id]
	return clone(p), ok
}

// Audit returns every recorded change, oldest first.
func (m *Memory) Audit() []popup.Change {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.state.audit)
}

// Version is the config version: how many transactions changed something.
func (m *Memory) Version() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.state.version
}

type memTx struct {
	s   memState
	now func() time.Time
}

func (t *memTx) GetForUpdate(_ context.Context, id int64) (popup.Popup, error) {
	p, ok := t.s.popups[id]
	if !ok {
		return popup.Popup{}, fmt.Errorf("popup %d: %w", id, popup.ErrNotFound)
	}
	return clone(p), nil
}

func (t *memTx) LockByName(_ context.Context, names []string) ([]*popup.Popup, error) {
	out := make([]*popup.Popup, len(names))
	for i, name := range names {
		if id, ok := t.liveName(name, 0); ok {
			p := clone(t.s.popups[id])
			out[i] = &p
		}
	}
	return out, nil
}

func (t *memTx) Revision(_ context.Context, id, rev int64) (popup.Popup, error) {
	p, ok := t.s.revisions[[2]int64{id, rev}]
	if !ok {
		return popup.Popup{}, popup.ErrRevisionNotKept
	}
	return clone(p), nil
}

func (t *memTx) Insert(_ context.Context, ps []popup.Popup) ([]popup.Popup, error) {
	out := make([]popup.Popup, len(ps))
	for i, p := range ps {
		t.s.lastID++
		now := t.rowTime()
		p.ID, p.Revision, p.CreatedAt, p.UpdatedAt = t.s.lastID, 1, now, now
		stored, err := t.put(p)
		if err != nil {
			return nil, err
		}
		out[i] = stored
	}
	return out, nil
}

func (t *memTx) Overwrite(_ context.Context, ps []popup.Popup, ifRevision []int64) ([]popup.Popup, error) {
	if len(ps) != 1 && ifRevision != nil {
		return nil, fmt.Errorf("a conditional overwrite is of one popup")
	}
	out := make([]popup.Popup, len(ps))
	for i, p := range ps {
		old, ok := t.s.popups[p.ID]
		switch {
		case !ok:
			return nil, fmt.Errorf("popup %d: %w", p.ID, popup.ErrNotFound)
		case ifRevision != nil && !slices.Contains(ifRevision, old.Revision):
			return nil, popup.ErrRevisionMismatch
		}
		p.Revision, p.CreatedAt, p.UpdatedAt = old.Revision+1, old.CreatedAt, t.rowTime()
		stored, err := t.put(p)
		if err != nil {
			return nil, err
		}
		out[i] = stored
	}
	return out, nil
}

func (t *memTx) Record(_ context.Context, changes []popup.Change) error {
	for _, c := range changes {
		t.s.revisions[[2]int64{c.After.ID, c.After.Revision}] = clone(c.After)
		t.s.audit = append(t.s.audit, c)
	}
	return nil
}

func (t *memTx) ExistingAudiences(_ context.Context, ids []int64) ([]int64, error) {
	var out []int64
	for _, id := range ids {
		if t.s.audiences[id] && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out, nil
}

func (t *memTx) GoalExists(_ context.Context, key string) (bool, error) {
	return t.s.goals[key], nil
}

func (t *memTx) BumpVersion(context.Context) error {
	t.s.version++
	return nil
}

// put stores p as MySQL keeps it, refusing a live name another live popup has.
func (t *memTx) put(p popup.Popup) (popup.Popup, error) {
	if p.Status != popup.StatusArchived {
		if _, taken := t.liveName(p.Name, p.ID); taken {
			return popup.Popup{}, fmt.Errorf("%w: %q", popup.ErrNameTaken, p.Name)
		}
	}
	for _, w := range []**time.Time{&p.StartAt, &p.EndAt} {
		if *w != nil {
			s := (*w).UTC().Truncate(time.Millisecond)
			*w = &s
		}
	}
	p.BucketSeed = p.RolloutSeed()
	p = clone(p)
	t.s.popups[p.ID] = p
	return clone(p), nil
}

// liveName finds the live popup named name (trailing spaces aside, as MySQL's index compares
// names), other than popup but.
func (t *memTx) liveName(name string, but int64) (int64, bool) {
	key := strings.TrimRight(name, " ")
	for id, p := range t.s.popups {
		if id != but && p.Status != popup.StatusArchived && strings.TrimRight(p.Name, " ") == key {
			return id, true
		}
	}
	return 0, false
}

func (t *memTx) rowTime() time.Time { return t.now().UTC().Truncate(time.Millisecond) }

// clone is a deep copy of p, so that nothing the store holds is shared with a caller.
func clone(p popup.Popup) popup.Popup {
	raw, err := json.Marshal(p)
	if err != nil {
		panic(fmt.Sprintf("managetest: copy popup %d: %v", p.ID, err))
	}
	var c popup.Popup
	if err := json.Unmarshal(raw, &c); err != nil {
		panic(fmt.Sprintf("managetest: copy popup %d: %v", p.ID, err))
	}
	return c
}
