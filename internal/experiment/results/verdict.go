package results

import (
	"fmt"
	"math"
	"time"

	"popupsvc/internal/experiment/stats"
	"popupsvc/internal/popup"
)

// The verdict of a phase (docs/CONTRACT.md §10 "Results", "The verdict"): the one reading of the
// results that everything a page says about the decision derives from — the summary sentence,
// the winner box and its reason, how long until a decision, and the variant Conclude offers. It
// is taken on one metric, the primary goal's conversion rate when the experiment has one (else
// the click-through rate), against that metric's baseline, and worded for that metric.

// MetricClicks is the verdict's metric when the experiment has no primary goal.
const MetricClicks = "clicks"

// Verdict is the phase's decision on its metric, with the sentences that say it.
type Verdict struct {
	// Metric is MetricClicks or the primary goal's key, MetricName what the sentences call it.
	Metric     string
	MetricName string
	// Baseline is the arm the metric compares with (Results.Baseline for clicks, GoalBaseline
	// for a goal).
	Baseline string
	Winner   string // "" for none
	Reason   stats.Reason
	// Leader is the arm the sentence is about: the winner, or without one the arm furthest from
	// the baseline so far (Need.Leader); "" for none. Rate and BaselineRate are its rate and the
	// baseline's on the metric, Comparison its comparison (nil for the control as winner).
	Leader       string
	Rate         float64
	BaselineRate float64
	Comparison   *stats.Comparison
	Need         *Need
	// Days is how many days Need's users take at the rate so far; 0 without an estimate.
	Days int64
	// Shipped is the conclude that ended the experiment; nil while it is not concluded.
	Shipped *Shipped
	// Summary is the sentence a page leads with, Why the reason of the verdict.
	Summary string
	Why     string
}

// Shipped is what Conclude shipped, and when (the revision that concluded).
type Shipped struct {
	Variant string
	At      time.Time
	By      string
}

// VerdictInput is what the verdict's words need beside the results.
type VerdictInput struct {
	// Status is the experiment's current status, Shipped its conclude (nil when not concluded):
	// the results of any phase of a concluded experiment say what was shipped.
	Status  popup.ExperimentStatus
	Shipped *Shipped
	// PopupDraft says the popup is a draft: nobody sees it until it is published.
	PopupDraft bool
	// GoalName is the primary goal's name ("" for clicks); Zone the zone the sentence's times are
	// written in.
	GoalName string
	Zone     *time.Location
}

// Decide sets res.Verdict from res (after Compute and AddGoals): the verdict on the primary goal
// when AddGoals found it, else on the click-through rate.
func Decide(res *Results, in VerdictInput) {
	v := Verdict{Metric: MetricClicks, MetricName: "clicks", Baseline: res.Baseline, Winner: res.Winner, Reason: res.Reason,
		Need: res.Need, Shipped: in.Shipped}
	goal := -1
	if res.PrimaryGoal != "" {
		v.Metric, v.MetricName, v.Baseline = res.PrimaryGoal, res.PrimaryGoal, res.GoalBaseline
		if in.GoalName != "" {
			v.MetricName = in.GoalName
		}
		for k := range res.Arms[0].Goals {
			if res.Arms[0].Goals[k].Goal == res.PrimaryGoal {
				goal = k
			}
		}
	}
	rate := func(a *Arm) (float64, *stats.Comparison, bool) {
		if goal >= 0 {
			g := &a.Goals[goal]
			return g.Rate.CTR, g.Comparison, true
		}
		if a.Rate == nil {
			return 0, nil, false
		}
		return a.Rate.CTR, a.Comparison, true
	}
	switch {
	case v.Winner != "":
		v.Leader = v.Winner
	case v.Need != nil:
		v.Leader = v.Need.Leader
	}
	if i := armIndex(res.Arms, v.Baseline); i >= 0 {
		v.BaselineRate, _, _ = rate(&res.Arms[i])
	}
	if i := armIndex(res.Arms, v.Leader); i >= 0 {
		r, c, ok := rate(&res.Arms[i])
		if ok {
			v.Rate, v.Comparison = r, c
		} else {
			v.Leader = "" // a control that shows nothing has no click-through rate
		}
	}
	if n := v.Need; n != nil && n.MoreUsers > 0 && n.PerDay > 0 {
		v.Days = max(1, int64(math.Ceil(float64(n.MoreUsers)/n.PerDay)))
	}
	var exposed int64
	for _, a := range res.Arms {
		exposed += a.ExposedUsers
	}
	v.Why = v.why(res.Options)
	v.Summary = v.summary(res, in, exposed)
	res.Verdict = v
}

func armIndex(arms []Arm, key string) int {
	for i := range arms {
		if key != "" && arms[i].Key == key {
			return i
		}
	}
	return -1
}

// armName is how a sentence names an arm.
func armName(key string) string {
	if key == popup.ControlArm {
		return "the control"
	}
	return "“" + key + "”"
}

// pct is a rate in percent with one decimal; points a difference of rates in percentage points.
func pct(r float64) string { return fmt.Sprintf("%.1f%%", r*100) }

func points(d float64) string { return fmt.Sprintf("%.1f points", math.Abs(d)*100) }

// more words a difference d on the metric: "gets 1.2 points more users clicking than",
// "converts 1.2 points more users to Purchase than".
func (v *Verdict) more(d float64) string {
	dir := "more"
	if d < 0 {
		dir = "fewer"
	}
	if v.Metric == MetricClicks {
		return fmt.Sprintf("gets %s %s users clicking than", points(d), dir)
	}
	return fmt.Sprintf("converts %s %s users to %s than", points(d), dir, v.MetricName)
}

// rates is "(6.0% against 4.8%, +25%)": the leader's rate, the baseline's and the lift.
func (v *Verdict) rates() string {
	s := pct(v.Rate) + " against " + pct(v.BaselineRate)
	if c := v.Comparison; c != nil && c.LiftDefined && !math.IsNaN(c.Lift) && !math.IsInf(c.Lift, 0) {
		s += fmt.Sprintf(", %+.0f%%", c.Lift*100)
	}
	return "(" + s + ")"
}

// metricUsers is who counts on the metric: "users who clicked", "users who converted to X".
func (v *Verdict) metricUsers() string {
	if v.Metric == MetricClicks {
		return "users who clicked"
	}
	return "users who converted to " + v.MetricName
}

func (v *Verdict) summary(res *Results, in VerdictInput, exposed int64) string {
	if s := v.Shipped; s != nil {
		at := s.At
		if in.Zone != nil {
			at = at.In(in.Zone)
		}
		out := fmt.Sprintf("Concluded on %s by %s: variant “%s” was shipped as the popup's content for every user.", at.Format("2006-01-02 15:04 MST"), s.By, s.Variant)
		switch {
		case v.Winner == s.Variant && v.Comparison != nil:
			out += fmt.Sprintf(" The verdict on %s named it: it %s %s %s.", v.MetricName, v.more(v.Comparison.Difference), armName(v.Baseline), v.rates())
		case v.Winner == s.Variant:
			out += fmt.Sprintf(" The verdict on %s named it.", v.MetricName)
		case v.Winner != "":
			out += fmt.Sprintf(" The verdict on %s names %s, not the variant shipped.", v.MetricName, armName(v.Winner))
		default:
			out += fmt.Sprintf(" The verdict on %s named no winner.", v.MetricName)
		}
		return out
	}
	if exposed == 0 {
		out := fmt.Sprintf("No data yet: nobody has been exposed in phase %d.", res.Phase)
		if in.Status == popup.ExperimentDraft {
			out = "No data yet: the experiment has not started."
		}
		if in.PopupDraft {
			out += " The popup is a draft: nobody sees it until it is published."
		}
		return out
	}
	switch {
	case v.Reason == stats.ReasonSRM:
		return "Do not act on these results: the arms’ users do not match their weights (a sample-ratio mismatch, below). Find the cause first."
	case v.Reason == stats.ReasonSingleArm:
		return "Only one arm has users: there is nothing to compare."
	case v.Winner == popup.ControlArm:
		return fmt.Sprintf("Every variant does worse than the control on %s: confident — showing none of them is better.", v.MetricName)
	case v.Winner != "" && v.Winner == v.Baseline:
		return fmt.Sprintf("Every other variant does worse than %s on %s: confident — %s is the one to keep.", armName(v.Winner), v.MetricName, armName(v.Winner))
	case v.Winner != "" && v.Comparison != nil:
		return fmt.Sprintf("%s %s %s %s: confident — you can ship it.", armName(v.Winner), v.more(v.Comparison.Difference), armName(v.Baseline), v.rates())
	case v.Leader == "" || v.Comparison == nil || v.Need == nil:
		return fmt.Sprintf("No variant differs from %s on %s so far: not enough data to tell them apart.", armName(v.Baseline), v.MetricName)
	}
	more := "a little more data"
	if v.Need.MoreUsers > 0 {
		more = fmt.Sprintf("about %s more users", thousands(v.Need.MoreUsers))
		if v.Days > 0 {
			more += fmt.Sprintf(", about %s at today’s rate (%s users a day)", counted(v.Days, "day"), thousands(int64(math.Round(v.Need.PerDay))))
		}
	}
	return fmt.Sprintf("%s %s %s so far %s, but that is not sure yet: %s.", armName(v.Leader), v.more(v.Comparison.Difference), armName(v.Baseline), v.rates(), more)
}

func (v *Verdict) why(o stats.Options) string {
	base := armName(v.Baseline)
	switch v.Reason {
	case stats.ReasonSequential:
		return fmt.Sprintf("the always-valid (sequential) interval of the difference in %s from %s excludes 0, so it may be read at any time (α %g).", v.metricRate(), base, o.Alpha)
	case stats.ReasonFixedHorizon:
		return fmt.Sprintf("the planned end has passed, and the fixed-horizon interval of the difference in %s from %s excludes 0.", v.metricRate(), base)
	case stats.ReasonSRM:
		return "the arms’ exposed users do not match their weights (sample-ratio mismatch): the assignment or the counting is broken, so no result can be trusted. Find the cause before reading anything."
	case stats.ReasonMinSample:
		return fmt.Sprintf("not enough data yet: every compared arm needs at least %d exposed users, %d %s and %d who did not.", o.MinExposed, o.MinClicks, v.metricUsers(), o.MinClicks)
	case stats.ReasonNoDifference:
		return fmt.Sprintf("no arm differs from %s in %s beyond chance so far.", base, v.metricRate())
	case stats.ReasonSingleArm:
		return "only one arm has users: there is nothing to compare."
	}
	return string(v.Reason)
}

// metricRate names the rate the verdict compares.
func (v *Verdict) metricRate() string {
	if v.Metric == MetricClicks {
		return "click-through rate"
	}
	return "the rate of users converting to " + v.MetricName
}

// thousands writes n with thousands separators: 12,345.
// counted is n of unit in words, singular for one: "1 day", "12 days", "1,200 days".
func counted(n int64, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return thousands(n) + " " + unit + "s"
}

func thousands(n int64) string {
	s := fmt.Sprint(n)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	out := make([]byte, 0, len(s)+len(s)/3)
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}
