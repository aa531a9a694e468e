package manage_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/manage"
	"popupsvc/internal/manage/managetest"
	"popupsvc/internal/popup"
)

var (
	ctx       = context.Background()
	t0        = time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	admin     = popup.Actor{Name: "ada", Role: popup.RoleAdmin}
	publisher = popup.Actor{Name: "pat", Role: popup.RolePublisher}
	editor    = popup.Actor{Name: "eve", Role: popup.RoleEditor}
	viewer    = popup.Actor{Name: "vic", Role: popup.RoleViewer}
)

func TestMemoryConformsToTheWriteStore(t *testing.T) {
	t.Parallel()
	managetest.Conformance(t, func(*testing.T) (manage.Store, func(*testing.T) int64) {
		m := managetest.NewMemory(func() time.Time { return t0 })
		return m, func(*testing.T) int64 { return m.AddAudience() }
	})
	managetest.PrimaryGoalConformance(t, func(*testing.T) (manage.Store, func(*testing.T, string)) {
		m := managetest.NewMemory(func() time.Time { return t0 })
		return m, func(_ *testing.T, key string) { m.AddGoal(key) }
	})
}

// fixture is a store holding a live popup (active, with a draft experiment, at revision 2: its
// revision 1 had the title "first") and a draft, written by an admin.
type fixture struct {
	mem         *managetest.Memory
	svc         *manage.Service
	live, draft popup.Popup
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	mem := managetest.NewMemory(func() time.Time { return t0 })
	svc := manage.New(mem, func() time.Time { return t0 })
	live, err := svc.Create(ctx, admin, withExperiment(build(t, popup.Input{Name: "live", Creative: popup.Creative{Title: "first"}})))
	require.NoError(t, err)
	live.Title = "second"
	live, changed, err := svc.Update(ctx, admin, live.ID, live, popup.UpdateOptions{})
	require.NoError(t, err)
	require.True(t, changed)
	draft, err := svc.Create(ctx, admin, build(t, popup.Input{Name: "draft", Status: ptr(popup.StatusDraft)}))
	require.NoError(t, err)
	return fixture{mem: mem, svc: svc, live: live, draft: draft}
}

func build(t *testing.T, in popup.Input) popup.Popup {
	t.Helper()
	p, err := in.BuildWith(popup.LinkSchemes{})
	require.NoError(t, err)
	return p
}

func withExperiment(p popup.Popup) popup.Popup {
	p.Experiment = &popup.Experiment{CoveragePercent: 100, Variants: []popup.Variant{{Key: "a", Weight: 50}, {Key: "b", Weight: 50}}}
	return p
}

func ptr[T any](v T) *T { return &v }

// write is one call of the service against the fixture, as actor, with ifRevision.
type write func(f fixture, actor popup.Actor, ifRevision []int64) error

var (
	saveLiveUnchanged write = func(f fixture, a popup.Actor, revs []int64) error {
		_, _, err := f.svc.Update(ctx, a, f.live.ID, f.live, popup.UpdateOptions{IfRevision: revs})
		return err
	}
	archiveLive write = func(f fixture, a popup.Actor, revs []int64) error {
		_, err := f.svc.Archive(ctx, a, f.live.ID, revs)
		return err
	}
	startLive write = func(f fixture, a popup.Actor, revs []int64) error {
		_, err := f.svc.Transition(ctx, a, f.live.ID, popup.ExperimentTransition{Action: popup.ChangeExperimentStart}, revs)
		return err
	}
	rollBackLive write = func(f fixture, a popup.Actor, revs []int64) error {
		_, _, err := f.svc.Rollback(ctx, a, f.live.ID, 1, popup.UpdateOptions{IfRevision: revs})
		return err
	}
	rollBackLiveToItself write = func(f fixture, a popup.Actor, revs []int64) error {
		_, _, err := f.svc.Rollback(ctx, a, f.live.ID, 2, popup.UpdateOptions{IfRevision: revs})
		return err
	}
)

func TestRoleBeforeIfMatchBeforeNoChange(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		give   write
		actor  popup.Actor
		revs   []int64
		want   error // nil: succeeds
		wantFn func(t *testing.T, err error)
	}{
		{name: "an unchanged save by an editor of a live popup, stale", give: saveLiveUnchanged, actor: editor, revs: []int64{9}, wantFn: forbidden},
		{name: "an unchanged save by a publisher, stale", give: saveLiveUnchanged, actor: publisher, revs: []int64{9}, want: popup.ErrRevisionMismatch},
		{name: "an unchanged save by a publisher, fresh", give: saveLiveUnchanged, actor: publisher, revs: []int64{2}},
		{name: "an archive by an editor, stale", give: archiveLive, actor: editor, revs: []int64{9}, wantFn: forbidden},
		{name: "an archive by a publisher, stale", give: archiveLive, actor: publisher, revs: []int64{9}, want: popup.ErrRevisionMismatch},
		{name: "an archive with an empty If-Match list", give: archiveLive, actor: publisher, revs: []int64{}, want: popup.ErrRevisionMismatch},
		{name: "a start by an editor of a live popup, stale", give: startLive, actor: editor, revs: []int64{9}, wantFn: forbidden},
		{name: "a start by a publisher, stale", give: startLive, actor: publisher, revs: []int64{9}, want: popup.ErrRevisionMismatch},
		{name: "a rollback by an editor, stale", give: rollBackLive, actor: editor, revs: []int64{9}, wantFn: forbidden},
		{name: "a rollback by a publisher, stale", give: rollBackLive, actor: publisher, revs: []int64{9}, want: popup.ErrRevisionMismatch},
		{name: "a rollback to the revision it is at by an editor", give: rollBackLiveToItself, actor: editor, wantFn: forbidden},
		{name: "a rollback to the revision it is at by a publisher", give: rollBackLiveToItself, actor: publisher},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			version := f.mem.Version()
			err := tt.give(f, tt.actor, tt.revs)
			switch {
			case tt.wantFn != nil:
				tt.wantFn(t, err)
			case tt.want != nil:
				assert.ErrorIs(t, err, tt.want)
			default:
				assert.NoError(t, err)
			}
			if tt.want != nil || tt.wantFn != nil {
				assert.Equal(t, version, f.mem.Version(), "a refused write bumps no version")
			}
		})
	}
}

func forbidden(t *testing.T, err error) {
	t.Helper()
	var fe *popup.ForbiddenError
	assert.ErrorAs(t, err, &fe)
}

func TestEveryWriteRecordsItsActionThroughThePath(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		give func(f fixture) (popup.Popup, error)
		want popup.ChangeKind
	}{
		{name: "update", want: popup.ChangeUpdate, give: func(f fixture) (popup.Popup, error) {
			p := f.live
			p.Title = "third"
			p, _, err := f.svc.Update(ctx, publisher, f.live.ID, p, popup.UpdateOptions{IfRevision: []int64{2}})
			return p, err
		}},
		{name: "archive", want: popup.ChangeArchive, give: func(f fixture) (popup.Popup, error) {
			return f.svc.Archive(ctx, publisher, f.live.ID, []int64{2})
		}},
		{name: "experiment start", want: popup.ChangeExperimentStart, give: func(f fixture) (popup.Popup, error) {
			return f.svc.Transition(ctx, publisher, f.live.ID, popup.ExperimentTransition{Action: popup.ChangeExperimentStart}, nil)
		}},
		{name: "rollback", want: popup.ChangeRollback, give: func(f fixture) (popup.Popup, error) {
			p, _, err := f.svc.Rollback(ctx, publisher, f.live.ID, 1, popup.UpdateOptions{IfRevision: []int64{2}})
			return p, err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			version := f.mem.Version()
			got, err := tt.give(f)
			require.NoError(t, err)
			assert.Equal(t, int64(3), got.Revision)
			assert.Equal(t, version+1, f.mem.Version())
			audit := f.mem.Audit()
			last := audit[len(audit)-1]
			assert.Equal(t, tt.want, last.Action)
			assert.Equal(t, publisher, last.Actor)
			require.NotNil(t, last.Before)
			assert.Equal(t, int64(2), last.Before.Revision)
			assert.Equal(t, got, last.After)
		})
	}
}

func TestTheWritesOfOneContent(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	archived, err := f.svc.Archive(ctx, publisher, f.live.ID, nil)
	require.NoError(t, err)
	assert.Equal(t, popup.StatusArchived, archived.Status)
	again, err := f.svc.Archive(ctx, publisher, f.live.ID, nil)
	require.NoError(t, err)
	assert.Equal(t, archived.Revision+1, again.Revision, "an archive always writes")

	back, changed, err := f.svc.Rollback(ctx, publisher, f.live.ID, 1, popup.UpdateOptions{})
	require.NoError(t, err)
	assert.True(t, changed)
	assert.Equal(t, popup.StatusActive, back.Status, "a rollback over an archive brings the popup back")
	assert.Equal(t, "first", back.Title)
	assert.Equal(t, f.live.BucketSeed, back.BucketSeed)

	version := f.mem.Version()
	same, changed, err := f.svc.Update(ctx, editor, f.draft.ID, f.draft, popup.UpdateOptions{})
	require.NoError(t, err)
	assert.False(t, changed, "an unchanged draft saved by an editor")
	assert.Equal(t, f.draft, same)
	assert.Equal(t, version, f.mem.Version(), "no change, no version")
}

func TestTheBucketSeedIsKept(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	assert.Len(t, f.live.BucketSeed, 16, "a create draws a seed")
	given, err := f.svc.Create(ctx, editor, build(t, popup.Input{Name: "given", Status: ptr(popup.StatusDraft), BucketSeed: "draft-seed"}))
	require.NoError(t, err)
	assert.Equal(t, "draft-seed", given.BucketSeed, "a create keeps the seed its draft previewed with")

	tests := []struct {
		name string
		seed string
		want error
	}{
		{name: "none sent", seed: ""},
		{name: "the stored one", seed: "draft-seed"},
		{name: "another one", seed: "other", want: popup.ErrBucketSeedChanged},
	}
	for _, tt := range tests {
		p := given
		p.BucketSeed, p.Title = tt.seed, "edit "+tt.name
		got, _, err := f.svc.Update(ctx, editor, given.ID, p, popup.UpdateOptions{})
		if tt.want != nil {
			assert.ErrorIs(t, err, tt.want, tt.name)
			continue
		}
		require.NoError(t, err, tt.name)
		assert.Equal(t, "draft-seed", got.BucketSeed, tt.name)
	}

	_, err = f.svc.Import(ctx, publisher, []popup.Popup{build(t, popup.Input{Name: "new"}), build(t, popup.Input{Name: "given", BucketSeed: "other"})}, popup.ImportOptions{DryRun: false})
	var item *popup.BatchItemError
	require.ErrorAs(t, err, &item)
	assert.Equal(t, 1, item.Index)
	assert.ErrorIs(t, err, popup.ErrBucketSeedChanged)
}

func TestExperimentPhaseRules(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	e := f.live.Experiment
	require.NotNil(t, e)
	assert.Equal(t, popup.ExperimentDraft, e.Status, "a new experiment is a draft")
	assert.Equal(t, 1, e.Phase)

	_, err := f.svc.Transition(ctx, publisher, f.draft.ID, popup.ExperimentTransition{Action: popup.ChangeExperimentStart}, nil)
	assert.ErrorIs(t, err, popup.ErrExperimentMissing)

	started, err := f.svc.Transition(ctx, publisher, f.live.ID, popup.ExperimentTransition{Action: popup.ChangeExperimentStart}, nil)
	require.NoError(t, err)
	require.NotNil(t, started.Experiment.PhaseStartedAt)
	assert.Equal(t, t0, *started.Experiment.PhaseStartedAt, "a phase starts on the service's clock")

	bare := started
	bare.Experiment = nil
	_, _, err = f.svc.Update(ctx, publisher, started.ID, bare, popup.UpdateOptions{})
	assert.ErrorIs(t, err, popup.ErrExperimentRunning)

	moved := withExperiment(started)
	moved.Experiment.Variants[0].Weight, moved.Experiment.Variants[1].Weight = 70, 30
	got, _, err := f.svc.Update(ctx, publisher, started.ID, moved, popup.UpdateOptions{AcceptReassignment: true})
	require.NoError(t, err)
	assert.Equal(t, 1, got.Experiment.Phase, "an accepted reassignment keeps the phase")
	audit := f.mem.Audit()
	assert.Equal(t, popup.ChangeReassign, audit[len(audit)-1].Action)

	moved.Experiment.Variants[0].Weight, moved.Experiment.Variants[1].Weight = 40, 60
	got, _, err = f.svc.Update(ctx, publisher, started.ID, moved, popup.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, 2, got.Experiment.Phase, "a change of the arms starts a new phase")

	concluded, err := f.svc.Transition(ctx, publisher, started.ID, popup.ExperimentTransition{Action: popup.ChangeExperimentConclude, Variant: "a"}, nil)
	require.NoError(t, err)
	assert.Equal(t, popup.ExperimentConcluded, concluded.Experiment.Status)
	_, err = f.svc.Transition(ctx, publisher, started.ID, popup.ExperimentTransition{Action: popup.ChangeExperimentStop}, nil)
	assert.ErrorIs(t, err, popup.ErrExperimentConcluded)
}

func TestRefusals(t *testing.T) {
	t.Parallel()
	const missing = 999
	tests := []struct {
		name string
		give func(f fixture) error
		want error
	}{
		{name: "a create under a live name", want: popup.ErrNameTaken, give: func(f fixture) error {
			_, err := f.svc.Create(ctx, publisher, build(t, popup.Input{Name: "live"}))
			return err
		}},
		{name: "an update to a live name", want: popup.ErrNameTaken, give: func(f fixture) error {
			p := f.draft
			p.Name = "live"
			_, _, err := f.svc.Update(ctx, publisher, p.ID, p, popup.UpdateOptions{})
			return err
		}},
		{name: "an update of a missing popup", want: popup.ErrNotFound, give: func(f fixture) error {
			_, _, err := f.svc.Update(ctx, publisher, missing, f.live, popup.UpdateOptions{IfRevision: []int64{9}})
			return err
		}},
		{name: "an archive of a missing popup", want: popup.ErrNotFound, give: func(f fixture) error {
			_, err := f.svc.Archive(ctx, publisher, missing, nil)
			return err
		}},
		{name: "a transition of a missing popup", want: popup.ErrNotFound, give: func(f fixture) error {
			_, err := f.svc.Transition(ctx, publisher, missing, popup.ExperimentTransition{Action: popup.ChangeExperimentStop}, nil)
			return err
		}},
		{name: "a rollback of a missing popup", want: popup.ErrNotFound, give: func(f fixture) error {
			_, _, err := f.svc.Rollback(ctx, publisher, missing, 1, popup.UpdateOptions{})
			return err
		}},
		{name: "a rollback to a revision never had", want: popup.ErrRevisionNotKept, give: func(f fixture) error {
			_, _, err := f.svc.Rollback(ctx, publisher, f.live.ID, 99, popup.UpdateOptions{})
			return err
		}},
		{name: "a rollback to a revision never had, stale", want: popup.ErrRevisionNotKept, give: func(f fixture) error {
			_, _, err := f.svc.Rollback(ctx, publisher, f.live.ID, 99, popup.UpdateOptions{IfRevision: []int64{9}})
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			version := f.mem.Version()
			assert.ErrorIs(t, tt.give(f), tt.want)
			assert.Equal(t, version, f.mem.Version())
		})
	}
}

func TestARollbackToARevisionNeverHadChecksTheRoleFirst(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	_, _, err := f.svc.Rollback(ctx, editor, f.live.ID, 99, popup.UpdateOptions{})
	forbidden(t, err)
}

func TestImport(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		actor       popup.Actor
		dryRun      bool
		give        []string // names; "live" matches the fixture's popup (with a new title)
		want        popup.ImportResult
		wantErr     func(t *testing.T, err error)
		wantVersion int64 // versions bumped
	}{
		{name: "creates and updates", actor: publisher, give: []string{"live", "new"}, want: popup.ImportResult{Created: 1, Updated: 1}, wantVersion: 1},
		{name: "a dry run writes nothing", actor: editor, dryRun: true, give: []string{"live", "new"}, want: popup.ImportResult{Created: 1, Updated: 1}},
		{name: "an editor may not import", actor: editor, give: []string{"new"}, wantErr: forbidden},
		{name: "nor import nothing", actor: editor, give: nil, wantErr: forbidden},
		{name: "a viewer may not dry-run", actor: viewer, dryRun: true, give: []string{"new"}, wantErr: forbidden},
		{name: "a name with trailing spaces matches", actor: publisher, give: []string{"live  "}, want: popup.ImportResult{Updated: 1}, wantVersion: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			version := f.mem.Version()
			ps := make([]popup.Popup, len(tt.give))
			for i, name := range tt.give {
				ps[i] = build(t, popup.Input{Name: name, Creative: popup.Creative{Title: "imported"}})
			}
			got, err := f.svc.Import(ctx, tt.actor, ps, popup.ImportOptions{DryRun: tt.dryRun})
			if tt.wantErr != nil {
				tt.wantErr(t, err)
			} else {
				require.NoError(t, err)
				assert.Equal(t, tt.want, got)
			}
			assert.Equal(t, version+tt.wantVersion, f.mem.Version())
		})
	}
}

func TestAnImportOfWhatIsStoredChangesNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	version := f.mem.Version()
	got, err := f.svc.Import(ctx, publisher, []popup.Popup{f.live, f.draft}, popup.ImportOptions{DryRun: false})
	require.NoError(t, err)
	assert.Equal(t, popup.ImportResult{Unchanged: 2}, got)
	assert.Equal(t, version, f.mem.Version())

	live, ok := f.mem.Get(f.live.ID)
	require.True(t, ok)
	assert.Equal(t, f.live, live)
}

func TestAnImportIsAuditedPopupByPopup(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	before := len(f.mem.Audit())
	changed := f.live
	changed.Title = "imported"
	_, err := f.svc.Import(ctx, publisher, []popup.Popup{build(t, popup.Input{Name: "new"}), changed, f.draft}, popup.ImportOptions{DryRun: false})
	require.NoError(t, err)

	audit := f.mem.Audit()[before:]
	require.Len(t, audit, 2, "the unchanged draft is not recorded")
	byName := map[string]popup.Change{}
	for _, c := range audit {
		assert.Equal(t, popup.ChangeImport, c.Action)
		assert.Equal(t, publisher, c.Actor)
		byName[c.After.Name] = c
	}
	assert.Nil(t, byName["new"].Before, "a created popup has no before")
	assert.Len(t, byName["new"].After.BucketSeed, 16, "and draws a seed")
	require.NotNil(t, byName["live"].Before)
	assert.Equal(t, f.live.Revision, byName["live"].Before.Revision)
	assert.Equal(t, f.live.Revision+1, byName["live"].After.Revision)
	assert.Equal(t, f.live.BucketSeed, byName["live"].After.BucketSeed)
}
