package mysqlstore_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/changelog"
	"popupsvc/internal/mysqlstore"
	"popupsvc/internal/popup"
	"popupsvc/internal/popuplist"
	"popupsvc/internal/testenv"
)

// experimentRepo is a repository on a database of its own whose clock stands at t0.
func experimentRepo(t *testing.T) (*writableRepo, time.Time) {
	t.Helper()
	t0 := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	repo := newRepo(testenv.MySQL(t))
	repo.Now = func() time.Time { return t0 }
	return repo, t0
}

// withExperiment is a popup named name (status active unless given) with a two-variant
// experiment and a control.
func withExperiment(t *testing.T, name string, status popup.Status) popup.Popup {
	t.Helper()
	return mustBuild(t, popup.Input{Name: name, Status: &status, Experiment: &popup.Experiment{
		Status: popup.ExperimentDraft, CoveragePercent: 100,
		Variants: []popup.Variant{
			{Key: "a", Weight: 40, Creative: popup.Creative{Title: "A"}},
			{Key: "b", Weight: 40, Creative: popup.Creative{Title: "B", Content: "b content", LinkURL: "https://example.com/b",
				Buttons: []popup.Button{{Text: "Go", LinkURL: "https://example.com/go"}}, Ext: json.RawMessage(`{"k":"b"}`)}},
		},
		Control: &popup.Control{Weight: 20, Mode: popup.ControlNone},
	}, Creative: popup.Creative{Title: "own"}})
}

func transition(action popup.ChangeKind) popup.ExperimentTransition {
	return popup.ExperimentTransition{Action: action}
}

// lastAction is the action of popup id's newest audit entry.
func lastAction(t *testing.T, repo *writableRepo, id int64) popup.ChangeKind {
	t.Helper()
	entries, err := repo.Audit(context.Background(), changelog.AuditQuery{PopupID: id, Limit: 1})
	require.NoError(t, err)
	require.Len(t, entries, 1)
	return entries[0].Action
}

func TestExperimentPhaseRulesOnUpdate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo, t0 := experimentRepo(t)
	p, err := repo.Create(ctx, as("alice"), withExperiment(t, "exp", popup.StatusActive))
	require.NoError(t, err)
	require.NotNil(t, p.Experiment)
	assert.Equal(t, popup.ExperimentDraft, p.Experiment.Status)
	assert.Equal(t, 1, p.Experiment.Phase)
	salt1 := p.Experiment.Salt
	p, err = repo.Transition(ctx, as("alice"), p.ID, transition(popup.ChangeExperimentStart), nil)
	require.NoError(t, err)
	assert.Equal(t, popup.ExperimentRunning, p.Experiment.Status)
	assert.Equal(t, t0, *p.Experiment.PhaseStartedAt)

	// Coverage only: the same phase, nobody moves.
	next := withExperiment(t, "exp", popup.StatusActive)
	next.Experiment.CoveragePercent = 50
	got, changed, err := repo.Update(ctx, as("alice"), p.ID, next, popup.UpdateOptions{})
	require.NoError(t, err)
	assert.True(t, changed)
	assert.Equal(t, 1, got.Experiment.Phase)
	assert.Equal(t, salt1, got.Experiment.Salt)
	assert.Equal(t, popup.ExperimentRunning, got.Experiment.Status, "the status is the stored one")
	assert.Equal(t, popup.ChangeUpdate, lastAction(t, repo, p.ID))

	// The same again: nothing written.
	same, changed, err := repo.Update(ctx, as("alice"), p.ID, next, popup.UpdateOptions{})
	require.NoError(t, err)
	assert.False(t, changed)
	assert.Equal(t, got.Revision, same.Revision)

	// Other weights accepted: the same phase and salt, audited as a reassign.
	next.Experiment.Variants[0].Weight, next.Experiment.Variants[1].Weight = 30, 50
	got, _, err = repo.Update(ctx, as("alice"), p.ID, next, popup.UpdateOptions{AcceptReassignment: true})
	require.NoError(t, err)
	assert.Equal(t, 1, got.Experiment.Phase)
	assert.Equal(t, salt1, got.Experiment.Salt)
	assert.Equal(t, 30, got.Experiment.Variants[0].Weight)
	assert.Equal(t, popup.ChangeReassign, lastAction(t, repo, p.ID))

	// Other weights not accepted: phase 2 with a new salt, starting now since it runs.
	next.Experiment.Variants[0].Weight, next.Experiment.Variants[1].Weight = 20, 60
	later := t0.Add(time.Hour)
	repo.Now = func() time.Time { return later }
	got, _, err = repo.Update(ctx, as("alice"), p.ID, next, popup.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, 2, got.Experiment.Phase)
	assert.NotEqual(t, salt1, got.Experiment.Salt)
	assert.Equal(t, later, *got.Experiment.PhaseStartedAt)
	assert.Equal(t, popup.ChangeUpdate, lastAction(t, repo, p.ID))

	// Server-managed fields sent back are not written.
	forged := withExperiment(t, "exp", popup.StatusActive)
	forged.Experiment = got.Experiment
	e := *got.Experiment
	e.Status, e.Phase, e.Salt, e.ConcludedVariant = popup.ExperimentConcluded, 9, "forged", "a"
	forged.Experiment = &e
	kept, _, err := repo.Update(ctx, as("alice"), p.ID, forged, popup.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, popup.ExperimentRunning, kept.Experiment.Status)
	assert.Equal(t, 2, kept.Experiment.Phase)
	assert.Equal(t, got.Experiment.Salt, kept.Experiment.Salt)
	assert.Empty(t, kept.Experiment.ConcludedVariant)

	// A running experiment cannot be removed.
	bare := mustBuild(t, popup.Input{Name: "exp", Creative: popup.Creative{Title: "own"}})
	_, _, err = repo.Update(ctx, as("alice"), p.ID, bare, popup.UpdateOptions{})
	require.ErrorIs(t, err, popup.ErrExperimentRunning)
	_, err = repo.Transition(ctx, as("alice"), p.ID, transition(popup.ChangeExperimentStop), nil)
	require.NoError(t, err)
	removed, _, err := repo.Update(ctx, as("alice"), p.ID, bare, popup.UpdateOptions{})
	require.NoError(t, err)
	assert.Nil(t, removed.Experiment, "a stopped one can")

	// A new experiment starts again at phase 1 with a fresh salt.
	again, _, err := repo.Update(ctx, as("alice"), p.ID, withExperiment(t, "exp", popup.StatusActive), popup.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, 1, again.Experiment.Phase)
	assert.Equal(t, popup.ExperimentDraft, again.Experiment.Status)
	assert.NotEqual(t, got.Experiment.Salt, again.Experiment.Salt)
}

func TestExperimentTransitions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo, _ := experimentRepo(t)
	bare, err := repo.Create(ctx, as("alice"), mustBuild(t, popup.Input{Name: "bare"}))
	require.NoError(t, err)
	_, err = repo.Transition(ctx, as("alice"), bare.ID, transition(popup.ChangeExperimentStart), nil)
	require.ErrorIs(t, err, popup.ErrExperimentMissing)
	_, err = repo.Transition(ctx, as("alice"), bare.ID+1000, transition(popup.ChangeExperimentStart), nil)
	require.ErrorIs(t, err, popup.ErrNotFound)

	p, err := repo.Create(ctx, as("alice"), withExperiment(t, "exp", popup.StatusActive))
	require.NoError(t, err)
	version, err := repo.Version(ctx)
	require.NoError(t, err)
	_, err = repo.Transition(ctx, as("alice"), p.ID, transition(popup.ChangeExperimentStop), nil)
	require.ErrorIs(t, err, popup.ErrExperimentState, "a draft does not stop")
	_, err = repo.Transition(ctx, as("alice"), p.ID, transition(popup.ChangeExperimentStart), []int64{p.Revision + 1})
	require.ErrorIs(t, err, popup.ErrRevisionMismatch)
	after, err := repo.Version(ctx)
	require.NoError(t, err)
	assert.Equal(t, version, after, "a refused transition writes nothing")

	started, err := repo.Transition(ctx, as("alice"), p.ID, transition(popup.ChangeExperimentStart), []int64{p.Revision})
	require.NoError(t, err)
	assert.Equal(t, p.Revision+1, started.Revision)
	assert.Equal(t, popup.ChangeExperimentStart, lastAction(t, repo, p.ID))
	after, err = repo.Version(ctx)
	require.NoError(t, err)
	assert.Greater(t, after, version, "a transition bumps the config version")

	_, err = repo.Transition(ctx, as("alice"), p.ID, popup.ExperimentTransition{Action: popup.ChangeExperimentConclude, Variant: "control"}, nil)
	require.ErrorIs(t, err, popup.ErrUnknownVariant)
	concluded, err := repo.Transition(ctx, as("alice"), p.ID, popup.ExperimentTransition{Action: popup.ChangeExperimentConclude, Variant: "b"}, nil)
	require.NoError(t, err)
	assert.Equal(t, popup.ChangeExperimentConclude, lastAction(t, repo, p.ID))
	assert.Equal(t, popup.ExperimentConcluded, concluded.Experiment.Status)
	assert.Equal(t, "b", concluded.Experiment.ConcludedVariant)
	assert.Equal(t, concluded.Experiment.Variants[1].Creative, concluded.Creative, "the variant's content became the popup's own")

	for _, a := range []popup.ChangeKind{popup.ChangeExperimentStart, popup.ChangeExperimentStop} {
		_, err = repo.Transition(ctx, as("alice"), p.ID, transition(a), nil)
		require.ErrorIs(t, err, popup.ErrExperimentConcluded, a)
	}
	// A concluded experiment cannot change, only go.
	edit := withExperiment(t, "exp", popup.StatusActive)
	edit.Creative = concluded.Creative
	edit.Experiment.CoveragePercent = 10
	_, _, err = repo.Update(ctx, as("alice"), p.ID, edit, popup.UpdateOptions{})
	require.ErrorIs(t, err, popup.ErrExperimentConcluded)
	edit.Experiment.CoveragePercent = 100
	_, changed, err := repo.Update(ctx, as("alice"), p.ID, edit, popup.UpdateOptions{})
	require.NoError(t, err)
	assert.False(t, changed, "sent back as it is: nothing to write")
}

func TestExperimentTransitionsNeedThePutsRole(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo, _ := experimentRepo(t)
	editor := popup.Actor{Name: "ed", Role: popup.RoleEditor}
	draft, err := repo.Create(ctx, editor, withExperiment(t, "draft", popup.StatusDraft))
	require.NoError(t, err)
	live, err := repo.Create(ctx, as("alice"), withExperiment(t, "live", popup.StatusActive))
	require.NoError(t, err)

	_, err = repo.Transition(ctx, editor, draft.ID, transition(popup.ChangeExperimentStart), nil)
	assert.NoError(t, err, "an editor edits a draft")
	_, err = repo.Transition(ctx, editor, live.ID, transition(popup.ChangeExperimentStart), []int64{99})
	var fe *popup.ForbiddenError
	require.ErrorAs(t, err, &fe, "the role comes before the revision")
	assert.Equal(t, popup.RolePublisher, fe.Needed)
	_, err = repo.Transition(ctx, popup.Actor{Name: "pat", Role: popup.RolePublisher}, live.ID, transition(popup.ChangeExperimentStart), nil)
	assert.NoError(t, err)
}

func TestHistoryAndRollbackRestoreAnExperiment(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo, _ := experimentRepo(t)
	p, err := repo.Create(ctx, as("alice"), withExperiment(t, "exp", popup.StatusActive))
	require.NoError(t, err)
	_, _, err = repo.Update(ctx, as("alice"), p.ID, mustBuild(t, popup.Input{Name: "exp", Creative: popup.Creative{Title: "own"}}), popup.UpdateOptions{})
	require.NoError(t, err)

	revs, err := repo.History(ctx, p.ID)
	require.NoError(t, err)
	require.Len(t, revs, 2)
	assert.Nil(t, revs[0].Popup.Experiment)
	assert.Equal(t, p.Experiment, revs[1].Popup.Experiment, "the revision holds the experiment")

	back, changed, err := repo.Rollback(ctx, as("alice"), p.ID, 1, popup.UpdateOptions{})
	require.NoError(t, err)
	assert.True(t, changed)
	require.NotNil(t, back.Experiment)
	assert.Equal(t, p.Experiment.Variants, back.Experiment.Variants)
	assert.Equal(t, p.Experiment.Control, back.Experiment.Control)
	assert.Equal(t, popup.ExperimentDraft, back.Experiment.Status)
	assert.Equal(t, 1, back.Experiment.Phase, "it comes back as a new experiment would")

	// Rolling back over a running experiment to a revision without one is refused.
	_, err = repo.Transition(ctx, as("alice"), p.ID, transition(popup.ChangeExperimentStart), nil)
	require.NoError(t, err)
	_, _, err = repo.Rollback(ctx, as("alice"), p.ID, 2, popup.UpdateOptions{})
	require.ErrorIs(t, err, popup.ErrExperimentRunning)
}

func TestImportAppliesTheExperimentRules(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo, _ := experimentRepo(t)
	p, err := repo.Create(ctx, as("alice"), withExperiment(t, "exp", popup.StatusActive))
	require.NoError(t, err)
	p, err = repo.Transition(ctx, as("alice"), p.ID, transition(popup.ChangeExperimentStart), nil)
	require.NoError(t, err)

	// Export and import back: unchanged.
	exported, err := repo.List(ctx, false)
	require.NoError(t, err)
	res, err := repo.Import(ctx, as("alice"), exported, popup.ImportOptions{DryRun: false})
	require.NoError(t, err)
	assert.Equal(t, popup.ImportResult{Unchanged: 1}, res)

	// New weights by import: a new phase, the status kept; a new popup's experiment is a draft.
	next := withExperiment(t, "exp", popup.StatusActive)
	next.Experiment.Variants[0].Weight, next.Experiment.Variants[1].Weight = 20, 60
	other := withExperiment(t, "other", popup.StatusActive)
	other.Experiment.Status, other.Experiment.Phase, other.Experiment.Salt = popup.ExperimentRunning, 5, "forged"
	res, err = repo.Import(ctx, as("alice"), []popup.Popup{next, other}, popup.ImportOptions{DryRun: false})
	require.NoError(t, err)
	assert.Equal(t, popup.ImportResult{Created: 1, Updated: 1}, res)
	all, err := repo.List(ctx, false)
	require.NoError(t, err)
	i := slices.IndexFunc(all, func(q popup.Popup) bool { return q.Name == "exp" })
	j := slices.IndexFunc(all, func(q popup.Popup) bool { return q.Name == "other" })
	assert.Equal(t, 2, all[i].Experiment.Phase)
	assert.Equal(t, popup.ExperimentRunning, all[i].Experiment.Status)
	assert.NotEqual(t, p.Experiment.Salt, all[i].Experiment.Salt)
	assert.Equal(t, popup.ExperimentDraft, all[j].Experiment.Status)
	assert.Equal(t, 1, all[j].Experiment.Phase)
	assert.NotEqual(t, "forged", all[j].Experiment.Salt)

	// Removing the running experiment by import is refused, naming the popup.
	_, err = repo.Import(ctx, as("alice"), []popup.Popup{mustBuild(t, popup.Input{Name: "other"}), mustBuild(t, popup.Input{Name: "exp"})}, popup.ImportOptions{DryRun: true})
	require.ErrorIs(t, err, popup.ErrExperimentRunning)
	var item *popup.BatchItemError
	require.ErrorAs(t, err, &item)
	assert.Equal(t, 1, item.Index)
}

func TestExperimentColumnKeepsItsKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.MySQL(t)
	repo := newRepo(db)
	p, err := repo.Create(ctx, as("alice"), withExperiment(t, "exp", popup.StatusActive))
	require.NoError(t, err)
	bare, err := repo.Create(ctx, as("alice"), mustBuild(t, popup.Input{Name: "bare"}))
	require.NoError(t, err)

	var raw []byte
	require.NoError(t, db.QueryRowContext(ctx, `SELECT experiment FROM popup_config WHERE id = ?`, p.ID).Scan(&raw))
	var doc map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &doc))
	assert.ElementsMatch(t, []string{"status", "coverage_percent", "variants", "control", "planned_end_at", "phase", "salt",
		"phase_started_at", "concluded_variant"}, keys(doc))
	var variants []map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(doc["variants"], &variants))
	assert.ElementsMatch(t, []string{"key", "weight", "title", "content", "image_url", "link_url", "buttons", "ext"}, keys(variants[0]))

	raw = []byte("x")
	require.NoError(t, db.QueryRowContext(ctx, `SELECT experiment FROM popup_config WHERE id = ?`, bare.ID).Scan(&raw))
	assert.Nil(t, raw, "no experiment is NULL")
}

func keys(m map[string]json.RawMessage) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestMigration9KeepsPopupsAndTheirHistory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openAt(t, 8)
	_, err := db.ExecContext(ctx, `INSERT INTO popup_config (id, name, bucket_seed, targeting, content) VALUES
		(7, 'old', 'seed-7', '{"rollout_percent":100}', '{"title":"t"}')`)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `INSERT INTO popup_revision (popup_id, revision, at, actor, popup) VALUES
		(7, 1, UTC_TIMESTAMP(3), 'alice', '{"id":7,"name":"old","bucket_seed":"seed-7","status":"active","targeting":{"rollout_percent":100},"content":{"title":"t"},"revision":1}')`)
	require.NoError(t, err)

	_, err = mysqlstore.Migrate(ctx, db)
	require.NoError(t, err)
	require.NoError(t, mysqlstore.CheckSchema(ctx, db))

	repo := newRepo(db)
	p, err := repo.Get(ctx, 7)
	require.NoError(t, err)
	assert.Equal(t, "t", p.Title)
	assert.Equal(t, "seed-7", p.BucketSeed)
	assert.Nil(t, p.Experiment, "a popup from before has no experiment")
	revs, err := repo.History(ctx, 7)
	require.NoError(t, err)
	require.Len(t, revs, 1)
	assert.Nil(t, revs[0].Popup.Experiment)

	// The popup takes an experiment now, and a rollback to the old revision removes it.
	next := withExperiment(t, "old", popup.StatusActive)
	next.Title = "t"
	got, _, err := repo.Update(ctx, as("alice"), 7, next, popup.UpdateOptions{})
	require.NoError(t, err)
	require.NotNil(t, got.Experiment)
	back, _, err := repo.Rollback(ctx, as("alice"), 7, 1, popup.UpdateOptions{})
	require.NoError(t, err)
	assert.Nil(t, back.Experiment)
}

// The list filters on the experiment's status (issue 41, 7): any, none, or one status.
func TestFindFiltersByExperiment(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo, _ := experimentRepo(t)
	_, err := repo.Create(ctx, as("alice"), mustBuild(t, popup.Input{Name: "plain"}))
	require.NoError(t, err)
	for _, name := range []string{"draft", "running", "stopped", "concluded"} {
		p, err := repo.Create(ctx, as("alice"), withExperiment(t, name, popup.StatusActive))
		require.NoError(t, err)
		steps := map[string][]popup.ExperimentTransition{
			"running":   {transition(popup.ChangeExperimentStart)},
			"stopped":   {transition(popup.ChangeExperimentStart), transition(popup.ChangeExperimentStop)},
			"concluded": {transition(popup.ChangeExperimentStart), {Action: popup.ChangeExperimentConclude, Variant: "b"}},
		}[name]
		for _, s := range steps {
			_, err := repo.Transition(ctx, as("alice"), p.ID, s, nil)
			require.NoError(t, err)
		}
	}
	tests := []struct {
		give popuplist.ExperimentFilter
		want []string
	}{
		{"", []string{"plain", "draft", "running", "stopped", "concluded"}},
		{popuplist.ExperimentAny, []string{"draft", "running", "stopped", "concluded"}},
		{popuplist.ExperimentNone, []string{"plain"}},
		{popuplist.ExperimentFilter(popup.ExperimentRunning), []string{"running"}},
		{popuplist.ExperimentFilter(popup.ExperimentConcluded), []string{"concluded"}},
		{popuplist.ExperimentFilter(popup.ExperimentDraft), []string{"draft"}},
	}
	for _, tt := range tests {
		t.Run(string(tt.give), func(t *testing.T) {
			page, err := repo.Find(ctx, popuplist.Query{Experiment: tt.give, Sort: popuplist.Sort{Key: popuplist.SortByID}, Limit: 100, Now: time.Now()})
			require.NoError(t, err)
			var got []string
			for _, p := range page.Popups {
				got = append(got, p.Name)
			}
			assert.Equal(t, tt.want, got)
			assert.Equal(t, len(tt.want), page.Total)
		})
	}
}
