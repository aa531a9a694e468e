package results

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"popupsvc/internal/experiment/stats"
	"popupsvc/internal/popup"
	"popupsvc/internal/report"
)

// Goals on an experiment's results (docs/CONTRACT.md §14): per arm and goal, the converted users
// over the arm's exposed users with the rate's interval and its comparison with the baseline (the
// click-through rate's statistics, a conversion for a click), and for a goal whose conversions
// carry a value the mean value per exposed user with Welch's comparison. Every arm, a control
// that shows nothing included, has a conversion rate: its users were exposed and may convert, so
// with a control the control is the baseline of every goal (whether the popup helps at all), else
// the first variant.

// GoalResult is one arm's results on one goal.
type GoalResult struct {
	Goal           string
	ConvertedUsers int64
	Conversions    int64
	ValueSum       float64
	// ValueSumCapped is the sum over the arm's users of min(the user's value, the goal's cap), for
	// a sum goal with a value cap; nil otherwise. The statistics read the raw values.
	ValueSumCapped *float64
	Rate           stats.ArmResult
	// Comparison is the rate against the baseline's; nil for the baseline.
	Comparison *stats.Comparison
	// Value and ValueComparison are a sum goal's mean value per exposed user; nil otherwise (and
	// the comparison for the baseline).
	Value           *stats.ValueResult
	ValueComparison *stats.ValueComparison
}

// goalArms is every arm's results on goal g from its counts by arm (byArm, in the order of arms),
// each compared with arms[base], with the input and analysis of the rates (the verdict's). Only
// arms' keys, weights and exposed users are read.
func goalArms(g popup.Goal, arms []Arm, byArm []report.GoalCount, base int, opts stats.Options, plannedEnd, now time.Time) ([]GoalResult, stats.Input, stats.Result, error) {
	in := stats.Input{Arms: make([]stats.Arm, len(arms)), Control: base, Now: now, Options: opts, PlannedEnd: plannedEnd}
	values := make([]stats.ValueArm, len(arms))
	for i, a := range arms {
		// A user converts only after an exposure in the phase: never more than the exposed.
		in.Arms[i] = stats.Arm{Weight: float64(a.Weight) / 100, Exposed: a.ExposedUsers, Clicked: min(byArm[i].ConvertedUsers, a.ExposedUsers)}
		values[i] = stats.ValueArm{Exposed: a.ExposedUsers, Sum: byArm[i].ValueSum, SquareSum: byArm[i].ValueSqSum}
	}
	analysis, err := stats.Analyze(in)
	if err != nil {
		return nil, in, analysis, err
	}
	var means []stats.ValueResult
	var meanCmps []stats.ValueComparison
	if g.Value == popup.GoalValueSum {
		means, meanCmps = stats.AnalyzeValues(values, base, opts.Alpha)
	}
	out := make([]GoalResult, len(arms))
	for i := range arms {
		out[i] = GoalResult{Goal: g.Key, ConvertedUsers: byArm[i].ConvertedUsers, Conversions: byArm[i].Conversions,
			ValueSum: byArm[i].ValueSum, Rate: analysis.Arms[i]}
		if g.Value == popup.GoalValueSum && g.ValueCap != nil {
			capped := 0.0 // no user of the arm converted
			if c := byArm[i].ValueSumCapped; c != nil {
				capped = *c
			}
			out[i].ValueSumCapped = &capped
		}
		if means != nil {
			out[i].Value = &means[i]
		}
	}
	for _, c := range analysis.Comparisons {
		out[c.Arm].Comparison = &c
	}
	for _, c := range meanCmps {
		out[c.Arm].ValueComparison = &c
	}
	return out, in, analysis, nil
}

// AddGoals adds to res, the results of phase e, the arms' results on every goal (by key) from
// the phase's counts. With e.PrimaryGoal one of goals, that goal's rate decides the verdict (and
// how long until a decision) instead of the click-through rate; the sample-ratio check still
// voids it.
func AddGoals(res *Results, e *popup.Experiment, goals []popup.Goal, counts []report.GoalCount, now time.Time) error {
	goals = slices.Clone(goals)
	slices.SortFunc(goals, func(a, b popup.Goal) int { return strings.Compare(a.Key, b.Key) })
	base := 0
	if e.Control != nil {
		base = len(e.Variants)
	}
	res.GoalBaseline = res.Arms[base].Key
	var plannedEnd time.Time
	if e.PlannedEndAt != nil {
		plannedEnd = *e.PlannedEndAt
	}
	for _, g := range goals {
		byArm := make([]report.GoalCount, len(res.Arms))
		for _, c := range counts {
			if i := e.ArmIndex(c.Arm); i >= 0 && c.Goal == g.Key {
				byArm[i] = c
			}
		}
		grs, in, analysis, err := goalArms(g, res.Arms, byArm, base, res.Options, plannedEnd, now)
		if err != nil {
			return fmt.Errorf("experiment phase %d, goal %s: %w", e.Phase, g.Key, err)
		}
		for i := range res.Arms {
			res.Arms[i].Goals = append(res.Arms[i].Goals, grs[i])
		}
		if g.Key != e.PrimaryGoal {
			continue
		}
		res.PrimaryGoal = g.Key
		res.Winner, res.Reason, res.Need = "", analysis.Verdict.Reason, nil
		if analysis.Verdict.Winner >= 0 {
			res.Winner = res.Arms[analysis.Verdict.Winner].Key
		}
		all := make([]int, len(res.Arms))
		for i := range all {
			all[i] = i
		}
		switch {
		case res.SampleRatio.SRM && res.Reason != stats.ReasonSingleArm:
			res.Winner, res.Reason = "", stats.ReasonSRM
		case res.Winner == "":
			res.Need = need(e, in, analysis, all, res.Arms, now)
		}
	}
	return nil
}
