package managetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/manage"
	"popupsvc/internal/popup"
)

// Conformance runs the tests every manage.Store passes, each on a store of its own from open
// (empty, with migrations applied): what the write path relies on beyond its own rules. open
// also gives a way to make an audience exist in that store (the store's own audience write).
func Conformance(t *testing.T, open func(t *testing.T) (manage.Store, func(t *testing.T) int64)) {
	t.Helper()
	t.Run("the audiences that exist are found, the others not", func(t *testing.T) {
		t.Parallel()
		s, addAudience := open(t)
		a, b := addAudience(t), addAudience(t)
		inTx(t, s, func(tx manage.Tx) error {
			found, err := tx.ExistingAudiences(ctx, []int64{b, 1 << 40, a, b})
			assert.Equal(t, []int64{min(a, b), max(a, b)}, found, "sorted, each once")
			return err
		})
		inTx(t, s, func(tx manage.Tx) error {
			found, err := tx.ExistingAudiences(ctx, nil)
			assert.Empty(t, found)
			return err
		})
	})
	tests := []struct {
		name string
		run  func(t *testing.T, s manage.Store)
	}{
		{"insert assigns an id and revision 1, overwrite increments it", insertThenOverwrite},
		{"a revision is kept once recorded", revisionsKept},
		{"a missing popup is not found", missingPopup},
		{"an overwrite keeps its revision condition", overwriteCondition},
		{"live names are unique, trailing spaces aside", liveNames},
		{"a batch is stored and returned in order", batchOrder},
		{"a failed transaction leaves nothing", failedTxRollsBack},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, _ := open(t)
			tt.run(t, s)
		})
	}
}

var ctx = context.Background()

// build is a valid popup named name.
func build(t *testing.T, name string) popup.Popup {
	t.Helper()
	p, err := popup.Input{Name: name}.BuildWith(popup.LinkSchemes{})
	require.NoError(t, err)
	p.BucketSeed = "conformance"
	return p
}

// inTx runs fn in a transaction of s that must succeed.
func inTx(t *testing.T, s manage.Store, fn func(tx manage.Tx) error) {
	t.Helper()
	require.NoError(t, s.InTx(ctx, fn))
}

// insert stores ps in one transaction and returns them as stored.
func insert(t *testing.T, s manage.Store, ps ...popup.Popup) []popup.Popup {
	t.Helper()
	var out []popup.Popup
	inTx(t, s, func(tx manage.Tx) (err error) {
		out, err = tx.Insert(ctx, ps)
		return err
	})
	return out
}

func insertThenOverwrite(t *testing.T, s manage.Store) {
	p := build(t, "a")
	start := time.Date(2026, 3, 1, 8, 0, 0, 123_456_789, time.FixedZone("x", 3600))
	p.StartAt = &start
	stored := insert(t, s, p)[0]
	assert.Positive(t, stored.ID)
	assert.Equal(t, int64(1), stored.Revision)
	require.NotNil(t, stored.StartAt)
	assert.Equal(t, start.UTC().Truncate(time.Millisecond), *stored.StartAt, "window times are kept at millisecond precision")

	next := stored
	next.Title = "changed"
	var written popup.Popup
	inTx(t, s, func(tx manage.Tx) error {
		ps, err := tx.Overwrite(ctx, []popup.Popup{next}, nil)
		if err == nil {
			written = ps[0]
		}
		return err
	})
	assert.Equal(t, stored.ID, written.ID)
	assert.Equal(t, int64(2), written.Revision)
	assert.Equal(t, "changed", written.Title)
	assert.Equal(t, stored.CreatedAt, written.CreatedAt)
	inTx(t, s, func(tx manage.Tx) error {
		got, err := tx.GetForUpdate(ctx, stored.ID)
		assert.Equal(t, written, got)
		return err
	})
}

func revisionsKept(t *testing.T, s manage.Store) {
	stored := insert(t, s, build(t, "a"))[0]
	inTx(t, s, func(tx manage.Tx) error {
		return tx.Record(ctx, []popup.Change{{Actor: popup.Actor{Name: "alice", Role: popup.RoleEditor}, Action: popup.ChangeCreate, After: stored}})
	})
	inTx(t, s, func(tx manage.Tx) error {
		got, err := tx.Revision(ctx, stored.ID, 1)
		require.NoError(t, err)
		assert.Equal(t, stored.Name, got.Name)
		assert.Equal(t, stored.BucketSeed, got.BucketSeed)
		_, err = tx.Revision(ctx, stored.ID, 2)
		assert.ErrorIs(t, err, popup.ErrRevisionNotKept)
		return nil
	})
}

func missingPopup(t *testing.T, s manage.Store) {
	inTx(t, s, func(tx manage.Tx) error {
		_, err := tx.GetForUpdate(ctx, 4242)
		assert.ErrorIs(t, err, popup.ErrNotFound)
		return nil
	})
	p := build(t, "ghost")
	p.ID = 4242
	err := s.InTx(ctx, func(tx manage.Tx) error {
		_, err := tx.Overwrite(ctx, []popup.Popup{p}, []int64{1})
		return err
	})
	assert.ErrorIs(t, err, popup.ErrNotFound)
}

func overwriteCondition(t *testing.T, s manage.Store) {
	stored := insert(t, s, build(t, "a"))[0]
	tests := []struct {
		name string
		give []int64
		want error
	}{
		{name: "another revision", give: []int64{7}, want: popup.ErrRevisionMismatch},
		{name: "an empty list matches none", give: []int64{}, want: popup.ErrRevisionMismatch},
		{name: "one of the listed", give: []int64{7, 1}},
	}
	for _, tt := range tests {
		err := s.InTx(ctx, func(tx manage.Tx) error {
			_, err := tx.Overwrite(ctx, []popup.Popup{stored}, tt.give)
			return err
		})
		if tt.want == nil {
			assert.NoError(t, err, tt.name)
		} else {
			assert.ErrorIs(t, err, tt.want, tt.name)
		}
	}
}

func liveNames(t *testing.T, s manage.Store) {
	a := insert(t, s, build(t, "a"))[0]
	err := s.InTx(ctx, func(tx manage.Tx) error {
		_, err := tx.Insert(ctx, []popup.Popup{build(t, "a  ")})
		return err
	})
	assert.ErrorIs(t, err, popup.ErrNameTaken, "a name with trailing spaces is the same name")
	b := insert(t, s, build(t, "A"))[0]
	assert.NotEqual(t, a.ID, b.ID, "names differing in case are two names")

	archived := a
	archived.Status = popup.StatusArchived
	inTx(t, s, func(tx manage.Tx) error {
		_, err := tx.Overwrite(ctx, []popup.Popup{archived}, nil)
		return err
	})
	again := insert(t, s, build(t, "a"))[0]
	inTx(t, s, func(tx manage.Tx) error {
		got, err := tx.LockByName(ctx, []string{"a  ", "A", "none"})
		require.NoError(t, err)
		require.Len(t, got, 3)
		require.NotNil(t, got[0])
		assert.Equal(t, again.ID, got[0].ID, "the live popup, not the archived one")
		require.NotNil(t, got[1])
		assert.Equal(t, b.ID, got[1].ID)
		assert.Nil(t, got[2])
		return nil
	})
}

func batchOrder(t *testing.T, s manage.Store) {
	stored := insert(t, s, build(t, "c"), build(t, "a"), build(t, "b"))
	require.Len(t, stored, 3)
	for i, name := range []string{"c", "a", "b"} {
		assert.Equal(t, name, stored[i].Name)
		stored[i].Title = "t-" + name
	}
	stored[0], stored[2] = stored[2], stored[0]
	var written []popup.Popup
	inTx(t, s, func(tx manage.Tx) (err error) {
		written, err = tx.Overwrite(ctx, stored, nil)
		return err
	})
	require.Len(t, written, 3)
	for i, name := range []string{"b", "a", "c"} {
		assert.Equal(t, name, written[i].Name)
		assert.Equal(t, "t-"+name, written[i].Title)
		assert.Equal(t, int64(2), written[i].Revision)
	}
}

func failedTxRollsBack(t *testing.T, s manage.Store) {
	boom := errors.New("boom")
	err := s.InTx(ctx, func(tx manage.Tx) error {
		if _, err := tx.Insert(ctx, []popup.Popup{build(t, "a")}); err != nil {
			return err
		}
		return boom
	})
	require.ErrorIs(t, err, boom)
	inTx(t, s, func(tx manage.Tx) error {
		got, err := tx.LockByName(ctx, []string{"a"})
		assert.Nil(t, got[0], "the insert was rolled back")
		return err
	})
}

// PrimaryGoalConformance runs, over a store of its own from open (empty, migrated; addGoal makes
// a goal exist in it), the rule that no write changes an experiment's primary goal unless it
// names it (docs/CONTRACT.md §10): an update or an import whose experiment has no primary_goal
// key keeps the stored one, and so does a rollback to a revision without one; null (a named "")
// removes it, and a named goal sets it.
func PrimaryGoalConformance(t *testing.T, open func(t *testing.T) (manage.Store, func(t *testing.T, key string))) {
	t.Helper()
	t.Run("no write changes the primary goal unless it names it", func(t *testing.T) {
		t.Parallel()
		s, addGoal := open(t)
		addGoal(t, "purchase")
		addGoal(t, "signup")
		now := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
		svc := manage.New(s, func() time.Time { return now })
		admin := popup.Actor{Name: "ada", Role: popup.RoleAdmin}
		p := build(t, "goal-kept")
		p.Experiment = &popup.Experiment{CoveragePercent: 100, PrimaryGoal: "purchase",
			Variants: []popup.Variant{{Key: "a", Weight: 50}, {Key: "b", Weight: 50}}}
		created, err := svc.Create(ctx, admin, p) // revision 1: purchase
		require.NoError(t, err)
		goal := func(p popup.Popup) string {
			t.Helper()
			require.NotNil(t, p.Experiment)
			return p.Experiment.PrimaryGoal
		}
		// edit is what a client that does not know primary_goal sends: the stored popup with
		// another field changed and no primary goal.
		edit := func(p popup.Popup, maxImpressions int) popup.Popup {
			p.MaxImpressions = maxImpressions
			e := *p.Experiment
			e.PrimaryGoal = ""
			p.Experiment = &e
			return p
		}

		got, changed, err := svc.Update(ctx, admin, created.ID, edit(created, 3), popup.UpdateOptions{KeepPrimaryGoal: true}) // revision 2
		require.NoError(t, err)
		assert.True(t, changed)
		assert.Equal(t, "purchase", goal(got), "an update that does not name the goal keeps it")

		got, changed, err = svc.Update(ctx, admin, created.ID, edit(got, 3), popup.UpdateOptions{KeepPrimaryGoal: true})
		require.NoError(t, err)
		assert.False(t, changed, "keeping the goal is no change")
		assert.Equal(t, "purchase", goal(got))

		got, _, err = svc.Update(ctx, admin, created.ID, edit(got, 4), popup.UpdateOptions{}) // revision 3: none
		require.NoError(t, err)
		assert.Empty(t, goal(got), "an update naming null removes it")

		named := edit(got, 4)
		named.Experiment.PrimaryGoal = "signup"
		got, _, err = svc.Update(ctx, admin, created.ID, named, popup.UpdateOptions{}) // revision 4: signup
		require.NoError(t, err)
		assert.Equal(t, "signup", goal(got), "an update naming a goal sets it")

		got, _, err = svc.Rollback(ctx, admin, created.ID, 3, popup.UpdateOptions{}) // revision 5
		require.NoError(t, err)
		assert.Equal(t, 4, got.MaxImpressions, "the rollback restored revision 3")
		assert.Equal(t, "signup", goal(got), "a rollback to a revision without a goal keeps the stored one")

		got, _, err = svc.Rollback(ctx, admin, created.ID, 1, popup.UpdateOptions{}) // revision 6
		require.NoError(t, err)
		assert.Equal(t, "purchase", goal(got), "a rollback to a revision that names a goal sets it")

		_, err = svc.Import(ctx, admin, []popup.Popup{edit(got, 7)}, popup.ImportOptions{KeepPrimaryGoal: []bool{true}})
		require.NoError(t, err)
		got = reread(t, s, created.ID)
		assert.Equal(t, 7, got.MaxImpressions, "the import was written")
		assert.Equal(t, "purchase", goal(got), "an import that does not name the goal keeps it")

		_, err = svc.Import(ctx, admin, []popup.Popup{edit(got, 7)}, popup.ImportOptions{})
		require.NoError(t, err)
		assert.Empty(t, goal(reread(t, s, created.ID)), "an import naming null removes it")
	})
}

// reread is popup id as s holds it.
func reread(t *testing.T, s manage.Store, id int64) popup.Popup {
	t.Helper()
	var p popup.Popup
	inTx(t, s, func(tx manage.Tx) (err error) {
		p, err = tx.GetForUpdate(ctx, id)
		return err
	})
	return p
}
