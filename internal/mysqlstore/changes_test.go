package mysqlstore_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/changelog"
	"popupsvc/internal/mysqlstore"
	"popupsvc/internal/popup"
	"popupsvc/internal/testenv"
)

func TestMigration4UpgradesAVersion2DatabaseHoldingData(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openAt(t, 2)
	// Two live popups share a name (allowed before), a third is archived under it too.
	_, err := db.ExecContext(ctx, `INSERT INTO popup_config (name, status, priority, start_at, targeting, content, revision) VALUES
		('sale', 'active', 5, '2026-12-01 00:00:00.250', '{"platforms":["ios"],"rollout_percent":50}', '{"title":"T \\"1\\"","content":"c","buttons":[],"ext":{"k":1}}', 3),
		('sale', 'paused', 0, NULL, '{}', '{"title":"two"}', 1),
		('sale', 'archived', 0, NULL, '{}', '{}', 2),
		('other', 'draft', 0, NULL, '{}', '{}', 1)`)
	require.NoError(t, err)

	require.NoError(t, mysqlstore.MigrateTo(ctx, db, 4))
	// The repository reads the latest schema (migration 00007 added a column to popup_config).
	_, err = mysqlstore.Migrate(ctx, db)
	require.NoError(t, err)
	repo := newRepo(db)
	all, err := repo.List(ctx, true)
	require.NoError(t, err)
	var names []string
	for _, p := range all {
		names = append(names, p.Name)
	}
	assert.Equal(t, []string{"sale", "sale (#2)", "sale", "other"}, names, "the younger live namesake is renamed; archived ones keep their name")

	// Each existing popup's history starts with its current state, by "(migration)" (read on the
	// latest schema, which the history's reads and every write need).
	_, err = mysqlstore.Migrate(ctx, db)
	require.NoError(t, err)
	hist, err := repo.History(ctx, 1)
	require.NoError(t, err)
	require.Len(t, hist, 1)
	assert.Equal(t, int64(3), hist[0].Revision)
	assert.Equal(t, "(migration)", hist[0].Actor)
	want := all[0]
	assert.Equal(t, want, hist[0].Popup, "the revision holds the whole popup (its bucket seed, the id, from the row)")
	assert.Equal(t, `T "1"`, hist[0].Popup.Title)
	assert.Equal(t, 50, hist[0].Popup.Targeting.RolloutPercent)
	require.NotNil(t, hist[0].Popup.StartAt)
	assert.Equal(t, int64(250), hist[0].Popup.StartAt.UnixMilli()%1000)

	// A rollback to the migrated revision works; the audit log starts at the first write.
	log, err := repo.Audit(ctx, changelog.AuditQuery{Limit: 10})
	require.NoError(t, err)
	assert.Empty(t, log)
	_, _, err = repo.Update(ctx, as("alice"), 1, mustBuild(t, popup.Input{Name: "sale", Creative: popup.Creative{Title: "new"}}), popup.UpdateOptions{})
	require.NoError(t, err)
	back, _, err := repo.Rollback(ctx, as("alice"), 1, 3, popup.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, `T "1"`, back.Title)
	assert.Equal(t, int64(5), back.Revision)

	// Live names are unique from now on.
	_, err = repo.Create(ctx, as("alice"), mustBuild(t, popup.Input{Name: "other"}))
	require.ErrorIs(t, err, popup.ErrNameTaken)
	_, err = repo.Create(ctx, as("alice"), mustBuild(t, popup.Input{Name: "Other"}))
	require.NoError(t, err, "names compare byte for byte")
	require.NoError(t, mysqlstore.CheckSchema(ctx, db))
}

func mustBuild(t *testing.T, in popup.Input) popup.Popup {
	t.Helper()
	p, err := in.BuildWith(popup.LinkSchemes{})
	require.NoError(t, err)
	return p
}

func TestEveryWriteRecordsARevisionAndAnAuditEntry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := newRepo(testenv.MySQL(t))
	p, err := repo.Create(ctx, as("alice"), mustBuild(t, popup.Input{Name: "a"}))
	require.NoError(t, err)
	_, _, err = repo.Update(ctx, as("bob"), p.ID, mustBuild(t, popup.Input{Name: "a", Creative: popup.Creative{Title: "t"}}), popup.UpdateOptions{IfRevision: []int64{1}})
	require.NoError(t, err)
	_, _, err = repo.Update(ctx, as("bob"), p.ID, mustBuild(t, popup.Input{Name: "a", Creative: popup.Creative{Title: "stale"}}), popup.UpdateOptions{IfRevision: []int64{1}})
	require.ErrorIs(t, err, popup.ErrRevisionMismatch)
	_, err = repo.Archive(ctx, as("carol"), p.ID, nil)
	require.NoError(t, err)
	_, _, err = repo.Rollback(ctx, as("carol"), p.ID, 9, popup.UpdateOptions{})
	require.ErrorIs(t, err, popup.ErrRevisionNotKept)

	hist, err := repo.History(ctx, p.ID)
	require.NoError(t, err)
	var revs []int64
	for _, h := range hist {
		revs = append(revs, h.Revision)
	}
	assert.Equal(t, []int64{3, 2, 1}, revs)
	log, err := repo.Audit(ctx, changelog.AuditQuery{PopupID: p.ID, Limit: 10})
	require.NoError(t, err)
	require.Len(t, log, 3, "failed writes leave no entry")
	assert.Equal(t, popup.ChangeArchive, log[0].Action)
	assert.Equal(t, "carol", log[0].Actor)
	assert.Equal(t, popup.StatusArchived, log[0].After.Status)
	assert.Equal(t, "t", log[0].Before.Title)
	assert.Nil(t, log[2].Before)
	page, err := repo.Audit(ctx, changelog.AuditQuery{Actor: "bob", Before: log[0].ID, Limit: 10})
	require.NoError(t, err)
	require.Len(t, page, 1)
	assert.Equal(t, popup.ChangeUpdate, page[0].Action)
}

func TestImportMatchesNamesAsTheUniqueIndexDoes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := newRepo(testenv.MySQL(t))
	_, err := repo.Create(ctx, as("alice"), mustBuild(t, popup.Input{Name: "a"}))
	require.NoError(t, err)
	res, err := repo.Import(ctx, as("bob"), []popup.Popup{mustBuild(t, popup.Input{Name: "a  "}), mustBuild(t, popup.Input{Name: "A"})}, popup.ImportOptions{DryRun: false})
	require.NoError(t, err)
	assert.Equal(t, popup.ImportResult{Created: 1, Unchanged: 1}, res, `"a  " is "a" to the index (trailing spaces pad); "A" is another name`)
	res, err = repo.Import(ctx, as("bob"), []popup.Popup{mustBuild(t, popup.Input{Name: "a  ", Creative: popup.Creative{Title: "t"}})}, popup.ImportOptions{DryRun: false})
	require.NoError(t, err)
	assert.Equal(t, popup.ImportResult{Updated: 1}, res)
	all, err := repo.List(ctx, false)
	require.NoError(t, err)
	require.Len(t, all, 2)
	assert.Equal(t, "a", all[0].Name, "an import does not rename")
	assert.Equal(t, "t", all[0].Title)
}

var draftStatus = popup.StatusDraft

// as is an operator of role admin, for tests of writes whose rights are not the point.
func as(name string) popup.Actor { return popup.Actor{Name: name, Role: popup.RoleAdmin} }

func TestMigration6KeepsEntriesWrittenBeforeRolesWithoutARole(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openAt(t, 5)
	_, err := db.ExecContext(ctx, `INSERT INTO popup_config (name, status, targeting, content) VALUES ('old', 'draft', '{}', '{}')`)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `INSERT INTO popup_revision (popup_id, revision, at, actor, popup)
		SELECT id, 1, updated_at, 'alice', '{"id":1,"name":"old","status":"draft","targeting":{},"content":{}}' FROM popup_config`)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `INSERT INTO popup_audit (at, actor, action, popup_id, revision, after_state)
		VALUES (UTC_TIMESTAMP(3), 'alice', 'create', 1, 1, '{"id":1,"name":"old","status":"draft","targeting":{},"content":{}}')`)
	require.NoError(t, err)

	applied, err := mysqlstore.Migrate(ctx, db)
	require.NoError(t, err)
	assert.Contains(t, applied, int64(6))
	require.NoError(t, mysqlstore.CheckSchema(ctx, db))

	repo := newRepo(db)
	_, _, err = repo.Update(ctx, popup.Actor{Name: "ed", Role: popup.RoleEditor}, 1, mustBuild(t, popup.Input{Name: "old", Status: &draftStatus, Creative: popup.Creative{Title: "t"}}), popup.UpdateOptions{})
	require.NoError(t, err)
	hist, err := repo.History(ctx, 1)
	require.NoError(t, err)
	require.Len(t, hist, 2)
	assert.Equal(t, []string{"ed", "alice"}, []string{hist[0].Actor, hist[1].Actor})
	assert.Equal(t, []popup.Role{popup.RoleEditor, 0}, []popup.Role{hist[0].Role, hist[1].Role}, "the old revision has no role")
	log, err := repo.Audit(ctx, changelog.AuditQuery{Limit: 10})
	require.NoError(t, err)
	require.Len(t, log, 2, "the old entry is kept")
	assert.Equal(t, []popup.Role{popup.RoleEditor, 0}, []popup.Role{log[0].Role, log[1].Role})
	assert.Equal(t, "alice", log[1].Actor)
}

// TestTheRoleCheckReadsTheStoredStatusInTheWrite: an editor who read a draft and saves it as a
// draft after a publisher published it is refused (the stored status is read with the row
// locked, in the write's transaction), and a refused write records nothing.
func TestTheRoleCheckReadsTheStoredStatusInTheWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.MySQL(t)
	repo := newRepo(db)
	editor := popup.Actor{Name: "ed", Role: popup.RoleEditor}
	publisher := popup.Actor{Name: "pat", Role: popup.RolePublisher}
	draft := mustBuild(t, popup.Input{Name: "d", Status: &draftStatus})

	p, err := repo.Create(ctx, editor, draft)
	require.NoError(t, err)
	live := draft
	live.Status = popup.StatusActive
	_, _, err = repo.Update(ctx, publisher, p.ID, live, popup.UpdateOptions{})
	require.NoError(t, err)
	before, err := repo.Get(ctx, p.ID)
	require.NoError(t, err)

	edit := draft
	edit.Title = "the editor's edit of what was a draft"
	_, _, err = repo.Update(ctx, editor, p.ID, edit, popup.UpdateOptions{})
	var fe *popup.ForbiddenError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, popup.RolePublisher, fe.Needed)
	assert.Equal(t, "changing a popup that is active needs the publisher role; ed is an editor", fe.Error())

	tests := []struct {
		name  string
		write func() error
	}{
		{"create an active popup", func() error { _, err := repo.Create(ctx, editor, live); return err }},
		{"archive", func() error { _, err := repo.Archive(ctx, editor, p.ID, nil); return err }},
		{"roll back", func() error { _, _, err := repo.Rollback(ctx, editor, p.ID, 1, popup.UpdateOptions{}); return err }},
		{"roll back to a revision never had", func() error { _, _, err := repo.Rollback(ctx, editor, p.ID, 99, popup.UpdateOptions{}); return err }},
		// A write that would change nothing is refused all the same: the role check comes
		// before the no-op shortcut.
		{"save the active popup unchanged", func() error { _, _, err := repo.Update(ctx, editor, p.ID, live, popup.UpdateOptions{}); return err }},
		{"roll back to the revision it is at", func() error { _, _, err := repo.Rollback(ctx, editor, p.ID, 2, popup.UpdateOptions{}); return err }},
		{"import", func() error {
			_, err := repo.Import(ctx, editor, []popup.Popup{draft}, popup.ImportOptions{})
			return err
		}},
	}
	for _, tt := range tests {
		require.ErrorAs(t, tt.write(), &fe, tt.name)
		assert.Equal(t, popup.RolePublisher, fe.Needed, tt.name)
	}
	res, err := repo.Import(ctx, editor, []popup.Popup{draft, mustBuild(t, popup.Input{Name: "new"})}, popup.ImportOptions{DryRun: true})
	require.NoError(t, err, "an editor may dry-run an import")
	assert.Equal(t, popup.ImportResult{Created: 1, Updated: 1}, res)

	after, err := repo.Get(ctx, p.ID)
	require.NoError(t, err)
	assert.Equal(t, before, after, "refused writes change nothing")
	log, err := repo.Audit(ctx, changelog.AuditQuery{Limit: 10})
	require.NoError(t, err)
	assert.Len(t, log, 2, "refused writes are not audited")
	var n int
	require.NoError(t, db.QueryRowContext(ctx, `SELECT COUNT(*) FROM popup_revision`).Scan(&n))
	assert.Equal(t, 2, n)
	require.NoError(t, db.QueryRowContext(ctx, `SELECT COUNT(*) FROM popup_config`).Scan(&n))
	assert.Equal(t, 1, n)
}
