package mysqlstore_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/audience"
	"popupsvc/internal/manage"
	"popupsvc/internal/mysqlstore"
	"popupsvc/internal/popup"
	"popupsvc/internal/testenv"
)

var audienceAdmin = popup.Actor{Name: "ada", Role: popup.RoleAdmin}

// audienceFixture is the audience repository with the audience writes over it, as popup-api
// wires them.
type audienceFixture struct {
	db   *sql.DB
	repo *mysqlstore.AudienceRepo
	svc  *manage.Audiences
}

func newAudienceFixture(t *testing.T) audienceFixture {
	t.Helper()
	dsn := testenv.MySQLDSN(t, true)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db, err := mysqlstore.Open(ctx, dsn, 8)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	stage, err := mysqlstore.NewStagingPool(dsn, nil)
	require.NoError(t, err)
	t.Cleanup(func() { stage.Close() })
	repo := mysqlstore.NewAudienceRepo(db).StageThrough(stage)
	return audienceFixture{db: db, repo: repo, svc: manage.NewAudiences(audienceStore{repo}, nil, 1<<30, time.Now)}
}

// The staging pool's connections speak binary, so that MySQL stores a staged row as the bytes
// sent instead of scanning it as utf8mb4 text first (NewStagingPool), and its one connection
// serves statement after statement.
func TestTheStagingPoolSpeaksBinary(t *testing.T) {
	t.Parallel()
	stage, err := mysqlstore.NewStagingPool(testenv.MySQLDSN(t, false), nil)
	require.NoError(t, err)
	t.Cleanup(func() { stage.Close() })
	for range 2 {
		var client, conn string
		require.NoError(t, stage.QueryRow(`SELECT @@character_set_client, @@character_set_connection`).Scan(&client, &conn))
		assert.Equal(t, "binary", client)
		assert.Equal(t, "binary", conn)
	}
	assert.Equal(t, 1, stage.Stats().MaxOpenConnections)
}

func (f audienceFixture) write(t *testing.T, id int64, action popup.AudienceAction, uids ...string) popup.MemberWrite {
	t.Helper()
	w, err := f.svc.WriteMembers(context.Background(), audienceAdmin, id, action, nil, uidLines(uids))
	require.NoError(t, err)
	return w
}

func (f audienceFixture) count(t *testing.T, q string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, f.db.QueryRowContext(context.Background(), q, args...).Scan(&n))
	return n
}

func uids(prefix string, from, to int) []string {
	out := make([]string, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("%s%d", prefix, i))
	}
	return out
}

// LoadSet gives the same set whether it starts from nothing or from a set held at any version
// since the base, and reads the base afresh from a set held before it.
func TestLoadSetWithAndWithoutASetHeld(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newAudienceFixture(t)
	a, err := f.svc.Create(ctx, audienceAdmin, popup.AudienceMeta{Name: "a"})
	require.NoError(t, err)
	other, err := f.svc.Create(ctx, audienceAdmin, popup.AudienceMeta{Name: "other"})
	require.NoError(t, err)
	f.write(t, other.ID, popup.AudienceReplace, "o1")

	held := map[int64]*audience.Set{}
	hold := func() {
		s, err := f.repo.LoadSet(ctx, a.ID, nil)
		require.NoError(t, err)
		held[s.Version()] = s
	}
	hold() // version 1: the empty list of the create
	f.write(t, a.ID, popup.AudienceReplace, uids("u", 0, 300_000)...)
	hold()
	f.write(t, a.ID, popup.AudienceAdd, uids("u", 250_000, 400_000)...)
	hold()
	f.write(t, a.ID, popup.AudienceRemove, uids("u", 0, 1000)...)
	hold()
	_, _, err = f.svc.Update(ctx, audienceAdmin, a.ID, popup.AudienceMeta{Name: "renamed"}, nil)
	require.NoError(t, err)
	hold()
	w := f.write(t, a.ID, popup.AudienceAdd, "u5", "x1")
	assert.Equal(t, int64(2), w.Added, "u5 was removed, x1 never a member")

	want, err := f.repo.LoadSet(ctx, a.ID, nil)
	require.NoError(t, err)
	assert.Equal(t, 400_000-1000+2, want.Len())
	assert.Equal(t, w.Audience.Version, want.Version())
	assert.Equal(t, w.Audience.Size, int64(want.Len()))
	for v, have := range held {
		got, err := f.repo.LoadSet(ctx, a.ID, have)
		require.NoError(t, err, "from version %d", v)
		assert.Equal(t, want.Version(), got.Version(), "from version %d", v)
		assert.Equal(t, want.Fingerprints(), got.Fingerprints(), "from version %d", v)
	}
	same, err := f.repo.LoadSet(ctx, a.ID, want)
	require.NoError(t, err)
	assert.Same(t, want, same, "a set at the current version is kept")
	for uid, member := range map[string]bool{"u5": true, "u999": false, "u1000": true, "u399999": true, "x1": true, "o1": false} {
		assert.Equal(t, member, want.Contains(uid), uid)
	}

	wrong, err := f.repo.LoadSet(ctx, other.ID, nil)
	require.NoError(t, err)
	got, err := f.repo.LoadSet(ctx, a.ID, wrong)
	require.NoError(t, err)
	assert.Equal(t, want.Fingerprints(), got.Fingerprints(), "another audience's set is no start")

	// A replace moves the base: a set held from before it is read afresh, and the superseded
	// uploads are gone.
	f.write(t, a.ID, popup.AudienceReplace, "z1", "z2")
	got, err = f.repo.LoadSet(ctx, a.ID, held[3])
	require.NoError(t, err)
	assert.Equal(t, 2, got.Len())
	assert.True(t, got.Contains("z2"))
	assert.Equal(t, 1, f.count(t, `SELECT COUNT(*) FROM audience_uploads WHERE audience_id = ?`, a.ID), "only the base's upload is kept")
	assert.Equal(t, 1, f.count(t, `SELECT COUNT(DISTINCT upload_id) FROM audience_fps`)-1, "the other audience's and the new base's fps rows")

	versions, err := f.repo.Versions(ctx, []int64{a.ID, other.ID, 1 << 40})
	require.NoError(t, err)
	assert.Equal(t, map[int64]int64{a.ID: got.Version(), other.ID: 2}, versions)

	_, err = f.repo.LoadSet(ctx, 1<<40, nil)
	assert.ErrorIs(t, err, popup.ErrAudienceNotFound)
}

// A replace of 300,000 members is stored as runs of sorted fingerprints, 128 KiB a row, never a
// row a member, and no row of fingerprints or uids past what the driver writes without a copy
// (StageRowBytes, under its 256 KiB buffer); a refused upload leaves no staged rows.
func TestAudienceStorageShape(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newAudienceFixture(t)
	a, err := f.svc.Create(ctx, audienceAdmin, popup.AudienceMeta{Name: "a"})
	require.NoError(t, err)
	f.write(t, a.ID, popup.AudienceReplace, uids("member-", 0, 300_000)...)
	assert.Equal(t, 19, f.count(t, `SELECT COUNT(*) FROM audience_fps`), "300,000 fingerprints in rows of 16,384")
	assert.Equal(t, 300_000*8, f.count(t, `SELECT SUM(LENGTH(fps)) FROM audience_fps`))
	assert.Equal(t, mysqlstore.StageRowBytes, f.count(t, `SELECT MAX(LENGTH(fps)) FROM audience_fps`))
	assert.Equal(t, 32, f.count(t, `SELECT COUNT(*) FROM audience_uids`), "3.9 MB of uids in rows of about 128 KiB")
	assert.Less(t, f.count(t, `SELECT MAX(LENGTH(uids)) FROM audience_uids`), mysqlstore.StageRowBytes+128)

	_, err = f.svc.WriteMembers(ctx, audienceAdmin, a.ID, popup.AudienceAdd, nil,
		uidLines(append(uids("new-", 0, 200_000), "bad uid")))
	var bad *popup.InvalidMembersError
	require.ErrorAs(t, err, &bad)
	assert.Equal(t, 1, f.count(t, `SELECT COUNT(*) FROM audience_uploads`), "the refused upload is dropped")
	assert.Equal(t, 19, f.count(t, `SELECT COUNT(*) FROM audience_fps`))
	assert.Equal(t, 32, f.count(t, `SELECT COUNT(*) FROM audience_uids`))

	_, err = f.svc.Delete(ctx, audienceAdmin, a.ID, nil)
	require.NoError(t, err)
	for _, table := range []string{"audiences", "audience_uploads", "audience_fps", "audience_uids"} {
		assert.Zero(t, f.count(t, `SELECT COUNT(*) FROM `+table), table)
	}
	assert.Equal(t, 3, f.count(t, `SELECT COUNT(*) FROM audience_changes`), "create, replace, delete: the history stays")
}

// uidLines is an upload of uids, one a line (the admin API reads text/plain and text/csv bodies
// into a popup.MemberLines).
func uidLines(uids []string) popup.MemberLines { return &sliceLines{uids: uids} }

type sliceLines struct {
	uids []string
	i    int
}

func (l *sliceLines) Next() ([]byte, int, error) {
	if l.i == len(l.uids) {
		return nil, 0, io.EOF
	}
	l.i++
	return []byte(l.uids[l.i-1]), l.i, nil
}
