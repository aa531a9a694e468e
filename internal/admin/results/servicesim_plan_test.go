package results_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/popup"
)

// The plan of the simulations through the service (servicesim_test.go): pure, so checked here
// without the service.

func TestServiceSimPlanByWeights(t *testing.T) {
	tests := []struct {
		name    string
		users   int
		weights []int
		want    []int
	}{
		{name: "exact thirds of 5,000 at 34/33/33", users: 5_000, weights: []int{34, 33, 33}, want: []int{1700, 1650, 1650}},
		{name: "halves", users: 3_000, weights: []int{50, 50}, want: []int{1500, 1500}},
		{name: "the remainder to the largest fraction", users: 10, weights: []int{34, 33, 33}, want: []int{4, 3, 3}},
		{name: "equal fractions: the first ones", users: 8, weights: []int{1, 1, 1}, want: []int{3, 3, 2}},
		{name: "a 10% holdout", users: 1_003, weights: []int{10, 90}, want: []int{100, 903}},
		{name: "nobody", users: 0, weights: []int{50, 50}, want: []int{0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keys := make([]string, len(tt.weights))
			for i := range keys {
				keys[i] = "g" + strconv.Itoa(i)
			}
			got := planByWeights(tt.users, keys, tt.weights)
			require.Len(t, got, len(tt.want))
			for i, g := range got {
				assert.Equal(t, keys[i], g.Key)
				assert.Equal(t, tt.want[i], g.Users, "%s's users", g.Key)
			}
		})
	}
}

func TestServiceSimPlanUsers(t *testing.T) {
	// parity: sim-<n> is "even" or "odd" by n; every third is "third", planned or not.
	parity := func(uid string) string {
		n, err := strconv.Atoi(strings.TrimPrefix(uid, "sim-"))
		require.NoError(t, err, uid)
		switch {
		case n%3 == 0:
			return "third"
		case n%2 == 0:
			return "even"
		}
		return "odd"
	}
	tests := []struct {
		name   string
		groups []simGroup
		want   []simUser
	}{
		{
			name:   "groups filled in the candidates' order, the full ones' and the unplanned skipped",
			groups: []simGroup{{Key: "even", Users: 2}, {Key: "odd", Users: 3}},
			want: []simUser{
				{UID: "sim-1", Group: "odd", Rank: 0}, {UID: "sim-2", Group: "even", Rank: 0},
				{UID: "sim-4", Group: "even", Rank: 1}, {UID: "sim-5", Group: "odd", Rank: 1},
				{UID: "sim-7", Group: "odd", Rank: 2},
			},
		},
		{
			name:   "a group of none",
			groups: []simGroup{{Key: "third", Users: 2}, {Key: "odd", Users: 0}},
			want:   []simUser{{UID: "sim-0", Group: "third", Rank: 0}, {UID: "sim-3", Group: "third", Rank: 1}},
		},
		{name: "nobody", groups: nil, want: []simUser{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := planUsers(tt.groups, parity)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestServiceSimPlanUsersRefusesWhatCannotFill(t *testing.T) {
	tests := []struct {
		name   string
		groups []simGroup
		want   string
	}{
		{name: "a group no uid is in", groups: []simGroup{{Key: "a", Users: 1}, {Key: "never", Users: 1}}, want: "2000 candidates"},
		{name: "a group twice", groups: []simGroup{{Key: "a", Users: 1}, {Key: "a", Users: 1}}, want: `group "a" twice`},
		{name: "fewer than none", groups: []simGroup{{Key: "a", Users: -1}}, want: "-1 users"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := planUsers(tt.groups, func(string) string { return "a" })
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

// TestServiceSimPlanOfArmsAndHoldout: under any salt, the plan of an experiment's arms
// (popup.Assigner, coverage and control included) or of the global holdout's groups
// (popup.HoldoutCheck) drives exactly the planned users of each group, each in the group the
// service puts it in (recomputed here from the documented buckets), ranked in the order of their
// uids.
func TestServiceSimPlanOfArmsAndHoldout(t *testing.T) {
	type plan struct {
		group  func(uid string) string
		want   func(uid string) string // the group from the documented buckets
		groups []simGroup
	}
	arms := func(salt string) plan {
		e := &popup.Experiment{Status: popup.ExperimentRunning, CoveragePercent: 60, Phase: 1, Salt: salt,
			Variants: []popup.Variant{{Key: "a", Weight: 34}, {Key: "b", Weight: 33}},
			Control:  &popup.Control{Weight: 33, Mode: popup.ControlFallThrough}}
		return plan{
			group: simArmGroup(e),
			want: func(uid string) string {
				switch b := popup.ArmBucket(salt, uid); {
				case popup.CoverageBucket(salt, uid) >= 6000:
					return simOutside
				case b < 3400:
					return "a"
				case b < 6700:
					return "b"
				}
				return popup.ControlArm
			},
			groups: []simGroup{{Key: "a", Users: 170}, {Key: "b", Users: 165}, {Key: popup.ControlArm, Users: 165}, {Key: simOutside, Users: 40}},
		}
	}
	holdout := func(salt string) plan {
		return plan{
			group: simHoldoutGroup(popup.Holdout{Percent: 10, Salt: salt, Phase: 1}),
			want: func(uid string) string {
				if popup.HoldoutBucket(salt, uid) < 1000 {
					return "holdout"
				}
				return "others"
			},
			groups: planByWeights(500, []string{"holdout", "others"}, []int{10, 90}),
		}
	}
	tests := []struct {
		name string
		give plan
	}{
		{name: "arms, salt 3f9a0c2b7d1e4a65", give: arms("3f9a0c2b7d1e4a65")},
		{name: "arms, salt 0000000000000000", give: arms("0000000000000000")},
		{name: "arms, salt ffffffffffffffff", give: arms("ffffffffffffffff")},
		{name: "holdout, salt 3f9a0c2b7d1e4a65", give: holdout("3f9a0c2b7d1e4a65")},
		{name: "holdout, salt 0123456789abcdef", give: holdout("0123456789abcdef")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := planUsers(tt.give.groups, tt.give.group)
			require.NoError(t, err)
			count := map[string]int{}
			last := -1
			for _, u := range got {
				n, err := strconv.Atoi(strings.TrimPrefix(u.UID, "sim-"))
				require.NoError(t, err)
				require.Greater(t, n, last, "in the order of the uids, each once")
				last = n
				require.Equal(t, tt.give.want(u.UID), u.Group, "%s's group", u.UID)
				require.Equal(t, count[u.Group], u.Rank, "%s's rank", u.UID)
				count[u.Group]++
			}
			for _, g := range tt.give.groups {
				assert.Equal(t, g.Users, count[g.Key], "%s's users", g.Key)
			}
		})
	}
}

// TestServiceSimUserDraws: a user's behaviour draws depend on the seed, its group and its rank,
// not on the uid that fills the place (which the salt decides).
func TestServiceSimUserDraws(t *testing.T) {
	draws := func(seed uint64, u simUser) [4]uint64 {
		rng := u.rng(seed)
		return [4]uint64{rng.Uint64(), rng.Uint64(), rng.Uint64(), rng.Uint64()}
	}
	base := draws(23, simUser{UID: "sim-7", Group: "a", Rank: 3})
	assert.Equal(t, base, draws(23, simUser{UID: "sim-9001", Group: "a", Rank: 3}), "another uid in the same place")
	assert.NotEqual(t, base, draws(23, simUser{UID: "sim-7", Group: "b", Rank: 3}), "another group")
	assert.NotEqual(t, base, draws(23, simUser{UID: "sim-7", Group: "a", Rank: 4}), "another rank")
	assert.NotEqual(t, base, draws(24, simUser{UID: "sim-7", Group: "a", Rank: 3}), "another seed")
}
