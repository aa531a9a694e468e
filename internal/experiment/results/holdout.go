package results

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"popupsvc/internal/experiment/stats"
	"popupsvc/internal/popup"
	"popupsvc/internal/report"
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
func Holdout(h popup.Holdout, days []ArmDay, goals []popup.Goal, counts []report.GoalCount, now time.Time) (HoldoutResults, error) {
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
		byGroup := make([]report.GoalCount, len(res.Groups))
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

// HoldoutEffect is what the popups do to one goal in a holdout phase, in words and the numbers the
// words rest on: the others' difference from the users held out and its always-valid
// (sequential) interval, in points of the conversion rate. Effect is "raise" or "lower" when
// that interval excludes 0, "unclear" when it holds 0, "no_data" when either group has nobody.
// The relative lift is quoted as an estimate beside it, never with an interval of its own kind
// mixed in.
type HoldoutEffect struct {
	Goal       string
	Effect     string
	Difference float64
	CI         stats.Interval
	Lift       float64
	LiftOK     bool
	Summary    string
}

// Effects is every goal's HoldoutEffect, in the order of the groups' goals.
func (r HoldoutResults) Effects() []HoldoutEffect {
	if len(r.Groups) < 2 {
		return nil
	}
	others := r.Groups[1]
	out := make([]HoldoutEffect, 0, len(others.Goals))
	for _, g := range others.Goals {
		e := HoldoutEffect{Goal: g.Goal, Effect: "no_data"}
		c := g.Comparison
		if c == nil || !c.Estimable {
			e.Summary = g.Goal + ": not enough data yet (a group has nobody exposed)."
			out = append(out, e)
			continue
		}
		e.Difference, e.CI = c.Difference, c.Sequential.CI
		e.Lift, e.LiftOK = c.Lift, c.LiftDefined && !math.IsNaN(c.Lift) && !math.IsInf(c.Lift, 0)
		lift := ""
		if e.LiftOK {
			lift = fmt.Sprintf("; %+.0f%% relative", e.Lift*100)
		}
		ci := fmt.Sprintf("always-valid 95%% interval [%s, %s] points", signedPoints(e.CI.Lower), signedPoints(e.CI.Upper))
		iv := ci + lift
		switch {
		case e.CI.Lower > 0:
			e.Effect = "raise"
			e.Summary = fmt.Sprintf("%s: the popups raise the conversion rate by %s points (%s): confident.", g.Goal, unsignedPoints(e.Difference), iv)
		case e.CI.Upper < 0:
			e.Effect = "lower"
			e.Summary = fmt.Sprintf("%s: the popups lower the conversion rate by %s points (%s): confident.", g.Goal, unsignedPoints(e.Difference), iv)
		default:
			e.Effect = "unclear"
			e.Summary = fmt.Sprintf("%s: no clear difference yet, %s points (%s, which holds 0%s).", g.Goal, signedPoints(e.Difference), ci, lift)
		}
		out = append(out, e)
	}
	return out
}

// signedPoints is a difference of rates in percentage points with its sign: "+1.78", "−0.46".
func signedPoints(d float64) string {
	s := fmt.Sprintf("%.2f", math.Abs(d)*100)
	if s == "0.00" {
		return s
	}
	if d < 0 {
		return "−" + s
	}
	return "+" + s
}

func unsignedPoints(d float64) string { return fmt.Sprintf("%.2f", math.Abs(d)*100) }
