package results

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"popupsvc/internal/experiment/stats"
	"popupsvc/internal/popup"
)

// The global holdout's results (docs/CONTRACT.md §15): a holdout phase is counted as the
// experiment of popup 0 with two arms, the users held out and the others, so its results are an
// experiment's goals: per group and goal the converted users over the group's exposed users with
// the rate's interval, the others compared with the holdout (the difference and lift the popups
// make), a sum goal's mean value per user, and the sample-ratio check of the split against
// holdout_percent.

// HoldoutResults are one holdout phase's results.
type HoldoutResults struct {
	Phase popup.Holdout
	// Groups are the holdout (the baseline: Control) and the others, in that order; Weight is
	// their share of the users in percent, Goals their results on every goal, by key.
	Groups      []Arm
	SampleRatio stats.SampleRatio
	Options     stats.Options
}

// Holdout analyses phase h from its groups' days (rows of any other arm are left out) and goal
// counts, on goals, at now.
func Holdout(h popup.Holdout, days []ArmDay, goals []popup.Goal, counts []popup.GoalCount, now time.Time) (HoldoutResults, error) {
	res := HoldoutResults{Phase: h, Options: DefaultOptions, Groups: []Arm{
		{Key: string(popup.HoldoutHeld), Weight: h.Percent, Control: true},
		{Key: string(popup.HoldoutOthers), Weight: 100 - h.Percent},
	}}
	group := func(key string) int {
		return slices.IndexFunc(res.Groups, func(a Arm) bool { return a.Key == key })
	}
	for _, d := range days {
		if i := group(d.Arm); i >= 0 {
			res.Groups[i].add(d)
		}
	}
	split := stats.Input{Arms: make([]stats.Arm, len(res.Groups)), Now: now, Options: res.Options}
	for i, g := range res.Groups {
		split.Arms[i] = stats.Arm{Weight: float64(g.Weight) / 100, Exposed: g.ExposedUsers}
	}
	analysis, err := stats.Analyze(split)
	if err != nil {
		return HoldoutResults{}, fmt.Errorf("holdout phase %d: %w", h.Phase, err)
	}
	res.SampleRatio = analysis.SampleRatio
	goals = slices.Clone(goals)
	slices.SortFunc(goals, func(a, b popup.Goal) int { return strings.Compare(a.Key, b.Key) })
	for _, g := range goals {
		byGroup := make([]popup.GoalCount, len(res.Groups))
		for _, c := range counts {
			if i := group(c.Arm); i >= 0 && c.Goal == g.Key {
				byGroup[i] = c
			}
		}
		grs, _, _, err := goalArms(g, res.Groups, byGroup, 0, res.Options, time.Time{}, now)
		if err != nil {
			return HoldoutResults{}, fmt.Errorf("holdout phase %d, goal %s: %w", h.Phase, g.Key, err)
		}
		for i := range res.Groups {
			res.Groups[i].Goals = append(res.Groups[i].Goals, grs[i])
		}
	}
	return res, nil
}
