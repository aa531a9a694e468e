package decide_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/audience"
	"popupsvc/internal/decide"
	"popupsvc/internal/popup"
)

// audienceSet is audience id's set at version holding uids.
func audienceSet(t *testing.T, id, version int64, uids ...string) *audience.Set {
	t.Helper()
	key := audience.Key{byte(id)}
	fps := make([]uint64, len(uids))
	for i, uid := range uids {
		fps[i] = audience.Fingerprint(key, uid)
	}
	s, err := audience.NewSet(id, version, key, audience.SortUnique(fps))
	require.NoError(t, err)
	return s
}

// TestLocalAnswersAcrossNewAudienceSets: new audience sets under the same config end a
// remembered "nothing" only when they change the user's membership in an audience a popup of
// the request's placement targets; a config version that changes a popup ends it whatever the
// sets.
func TestLocalAnswersAcrossNewAudienceSets(t *testing.T) {
	t.Parallel()
	// Popup 1 (the homepage) shows to members of audience 1 outside audience 3: u1 is in both,
	// so nothing shows to u1 (popup 9, seen, is why u1's request reads the store at all). Popup
	// 2 shows on another placement to the members of audience 2.
	popups := []popup.Popup{
		active(1, func(p *popup.Popup) {
			p.Targeting.Audiences = popup.AudienceRefs{Include: []int64{1}, Exclude: []int64{3}}
		}),
		active(2, func(p *popup.Popup) {
			p.Targeting.Placements = []string{"checkout"}
			p.Targeting.Audiences = popup.AudienceRefs{Include: []int64{2}}
		}),
		hidden,
	}
	sets := func(t *testing.T, gen uint64, m map[int64][]string) *audience.Sets {
		held := map[int64]*audience.Set{}
		for id, uids := range m {
			held[id] = audienceSet(t, id, int64(gen), uids...)
		}
		return audience.NewSets(gen, held, nil)
	}
	before := map[int64][]string{1: {"u1", "u2"}, 2: {"u2"}, 3: {"u1"}}
	withoutU1 := map[int64][]string{1: {"u1", "u2"}, 2: {"u2"}, 3: {"u4"}}
	tests := []struct {
		name     string
		version  int64              // of the second snapshot
		retitle  bool               // whether it changes popup 1's title
		after    map[int64][]string // its sets, by audience id
		wantRead bool
		wantID   int64
	}{
		{"an audience no popup of the placement targets: held", 1, false, map[int64][]string{1: {"u1", "u2"}, 2: {"u1", "u2"}, 3: {"u1"}}, false, 0},
		{"a targeted audience, the user still a member: held", 1, false, map[int64][]string{1: {"u1", "u3"}, 2: {"u2"}, 3: {"u1"}}, false, 0},
		{"a targeted exclusion, the user still out of it: held", 1, false, map[int64][]string{1: {"u1", "u2"}, 2: {"u2"}, 3: {"u1", "u4"}}, false, 0},
		{"a targeted exclusion that lets the user go: dropped, shows", 1, false, withoutU1, true, 1},
		{"a targeted inclusion that drops the user: dropped", 1, false, map[int64][]string{1: {"u2"}, 2: {"u2"}, 3: {"u1"}}, true, 0},
		{"a targeted audience no longer held: dropped", 1, false, map[int64][]string{1: {"u1", "u2"}, 2: {"u2"}}, true, 0},
		// An audience's new members bump the config version, popups unchanged, to be announced.
		{"a config version of the same popups, the same members: held", 2, false, before, false, 0},
		{"a config version of the same popups, the user out of the exclusion: dropped, shows", 2, false, withoutU1, true, 1},
		{"a config version that changes a popup, the same members: dropped", 2, true, before, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, 1000, popup.Pacing{}, hidden)
			f.publishOn(t, 1, sets(t, 1, before), popups...)
			f.store.set("u1", withHidden(popup.UserState{}))
			kind, _, read := f.decide(t, iosReq, t0)
			require.Equal(t, decide.None, kind)
			require.True(t, read)
			_, _, read = f.decide(t, iosReq, t0.Add(time.Second))
			require.False(t, read, "remembered")

			next := popups
			if tt.retitle {
				next = append([]popup.Popup(nil), popups...)
				next[0].Creative.Title = "new title"
			}
			f.publishOn(t, tt.version, sets(t, 2, tt.after), next...)
			kind, id, read := f.decide(t, iosReq, t0.Add(2*time.Second))
			assert.Equal(t, tt.wantRead, read, "store read")
			assert.Equal(t, tt.wantID, id)
			if tt.wantID == 0 {
				assert.Equal(t, decide.None, kind)
				_, _, read = f.decide(t, iosReq, t0.Add(3*time.Second))
				assert.False(t, read, "remembered under the new sets")
			}
		})
	}
}
