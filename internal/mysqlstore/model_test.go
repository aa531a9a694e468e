package mysqlstore_test

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
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

// TestMigration7GivesExistingPopupsTheirIDAsBucketSeed: no user changes rollout bucket with the
// upgrade, and nothing else about the popups changes.
func TestMigration7GivesExistingPopupsTheirIDAsBucketSeed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openAt(t, 5)
	_, err := db.ExecContext(ctx, `INSERT INTO popup_config (id, name, status, targeting, content, revision, updated_at) VALUES
		(3, 'thirty', 'active', '{"rollout_percent":30}', '{"title":"t"}', 4, '2026-01-02 03:04:05.678'),
		(1234567, 'ten', 'paused', '{"rollout_percent":10}', '{}', 1, '2026-01-02 03:04:05.678')`)
	require.NoError(t, err)
	before := map[int64][]bool{}
	for _, id := range []int64{3, 1234567} {
		before[id] = inRollout(t, db, id, "") // keyed on the id, as before seeds
	}

	applied, err := mysqlstore.Migrate(ctx, db)
	require.NoError(t, err)
	assert.Contains(t, applied, int64(7))
	require.NoError(t, mysqlstore.CheckSchema(ctx, db))

	repo := newRepo(db)
	for _, id := range []int64{3, 1234567} {
		var seed string
		require.NoError(t, db.QueryRowContext(ctx, `SELECT bucket_seed FROM popup_config WHERE id = ?`, id).Scan(&seed))
		assert.Equal(t, strconv.FormatInt(id, 10), seed, "the stored seed is the decimal id")
		assert.Equal(t, before[id], inRollout(t, db, id, seed), "popup %d: every user keeps their bucket", id)
	}
	p, err := repo.Get(ctx, 3)
	require.NoError(t, err)
	assert.Equal(t, int64(4), p.Revision, "the migration is not a write of the popup")
	assert.Equal(t, time.Date(2026, 1, 2, 3, 4, 5, 678_000_000, time.UTC), p.UpdatedAt)
	assert.Equal(t, "t", p.Title)
}

// inRollout compiles popup id as stored, with seed (""= none), and says for 200 users whether each
// is in its rollout.
func inRollout(t *testing.T, db *sql.DB, id int64, seed string) []bool {
	t.Helper()
	var pct int
	require.NoError(t, db.QueryRowContext(context.Background(),
		`SELECT CAST(JSON_EXTRACT(targeting, '$.rollout_percent') AS INT) FROM popup_config WHERE id = ?`, id).Scan(&pct))
	c, err := popup.CompileWith(popup.Popup{ID: id, BucketSeed: seed, Name: "x", Status: popup.StatusActive,
		Targeting: popup.Targeting{RolloutPercent: pct}}, popup.LinkSchemes{})
	require.NoError(t, err)
	out := make([]bool, 200)
	n := 0
	for i := range out {
		out[i] = c.Match(popup.Request{UID: "user-" + strconv.Itoa(i), Platform: "ios"}) == popup.ReasonNone
		n += boolInt(out[i])
	}
	require.Greater(t, n, 0, "some users are in the rollout")
	require.Less(t, n, len(out), "some are not")
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestTheBucketSeedNeverChanges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := newRepo(testenv.MySQL(t))

	drawn, err := repo.Create(ctx, as("alice"), mustBuild(t, popup.Input{Name: "drawn"}))
	require.NoError(t, err)
	assert.Regexp(t, `^[0-9a-f]{16}$`, drawn.BucketSeed, "a create without a seed draws one")
	given, err := repo.Create(ctx, as("alice"), mustBuild(t, popup.Input{Name: "given", BucketSeed: "draft-seed"}))
	require.NoError(t, err)
	assert.Equal(t, "draft-seed", given.BucketSeed, "a create keeps the draft's seed")

	kept, _, err := repo.Update(ctx, as("bob"), given.ID, mustBuild(t, popup.Input{Name: "given", Creative: popup.Creative{Title: "new"}}), popup.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, "draft-seed", kept.BucketSeed, "an update without a seed keeps the stored one")
	_, _, err = repo.Update(ctx, as("bob"), given.ID, mustBuild(t, popup.Input{Name: "given", BucketSeed: "draft-seed", Creative: popup.Creative{Title: "newer"}}), popup.UpdateOptions{})
	require.NoError(t, err, "the same seed sent back")
	_, _, err = repo.Update(ctx, as("bob"), given.ID, mustBuild(t, popup.Input{Name: "given", BucketSeed: "other", Creative: popup.Creative{Title: "x"}}), popup.UpdateOptions{})
	require.ErrorIs(t, err, popup.ErrBucketSeedChanged)

	back, changed, err := repo.Rollback(ctx, as("bob"), given.ID, 1, popup.UpdateOptions{})
	require.NoError(t, err)
	assert.True(t, changed)
	assert.Equal(t, "draft-seed", back.BucketSeed)

	res, err := repo.Import(ctx, as("carol"), []popup.Popup{
		mustBuild(t, popup.Input{Name: "new one"}),
		mustBuild(t, popup.Input{Name: "given", Creative: popup.Creative{Title: "imported"}}),
	}, popup.ImportOptions{})
	require.NoError(t, err)
	assert.Equal(t, popup.ImportResult{Created: 1, Updated: 1}, res)
	got, err := repo.Get(ctx, given.ID)
	require.NoError(t, err)
	assert.Equal(t, "draft-seed", got.BucketSeed, "an import matching by name keeps the stored seed")

	_, err = repo.Import(ctx, as("carol"), []popup.Popup{
		mustBuild(t, popup.Input{Name: "drawn"}),
		mustBuild(t, popup.Input{Name: "given", BucketSeed: "moved"}),
	}, popup.ImportOptions{})
	var item *popup.BatchItemError
	require.ErrorAs(t, err, &item)
	assert.Equal(t, 1, item.Index)
	assert.ErrorIs(t, err, popup.ErrBucketSeedChanged)
}

// TestSavesThatChangeNothingWriteNothing is finding 10 of issue 22: no revision, no audit entry,
// no config version for an update or a rollback that leaves the popup as it is.
func TestSavesThatChangeNothingWriteNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := newRepo(testenv.MySQL(t))
	p, err := repo.Create(ctx, as("alice"), mustBuild(t, popup.Input{Name: "a", Creative: popup.Creative{Title: "t"}}))
	require.NoError(t, err)
	version, err := repo.Version(ctx)
	require.NoError(t, err)

	same, changed, err := repo.Update(ctx, as("bob"), p.ID, mustBuild(t, popup.Input{Name: "a", Creative: popup.Creative{Title: "t"}}), popup.UpdateOptions{IfRevision: []int64{1}})
	require.NoError(t, err)
	assert.False(t, changed)
	assert.Equal(t, p, same, "the stored popup, revision and times unchanged")
	_, _, err = repo.Update(ctx, as("bob"), p.ID, mustBuild(t, popup.Input{Name: "a", Creative: popup.Creative{Title: "t"}}), popup.UpdateOptions{IfRevision: []int64{7}})
	require.ErrorIs(t, err, popup.ErrRevisionMismatch, "a stale If-Match is refused even when nothing would change")
	same, changed, err = repo.Rollback(ctx, as("bob"), p.ID, 1, popup.UpdateOptions{})
	require.NoError(t, err)
	assert.False(t, changed, "rolling back to the content it has")
	assert.Equal(t, p, same)

	after, err := repo.Version(ctx)
	require.NoError(t, err)
	assert.Equal(t, version, after, "no config version")
	hist, err := repo.History(ctx, p.ID)
	require.NoError(t, err)
	assert.Len(t, hist, 1, "no revision")
	log, err := repo.Audit(ctx, changelog.AuditQuery{PopupID: p.ID, Limit: 10})
	require.NoError(t, err)
	assert.Len(t, log, 1, "no audit entry beyond the create")

	// A real change still writes.
	_, changed, err = repo.Update(ctx, as("bob"), p.ID, mustBuild(t, popup.Input{Name: "a", Creative: popup.Creative{Title: "u"}}), popup.UpdateOptions{IfRevision: []int64{1}})
	require.NoError(t, err)
	assert.True(t, changed)
}

func TestFindSortsPagesAndCounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.MySQL(t)
	repo := newRepo(db)
	// 25 popups, priorities in 3 ties, names in pairs that differ only in case, and two shared
	// updated_at values: every sort has ties across page boundaries.
	for i := range 25 {
		name := fmt.Sprintf("n%02d", i/2)
		if i%2 == 1 {
			name = fmt.Sprintf("N%02d", i/2)
		}
		_, err := repo.Create(ctx, as("alice"), mustBuild(t, popup.Input{Name: name, Priority: ptr(i % 3), Creative: popup.Creative{Title: "title " + strconv.Itoa(i)}}))
		require.NoError(t, err)
	}
	_, err := db.ExecContext(ctx, `UPDATE popup_config SET updated_at = IF(id % 2 = 0, '2026-01-01 00:00:00', '2026-02-01 00:00:00')`)
	require.NoError(t, err)

	for _, sort := range []string{"id", "-id", "updated_at", "-updated_at", "name", "-name", "priority", "-priority"} {
		t.Run(sort, func(t *testing.T) {
			s, ok := popuplist.ParseSort(sort)
			require.True(t, ok)
			all, err := repo.Find(ctx, popuplist.Query{Sort: s, Limit: 1000})
			require.NoError(t, err)
			require.Len(t, all.Popups, 25)
			var paged []int64
			q := popuplist.Query{Sort: s, Limit: 4}
			for {
				page, err := repo.Find(ctx, q)
				require.NoError(t, err)
				assert.Equal(t, 25, page.Total, "the total ignores the page")
				for _, p := range page.Popups {
					paged = append(paged, p.ID)
				}
				if len(page.Popups) < q.Limit {
					break
				}
				pos := popuplist.PositionOf(page.Popups[len(page.Popups)-1])
				q.After = &pos
			}
			want := make([]int64, len(all.Popups))
			for i, p := range all.Popups {
				want[i] = p.ID
			}
			assert.Equal(t, want, paged, "pages of 4 are the one list, no popup repeated or skipped")
			for i := 1; i < len(all.Popups); i++ {
				assert.LessOrEqual(t, 0, order(s, all.Popups[i-1], all.Popups[i]), "%d before %d", all.Popups[i-1].ID, all.Popups[i].ID)
			}
		})
	}
}

// order is >= 0 when a may come before b in sort s (ties by id in the same direction).
func order(s popuplist.Sort, a, b popup.Popup) int {
	var c int
	switch s.Key {
	case popuplist.SortByPriority:
		c = b.Priority - a.Priority
	case popuplist.SortByUpdatedAt:
		c = b.UpdatedAt.Compare(a.UpdatedAt)
	}
	if c == 0 {
		c = int(b.ID - a.ID)
	}
	if s.Desc {
		c = -c
	}
	return c
}

func TestFindSearchesAndFiltersByState(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := newRepo(testenv.MySQL(t))
	now := time.Now().UTC().Truncate(time.Millisecond)
	past, future, farPast := now.Add(-time.Hour), now.Add(time.Hour), now.Add(-2*time.Hour)
	ids := map[string]int64{}
	for _, in := range []popup.Input{
		{Name: "draft", Status: ptr(popup.StatusDraft), Creative: popup.Creative{Content: "Summer SALE inside"}},
		{Name: "scheduled", StartAt: &future, Creative: popup.Creative{Title: "Café"}},
		{Name: "running", StartAt: &past, EndAt: &future},
		{Name: "open", Creative: popup.Creative{Title: `100% "off"`}},
		{Name: "paused", Status: ptr(popup.StatusPaused)},
		{Name: "ended", StartAt: &farPast, EndAt: &past},
		{Name: "archived", Status: ptr(popup.StatusArchived)},
	} {
		p, err := repo.Create(ctx, as("alice"), mustBuild(t, in))
		require.NoError(t, err)
		ids[in.Name] = p.ID
	}
	names := func(q popuplist.Query) []string {
		t.Helper()
		q.Limit, q.Now = 100, now
		page, err := repo.Find(ctx, q)
		require.NoError(t, err)
		out := []string{}
		for _, p := range page.Popups {
			out = append(out, p.Name)
			assert.Equal(t, q.State == "" || p.StateAt(now) == q.State, true, p.Name)
		}
		assert.Equal(t, len(out), page.Total)
		return out
	}
	tests := []struct {
		name string
		give popuplist.Query
		want []string
	}{
		{name: "draft", give: popuplist.Query{State: popup.StateDraft}, want: []string{"draft"}},
		{name: "scheduled", give: popuplist.Query{State: popup.StateScheduled}, want: []string{"scheduled"}},
		{name: "running", give: popuplist.Query{State: popup.StateRunning}, want: []string{"running", "open"}},
		{name: "paused", give: popuplist.Query{State: popup.StatePaused}, want: []string{"paused"}},
		{name: "ended", give: popuplist.Query{State: popup.StateEnded}, want: []string{"ended"}},
		{name: "archived", give: popuplist.Query{State: popup.StateArchived}, want: []string{"archived"}},
		{name: "search in content, any case", give: popuplist.Query{Search: "sale"}, want: []string{"draft"}},
		{name: "search in title, accents", give: popuplist.Query{Search: "CAFÉ"}, want: []string{"scheduled"}},
		{name: "search with wildcards and quotes", give: popuplist.Query{Search: `0% "off`}, want: []string{"open"}},
		{name: "search in name", give: popuplist.Query{Search: "unn"}, want: []string{"running"}},
		{name: "search by id", give: popuplist.Query{Search: strconv.FormatInt(ids["paused"], 10)}, want: []string{"paused"}},
		{name: "search and state", give: popuplist.Query{Search: "e", State: popup.StateRunning}, want: []string{"open"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, names(tt.give))
		})
	}
}

func ptr[T any](v T) *T { return &v }
