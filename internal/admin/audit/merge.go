package audit

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"popupsvc/internal/changelog"
)

// The audit log of every resource at once (resource=all) is each resource's changes merged by
// time, newest first; changes made at the same instant come in the order of
// changelog.ChangeResources, and by id within one resource. Its cursor names the last change of a
// page: "<milliseconds since 1970>-<rank of its resource>-<its id>".

// cursor is a position in the merged log: the change at At of the resource of rank Rank and id
// ID.
type cursor struct {
	At   time.Time
	Rank int
	ID   int64
}

func (c cursor) String() string {
	return fmt.Sprintf("%d-%d-%d", c.At.UnixMilli(), c.Rank, c.ID)
}

func cursorOf(ch changelog.ResourceChange) cursor {
	return cursor{At: ch.At, Rank: ch.Resource.Rank(), ID: ch.ID}
}

// parseCursor reads a cursor of the merged log; false when s is not one.
func parseCursor(s string) (cursor, bool) {
	parts := strings.Split(s, "-")
	if len(parts) != 3 {
		return cursor{}, false
	}
	ms, err1 := strconv.ParseInt(parts[0], 10, 64)
	rank, err2 := strconv.Atoi(parts[1])
	id, err3 := strconv.ParseInt(parts[2], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || ms < 0 || rank < 0 || rank >= len(changelog.ChangeResources) || id <= 0 {
		return cursor{}, false
	}
	return cursor{At: time.UnixMilli(ms).UTC(), Rank: rank, ID: id}, true
}

// after narrows q, of the resource of rank rank, to the changes after c in the merged log (older
// ones, or those of the same instant that come later).
func (c cursor) after(q *changelog.ResourceChangeQuery, rank int) {
	q.Until = c.At
	switch {
	case rank < c.Rank: // its changes of c's instant came before c
		q.UntilID = 0
	case rank > c.Rank: // all of them come after c
		q.UntilID = math.MaxInt64
	default:
		q.UntilID = c.ID
	}
}

// compareMerged orders the merged log: newest first, then by resource, then by id, largest first.
func compareMerged(x, y changelog.ResourceChange) int {
	return cmp.Or(y.At.Compare(x.At), cmp.Compare(x.Resource.Rank(), y.Resource.Rank()), cmp.Compare(y.ID, x.ID))
}

// merge merges the pages of every resource (each newest first, limit+1 at most) into one page of
// at most limit changes and the cursor of the next page (nil: none).
func merge(pages [][]changelog.ResourceChange, limit int) ([]changelog.ResourceChange, *string) {
	var all []changelog.ResourceChange
	for _, p := range pages {
		all = append(all, p...)
	}
	slices.SortFunc(all, compareMerged)
	if len(all) <= limit {
		if all == nil {
			all = []changelog.ResourceChange{}
		}
		return all, nil
	}
	all = all[:limit]
	next := cursorOf(all[limit-1]).String()
	return all, &next
}
