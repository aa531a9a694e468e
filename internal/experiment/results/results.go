// Package results turns an experiment phase's per-arm, per-day counts (popup_experiment_slot's
// quarter hours summed into a zone's days) into the results of docs/CONTRACT.md §10 "Results",
// through the pure statistics of internal/experiment/stats. It is pure: no I/O, the caller
// passes now.
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

// ArmDay is one arm's counts on one day of the phase (the read model mysqlstore fills).
type ArmDay = report.ExperimentDay

// Counts are an arm's totals over the phase.
type Counts struct {
	ExposedUsers, Exposures, ClickedUsers, Clicks, Closes int64
}

func (c *Counts) add(d ArmDay) {
	c.ExposedUsers += d.ExposedUsers
	c.Exposures += d.Exposures
	c.ClickedUsers += d.ClickedUsers
	c.Clicks += d.Clicks
	c.Closes += d.Closes
}

// Arm is one arm's results.
type Arm struct {
	Key     string
	Weight  int // percent
	Control bool
	Counts
	// Rate is the arm's click-through rate with its interval; nil for a control that shows
	// nothing (it has no click-through rate).
	Rate *stats.ArmResult
	// Comparison is the arm against the baseline; nil for the baseline and for a control that
	// shows nothing.
	Comparison *stats.Comparison
	// Goals are the arm's results on each goal, by key (AddGoals); none before AddGoals.
	Goals []GoalResult
}

// Results are one phase's results.
type Results struct {
	Phase          int
	Salt           string
	PhaseStartedAt *time.Time
	PlannedEndAt   *time.Time
	Baseline       string // the key of the arm the others are compared with
	Arms           []Arm  // variants in order, then the control
	Days           []ArmDay
	SampleRatio    stats.SampleRatio // over every arm, a show-nothing control included
	Winner         string            // the winning arm's key; "" for none
	// PrimaryGoal is the goal that decided Winner and Reason ("" for the click-through rate), and
	// GoalBaseline the arm the goals compare with (AddGoals).
	PrimaryGoal  string
	GoalBaseline string
	Reason       stats.Reason
	Options      stats.Options // as used, defaults filled in
	// Need is how many more users the phase needs before the verdict could name the arm that
	// leads now (stats.Needed), at the rate it has exposed users so far; nil when there is
	// nothing to estimate.
	Need *Need
	// Verdict is the decision on the primary goal (else the click-through rate) and its words
	// (Decide); the zero value before Decide.
	Verdict Verdict
}

// Need estimates how long until a decision (docs/EXPERIMENTS.md, "How long until a decision").
type Need struct {
	Leader    string  // the key of the arm furthest from the baseline so far
	MoreUsers int64   // users the whole experiment (every arm) still needs
	PerDay    float64 // users exposed a day so far: the phase's exposed users over its days run, at least one
}

// DefaultOptions are the options every result is computed with: the stats package's defaults.
var DefaultOptions = stats.Options{Alpha: stats.DefaultAlpha, SRMAlpha: stats.DefaultSRMAlpha,
	MixingVariance: stats.DefaultMixingVariance, MinExposed: stats.DefaultMinExposed, MinClicks: stats.DefaultMinClicks}

// Compute analyses phase e of an experiment from its days (any order; rows of an arm e does not
// have are left out) at now. The baseline is the control when it falls through (its users see,
// and may click, what they get instead), else the first variant; a control that shows nothing
// has no click-through rate and takes part only in the sample-ratio check, which is over every
// arm against the weights.
func Compute(e *popup.Experiment, days []ArmDay, now time.Time) (Results, error) {
	n := e.ArmCount()
	res := Results{Phase: e.Phase, Salt: e.Salt, PhaseStartedAt: e.PhaseStartedAt, PlannedEndAt: e.PlannedEndAt,
		Arms: make([]Arm, n), Options: DefaultOptions}
	for i := range n {
		res.Arms[i] = Arm{Key: e.ArmKey(i), Weight: e.ArmWeight(i), Control: e.IsControl(i)}
	}
	for _, d := range days {
		if i := e.ArmIndex(d.Arm); i >= 0 {
			res.Arms[i].add(d)
			res.Days = append(res.Days, d)
		}
	}
	slices.SortFunc(res.Days, func(a, b ArmDay) int {
		if c := strings.Compare(a.Day, b.Day); c != 0 {
			return c
		}
		if c := strings.Compare(a.Zone, b.Zone); c != 0 {
			return c // a UTC day kept from before days followed a zone, beside the same date's
		}
		return e.ArmIndex(a.Arm) - e.ArmIndex(b.Arm)
	})

	all := make([]stats.Arm, n)
	for i, a := range res.Arms {
		all[i] = stats.Arm{Weight: float64(a.Weight) / 100, Exposed: a.ExposedUsers, Clicked: a.ClickedUsers}
	}
	in := stats.Input{Arms: all, Now: now, Options: DefaultOptions}
	if e.PlannedEndAt != nil {
		in.PlannedEnd = *e.PlannedEndAt
	}
	// compared are the arms with a click-through rate, indexes into res.Arms.
	compared := make([]int, 0, n)
	for i := range n {
		compared = append(compared, i)
	}
	showsNothing := e.Control != nil && e.Control.Mode != popup.ControlFallThrough
	switch {
	case e.Control != nil && !showsNothing:
		in.Control = len(e.Variants)
	case showsNothing:
		compared = compared[:len(e.Variants)]
	}
	full, err := stats.Analyze(in)
	if err != nil {
		return Results{}, fmt.Errorf("experiment phase %d: %w", e.Phase, err)
	}
	res.SampleRatio = full.SampleRatio
	analysis, ain := full, in
	if showsNothing {
		// The variants alone, their weights made shares of the variants, for the rates, the
		// comparisons and the verdict; the sample-ratio check stays the one over every arm.
		ain = analysisInput(in, compared, all)
		// The variants' own ratio check is not the contract's; the smallest α never alarms
		// before the full check does.
		ain.Options.SRMAlpha = 5e-324
		if analysis, err = stats.Analyze(ain); err != nil {
			return Results{}, fmt.Errorf("experiment phase %d: %w", e.Phase, err)
		}
	}
	res.Baseline = res.Arms[compared[in.Control]].Key
	for k, i := range compared {
		rate := analysis.Arms[k]
		res.Arms[i].Rate = &rate
	}
	for _, c := range analysis.Comparisons {
		c.Arm = compared[c.Arm]
		res.Arms[c.Arm].Comparison = &c
	}
	res.Reason = analysis.Verdict.Reason
	if analysis.Verdict.Winner >= 0 {
		res.Winner = res.Arms[compared[analysis.Verdict.Winner]].Key
	}
	if res.SampleRatio.SRM && res.Reason != stats.ReasonSingleArm {
		res.Winner, res.Reason = "", stats.ReasonSRM
	}
	if res.Winner == "" && !res.SampleRatio.SRM {
		res.Need = need(e, ain, analysis, compared, res.Arms, now)
	}
	return res, nil
}

// analysisInput is in for the arms at compared alone (the variants, beside a control that shows
// nothing), their weights made shares of those arms.
func analysisInput(in stats.Input, compared []int, all []stats.Arm) stats.Input {
	sub := in
	sub.Arms = make([]stats.Arm, len(compared))
	var total float64
	for _, i := range compared {
		total += all[i].Weight
	}
	for k, i := range compared {
		sub.Arms[k] = all[i]
		sub.Arms[k].Weight = all[i].Weight / total
	}
	return sub
}

// need is stats.Needed of the analysed arms, made the whole experiment's: with a control that
// shows nothing the analysis saw the variants alone, which take their weights' share of the users.
func need(e *popup.Experiment, in stats.Input, analysis stats.Result, compared []int, arms []Arm, now time.Time) *Need {
	n, ok := stats.Needed(in, analysis)
	if !ok {
		return nil
	}
	more := float64(n.More)
	if len(compared) < len(arms) {
		share := 0
		for _, i := range compared {
			share += arms[i].Weight
		}
		more = math.Ceil(more * 100 / float64(share))
	}
	var exposed int64
	for _, a := range arms {
		exposed += a.ExposedUsers
	}
	days := 1.0
	if e.PhaseStartedAt != nil {
		days = math.Max(1, now.Sub(*e.PhaseStartedAt).Hours()/24)
	}
	return &Need{Leader: arms[compared[n.Leader]].Key, MoreUsers: int64(more), PerDay: float64(exposed) / days}
}

// Phase returns the experiment of the given phase: the current one, or an earlier phase of the
// same experiment as the latest revision of the popup that holds it left it (history newest
// first, as PopupRepo.History returns it). Walking back from the newest revision, the current
// experiment's revisions end at one without an experiment or with a later phase than the one
// after it (an experiment removed and another created starts at phase 1 again). False when the
// phase is not one of the current experiment's.
func Phase(cur *popup.Experiment, history []popup.Revision, phase int) (*popup.Experiment, bool) {
	if cur == nil || phase < 1 || phase > cur.Phase {
		return nil, false
	}
	if phase == cur.Phase {
		return cur, true
	}
	after := cur.Phase
	for _, r := range history {
		x := r.Popup.Experiment
		if x == nil || x.Phase > after {
			break
		}
		if x.Phase == phase {
			return x, true
		}
		after = x.Phase
	}
	return nil, false
}
