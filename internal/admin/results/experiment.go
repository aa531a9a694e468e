package results

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"popupsvc/internal/experiment/results"
	"popupsvc/internal/experiment/stats"
	"popupsvc/internal/httpapi"
	"popupsvc/internal/popup"
	"popupsvc/internal/report"
)

// ExperimentDays reads an experiment phase's per-arm counts per day of a time zone
// (mysqlstore.StatsRepo).
type ExperimentDays interface {
	ExperimentDays(ctx context.Context, popupID int64, salt string, loc *time.Location) ([]report.ExperimentDay, error)
	// ExperimentUserArms calls each with every user a phase counted and the arm it counted them in.
	ExperimentUserArms(ctx context.Context, popupID int64, salt string, each func(uid, arm string)) error
}

var (
	errNoExperiment = httpapi.NewError(httpapi.Problem{Status: http.StatusNotFound, Code: "experiment_missing", Message: "the popup has no experiment"})
	errNoPhase      = httpapi.NewError(httpapi.Problem{Status: http.StatusNotFound, Code: "phase_not_found", Message: "the experiment has no such phase",
		Fields: []popup.FieldError{{Field: "phase", Message: "is not a phase of the popup's experiment"}}})
)

type expArmBody struct {
	Key          string      `json:"key"`
	Weight       int         `json:"weight"`
	Control      bool        `json:"control"`
	ExposedUsers int64       `json:"exposed_users"`
	ClickedUsers int64       `json:"clicked_users"`
	Exposures    int64       `json:"exposures"`
	Clicks       int64       `json:"clicks"`
	Closes       int64       `json:"closes"`
	CTR          *float64    `json:"ctr"`
	CTRCI        *[2]float64 `json:"ctr_ci"`
	expCompareBody
	// Goals are the arm's results on every goal, by key (docs/CONTRACT.md §14).
	Goals []expGoalBody `json:"goals"`
}

// expCompareBody is a rate against the baseline's: null where undefined.
type expCompareBody struct {
	Difference   *float64    `json:"difference"`
	DifferenceCI *[2]float64 `json:"difference_ci"`
	PAdjusted    *float64    `json:"p_adjusted"`
	Lift         *float64    `json:"lift"`
	LiftCI       *[2]float64 `json:"lift_ci"`
	SequentialP  *float64    `json:"sequential_p"`
	SequentialCI *[2]float64 `json:"sequential_ci"`
}

func compareToWire(c *stats.Comparison) expCompareBody {
	var w expCompareBody
	if c == nil || !c.Estimable {
		return w
	}
	w.Difference, w.DifferenceCI, w.PAdjusted = finite(c.Difference), interval(c.DiffCI), finite(c.PAdjusted)
	w.SequentialP, w.SequentialCI = finite(c.Sequential.P), interval(c.Sequential.CI)
	if c.LiftDefined {
		w.Lift = finite(c.Lift)
	}
	if c.LiftBounded {
		w.LiftCI = interval(c.LiftCI)
	}
	return w
}

// expGoalBody is one arm's results on one goal: the rate per exposed user and its comparison, and
// for a sum goal the mean value per exposed user and its comparison (null otherwise).
type expGoalBody struct {
	Goal           string      `json:"goal"`
	ConvertedUsers int64       `json:"converted_users"`
	Conversions    int64       `json:"conversions"`
	ValueSum       float64     `json:"value_sum"`
	ValueSumCapped *float64    `json:"value_sum_capped"` // null without a value cap
	Rate           *float64    `json:"rate"`
	RateCI         *[2]float64 `json:"rate_ci"`
	expCompareBody
	MeanValue             *float64    `json:"mean_value"`
	MeanValueCI           *[2]float64 `json:"mean_value_ci"`
	MeanValueDifference   *float64    `json:"mean_value_difference"`
	MeanValueDifferenceCI *[2]float64 `json:"mean_value_difference_ci"`
	MeanValuePAdjusted    *float64    `json:"mean_value_p_adjusted"`
}

func goalsToWire(gs []results.GoalResult) []expGoalBody {
	out := make([]expGoalBody, len(gs))
	for i, g := range gs {
		w := expGoalBody{Goal: g.Goal, ConvertedUsers: g.ConvertedUsers, Conversions: g.Conversions, ValueSum: g.ValueSum,
			ValueSumCapped: g.ValueSumCapped, Rate: finite(g.Rate.CTR), RateCI: interval(g.Rate.CI), expCompareBody: compareToWire(g.Comparison)}
		if v := g.Value; v != nil {
			w.MeanValue, w.MeanValueCI = finite(v.Mean), interval(v.CI)
		}
		if c := g.ValueComparison; c != nil && c.Estimable {
			w.MeanValueDifference, w.MeanValueDifferenceCI, w.MeanValuePAdjusted = finite(c.Difference), interval(c.DiffCI), finite(c.PAdjusted)
		}
		out[i] = w
	}
	return out
}

type expDayBody struct {
	Day          string `json:"day"`
	TimeZone     string `json:"time_zone"` // the zone whose day it is: the answer's, or UTC for a day kept from before
	Arm          string `json:"arm"`
	ExposedUsers int64  `json:"exposed_users"`
	Exposures    int64  `json:"exposures"`
	ClickedUsers int64  `json:"clicked_users"`
	Clicks       int64  `json:"clicks"`
	Closes       int64  `json:"closes"`
}

type expSRMBody struct {
	ChiSquare float64 `json:"chi_square"`
	DF        int     `json:"df"`
	P         float64 `json:"p"`
	Alarm     bool    `json:"alarm"`
}

// expVerdictBody is the one verdict of the results (results.Verdict): on the primary goal (metric
// its key) or the click-through rate (metric "clicks"), against baseline, with the sentences a
// page shows.
type expVerdictBody struct {
	Winner       *string      `json:"winner"`
	Reason       string       `json:"reason"`
	Metric       string       `json:"metric"`
	Baseline     string       `json:"baseline"`
	Leader       *string      `json:"leader"`
	Rate         *float64     `json:"rate"`
	BaselineRate *float64     `json:"baseline_rate"`
	Difference   *float64     `json:"difference"`
	DifferenceCI *[2]float64  `json:"difference_ci"`
	SequentialCI *[2]float64  `json:"sequential_ci"`
	Lift         *float64     `json:"lift"`
	Days         *int64       `json:"days"`
	Shipped      *shippedBody `json:"shipped"`
	Summary      string       `json:"summary"`
	Why          string       `json:"why"`
}

// shippedBody is what Conclude shipped, when and by whom.
type shippedBody struct {
	Variant string     `json:"variant"`
	At      *time.Time `json:"at"`
	By      string     `json:"by"`
}

func verdictToWire(v results.Verdict) expVerdictBody {
	w := expVerdictBody{Reason: string(v.Reason), Metric: v.Metric, Baseline: v.Baseline, Summary: v.Summary, Why: v.Why}
	if v.Winner != "" {
		w.Winner = &v.Winner
	}
	if v.Leader != "" {
		w.Leader, w.Rate, w.BaselineRate = &v.Leader, finite(v.Rate), finite(v.BaselineRate)
		c := compareToWire(v.Comparison)
		w.Difference, w.DifferenceCI, w.SequentialCI, w.Lift = c.Difference, c.DifferenceCI, c.SequentialCI, c.Lift
	}
	if v.Days > 0 {
		w.Days = &v.Days
	}
	if s := v.Shipped; s != nil {
		w.Shipped = &shippedBody{Variant: s.Variant, By: s.By}
		if !s.At.IsZero() {
			w.Shipped.At = &s.At
		}
	}
	return w
}

type expOptionsBody struct {
	Alpha      float64 `json:"alpha"`
	SRMAlpha   float64 `json:"srm_alpha"`
	MinExposed int64   `json:"min_exposed"`
	MinClicks  int64   `json:"min_clicks"`
}

// expNeedBody is how long until a decision (results.Need).
type expNeedBody struct {
	Leader      string  `json:"leader"`
	MoreUsers   int64   `json:"more_users"`
	UsersPerDay float64 `json:"users_per_day"`
}

type expResultsBody struct {
	PopupID        int64          `json:"popup_id"`
	Phase          int            `json:"phase"`
	Salt           string         `json:"salt"`
	Status         string         `json:"status"`
	PhaseStartedAt *time.Time     `json:"phase_started_at"`
	PlannedEndAt   *time.Time     `json:"planned_end_at"`
	Baseline       string         `json:"baseline"`
	TimeZone       string         `json:"time_zone"` // the IANA zone whose days the days are
	Arms           []expArmBody   `json:"arms"`
	Days           []expDayBody   `json:"days"`
	SRM            expSRMBody     `json:"srm"`
	Verdict        expVerdictBody `json:"verdict"`
	Options        expOptionsBody `json:"options"`
	Need           *expNeedBody   `json:"need"`
	// PrimaryGoal is the goal that decided the verdict (null: the click-through rate), and
	// GoalBaseline the arm the goals compare with.
	PrimaryGoal  *string `json:"primary_goal"`
	GoalBaseline string  `json:"goal_baseline"`
}

// experimentResults answers GET /admin/v1/popups/:id/experiment/results[?phase=N]: the phase's
// (default the current one's) per-arm results, days, ratio check and verdict. An earlier phase
// is found in the popup's revisions (results.Phase).
func (a *API) experimentResults(c *gin.Context) {
	id, aerr := httpapi.PopupID(c)
	if aerr != nil {
		a.Fail(c, aerr)
		return
	}
	phase, zone, loc, err := a.phaseAndZone(c)
	if err != nil {
		a.Fail(c, err)
		return
	}
	status, res, err := a.Reports.Experiment(c.Request.Context(), id, phase, loc)
	if err != nil {
		a.Fail(c, err)
		return
	}
	body := toResultsWire(id, status, res)
	body.TimeZone = zone
	c.JSON(http.StatusOK, body)
}

// shipped is the conclude of a concluded experiment cur: its variant, and the time and operator
// of the oldest revision of the run of concluded revisions that history (newest first) begins
// with, the write that concluded it; nil when cur is not concluded.
func shipped(cur *popup.Experiment, history []popup.Revision) *results.Shipped {
	if cur.Status != popup.ExperimentConcluded {
		return nil
	}
	s := &results.Shipped{Variant: cur.ConcludedVariant}
	for _, r := range history {
		x := r.Popup.Experiment
		if x == nil || x.Status != popup.ExperimentConcluded || x.ConcludedVariant != cur.ConcludedVariant || x.Salt != cur.Salt {
			break
		}
		s.At, s.By = r.At, r.Actor
	}
	return s
}

// phaseAndZone reads the query of a results route: phase (a positive integer; 0 when absent: the
// current or latest phase) and tz (resultsZone).
func (a *API) phaseAndZone(c *gin.Context) (phase int, zone string, loc *time.Location, err error) {
	if v, ok := c.GetQuery("phase"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return 0, "", nil, httpapi.QueryError("phase", "must be a positive integer")
		}
		phase = n
	}
	zone, loc, err = a.resultsZone(c)
	return phase, zone, loc, err
}

// ExperimentGoals reads an experiment phase's counts per arm and goal (mysqlstore.StatsRepo).
type ExperimentGoals interface {
	GoalCounts(ctx context.Context, popupID int64, salt string) ([]report.GoalCount, error)
}

// toResultsWire is the results' admin shape; status is the experiment's (current) status.
func toResultsWire(id int64, status popup.ExperimentStatus, r results.Results) expResultsBody {
	b := expResultsBody{PopupID: id, Phase: r.Phase, Salt: r.Salt, Status: string(status), PhaseStartedAt: r.PhaseStartedAt,
		PlannedEndAt: r.PlannedEndAt, Baseline: r.Baseline, Arms: make([]expArmBody, len(r.Arms)), Days: make([]expDayBody, len(r.Days)),
		SRM:     expSRMBody{ChiSquare: r.SampleRatio.ChiSquare, DF: r.SampleRatio.DF, P: r.SampleRatio.P, Alarm: r.SampleRatio.SRM},
		Verdict: verdictToWire(r.Verdict),
		Options: expOptionsBody{Alpha: r.Options.Alpha, SRMAlpha: r.Options.SRMAlpha, MinExposed: r.Options.MinExposed, MinClicks: r.Options.MinClicks}}
	if r.PrimaryGoal != "" {
		b.PrimaryGoal = &r.PrimaryGoal
	}
	b.GoalBaseline = r.GoalBaseline
	if n := r.Need; n != nil {
		b.Need = &expNeedBody{Leader: n.Leader, MoreUsers: n.MoreUsers, UsersPerDay: n.PerDay}
	}
	for i, a := range r.Arms {
		w := expArmBody{Key: a.Key, Weight: a.Weight, Control: a.Control, ExposedUsers: a.ExposedUsers, ClickedUsers: a.ClickedUsers,
			Exposures: a.Exposures, Clicks: a.Clicks, Closes: a.Closes}
		if a.Rate != nil {
			w.CTR, w.CTRCI = finite(a.Rate.CTR), interval(a.Rate.CI)
		}
		w.expCompareBody = compareToWire(a.Comparison)
		w.Goals = goalsToWire(a.Goals)
		b.Arms[i] = w
	}
	for i, d := range r.Days {
		b.Days[i] = expDayBody{Day: d.Day, TimeZone: d.Zone, Arm: d.Arm, ExposedUsers: d.ExposedUsers, Exposures: d.Exposures,
			ClickedUsers: d.ClickedUsers, Clicks: d.Clicks, Closes: d.Closes}
	}
	return b
}

// finite is v, or nil (JSON null) where it is not a number JSON can carry.
func finite(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// interval is iv as [lower, upper], or nil where either end is not finite.
func interval(iv stats.Interval) *[2]float64 {
	if finite(iv.Lower) == nil || finite(iv.Upper) == nil {
		return nil
	}
	return &[2]float64{iv.Lower, iv.Upper}
}
