package audit

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/changelog"
)

func TestCursorsReadBackAndRefuseWhatIsNotOne(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 1, 9, 30, 0, 120e6, time.UTC)
	c := cursor{At: at, Rank: 2, ID: 41}
	assert.Equal(t, "1796117400120-2-41", c.String())
	got, ok := parseCursor(c.String())
	require.True(t, ok)
	assert.Equal(t, c, got)
	for _, bad := range []string{"", "41", "1-2", "1-2-3-4", "x-2-41", "1-8-41", "1--1-41", "1-2-0", "-1-2-41", "1-2-x"} {
		_, ok := parseCursor(bad)
		assert.False(t, ok, bad)
	}
}

// TestTheMergedLogIsNewestFirstThenByResourceThenByID: changes of one instant come in the order
// of the resources, and a cursor resumes right after the change it names.
func TestTheMergedLogIsNewestFirstThenByResourceThenByID(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	ch := func(r changelog.ChangeResource, id int64, sec int) changelog.ResourceChange {
		return changelog.ResourceChange{Resource: r, ID: id, At: t0.Add(time.Duration(sec) * time.Second)}
	}
	goals := []changelog.ResourceChange{ch(changelog.ChangeGoals, 9, 5), ch(changelog.ChangeGoals, 8, 5), ch(changelog.ChangeGoals, 7, 1)}
	popups := []changelog.ResourceChange{ch(changelog.ChangePopups, 30, 5), ch(changelog.ChangePopups, 20, 3)}
	privacy := []changelog.ResourceChange{ch(changelog.ChangePrivacy, 2, 7)}
	page, next := merge([][]changelog.ResourceChange{goals, popups, privacy}, 4)
	assert.Equal(t, []changelog.ResourceChange{privacy[0], popups[0], goals[0], goals[1]}, page)
	require.NotNil(t, next)
	cur, ok := parseCursor(*next)
	require.True(t, ok)
	assert.Equal(t, cursor{At: goals[1].At, Rank: changelog.ChangeGoals.Rank(), ID: 8}, cur)

	page, next = merge([][]changelog.ResourceChange{goals[2:], popups[1:]}, 4)
	assert.Equal(t, []changelog.ResourceChange{popups[1], goals[2]}, page)
	assert.Nil(t, next)
	page, _ = merge(nil, 4)
	assert.NotNil(t, page, "an empty page is a list")

	for _, tc := range []struct {
		r    changelog.ChangeResource
		want int64
	}{{changelog.ChangePopups, 0}, {changelog.ChangeGoals, 8}, {changelog.ChangePrivacy, math.MaxInt64}} {
		var q changelog.ResourceChangeQuery
		cur.after(&q, tc.r.Rank())
		assert.Equal(t, []any{cur.At, tc.want}, []any{q.Until, q.UntilID}, tc.r)
	}
}
