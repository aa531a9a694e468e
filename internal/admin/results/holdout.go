package results

import (
	"context"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"popupsvc/internal/experiment/results"
	"popupsvc/internal/httpapi"
	"popupsvc/internal/popup"
	"popupsvc/internal/report"
)

// HoldoutReads reads the global holdout's results (docs/CONTRACT.md §15): its phases, the
// setting's history (mysqlstore.SettingsRepo), and the goal counts of the users a phase first
// exposed between two instants (mysqlstore.StatsRepo); its groups' days and whole counts are an
// experiment's (ExperimentDays, ExperimentGoals) of popup.HoldoutPopupID.
type HoldoutReads interface {
	HoldoutPhases(ctx context.Context) ([]report.HoldoutPhase, error)
	GoalCountsExposedIn(ctx context.Context, popupID int64, salt string, from, to time.Time) ([]report.GoalCount, error)
}

var errNoHoldoutPhase = httpapi.NewError(httpapi.Problem{Status: http.StatusNotFound, Code: "phase_not_found", Message: "the holdout has no such phase",
	Fields: []popup.FieldError{{Field: "phase", Message: "is not a phase of the holdout"}}})

var errNoHoldout = httpapi.NewError(httpapi.Problem{Status: http.StatusNotFound, Code: "holdout_missing",
	Message: "the team has never run a holdout: set holdout_percent in /admin/v1/settings"})

// holdoutPhaseBody is one holdout phase as the results name it.
type holdoutPhaseBody struct {
	Phase     int        `json:"phase"`
	Percent   int        `json:"percent"`
	Salt      string     `json:"salt"`
	Running   bool       `json:"running"`
	StartedAt time.Time  `json:"started_at"`
	StartedBy string     `json:"started_by"`
	EndedAt   *time.Time `json:"ended_at"`
	EndedBy   *string    `json:"ended_by"`
}

func holdoutPhaseToWire(p report.HoldoutPhase) holdoutPhaseBody {
	w := holdoutPhaseBody{Phase: p.Phase, Percent: p.Percent, Salt: p.Salt, Running: p.Running(), StartedAt: p.StartedAt, StartedBy: p.StartedBy}
	if !p.EndedAt.IsZero() {
		at, by := p.EndedAt, p.EndedBy
		w.EndedAt, w.EndedBy = &at, &by
	}
	return w
}

// holdoutGroupBody is one group's results: its users exposed in the phase and its results on
// every goal, the others' compared with the holdout's.
type holdoutGroupBody struct {
	Group        string        `json:"group"`
	Percent      int           `json:"percent"`
	ExposedUsers int64         `json:"exposed_users"`
	Exposures    int64         `json:"exposures"`
	Goals        []expGoalBody `json:"goals"`
}

type holdoutResultsBody struct {
	holdoutPhaseBody
	// TimeZone is the zone whose days From and To are; both null when the phase's users are not
	// limited to those first exposed between them.
	TimeZone string             `json:"time_zone"`
	From     *string            `json:"from"`
	To       *string            `json:"to"`
	Baseline string             `json:"baseline"`
	Groups   []holdoutGroupBody `json:"groups"`
	SRM      expSRMBody         `json:"srm"`
	Options  expOptionsBody     `json:"options"`
	Phases   []holdoutPhaseBody `json:"phases"`
	// Effects are what the popups do to each goal, in words and the interval the words rest on
	// (results.HoldoutEffect).
	Effects []holdoutEffectBody `json:"effects"`
}

// holdoutEffectBody is one goal's results.HoldoutEffect: effect raise, lower, unclear or
// no_data; difference and difference_ci (the always-valid interval) in absolute rate, lift
// relative; summary the sentence.
type holdoutEffectBody struct {
	Goal         string      `json:"goal"`
	Effect       string      `json:"effect"`
	Difference   *float64    `json:"difference"`
	DifferenceCI *[2]float64 `json:"difference_ci"`
	Lift         *float64    `json:"lift"`
	Summary      string      `json:"summary"`
}

func effectsToWire(es []results.HoldoutEffect) []holdoutEffectBody {
	out := make([]holdoutEffectBody, len(es))
	for i, e := range es {
		w := holdoutEffectBody{Goal: e.Goal, Effect: e.Effect, Summary: e.Summary}
		if e.Effect != "no_data" {
			w.Difference, w.DifferenceCI = finite(e.Difference), interval(e.CI)
		}
		if e.LiftOK {
			w.Lift = finite(e.Lift)
		}
		out[i] = w
	}
	return out
}

// holdoutResults answers GET /admin/v1/holdout/results[?phase=N][&from=&to=][&tz=]: a holdout
// phase's (default the latest's) groups compared on every goal. With from or to, only the users
// the phase first exposed on those days of tz (both included; from defaults to the phase's first
// day, to to today) are counted.
func (a *API) holdoutResults(c *gin.Context) {
	if a.Reports.Holdout == nil {
		a.Fail(c, errNoHoldout)
		return
	}
	phase, zone, loc, err := a.phaseAndZone(c)
	if err != nil {
		a.Fail(c, err)
		return
	}
	ctx := c.Request.Context()
	cur, phases, err := a.Reports.HoldoutPhases(ctx, phase)
	if err != nil {
		a.Fail(c, err)
		return
	}
	from, to, cohort, aerr := holdoutCohort(c, cur.Holdout, a.Now().In(loc))
	if aerr != nil {
		a.Fail(c, aerr)
		return
	}
	res, err := a.Reports.HoldoutResults(ctx, cur, from, to, cohort, loc)
	if err != nil {
		a.Fail(c, err)
		return
	}
	body := holdoutResultsBody{holdoutPhaseBody: holdoutPhaseToWire(cur), TimeZone: zone, Baseline: res.Groups[0].Key,
		SRM:     expSRMBody{ChiSquare: res.SampleRatio.ChiSquare, DF: res.SampleRatio.DF, P: res.SampleRatio.P, Alarm: res.SampleRatio.SRM},
		Options: expOptionsBody{Alpha: res.Options.Alpha, SRMAlpha: res.Options.SRMAlpha, MinExposed: res.Options.MinExposed, MinClicks: res.Options.MinClicks}}
	if cohort {
		f, t := from.Format(time.DateOnly), to.Format(time.DateOnly)
		body.From, body.To = &f, &t
	}
	for _, g := range res.Groups {
		body.Groups = append(body.Groups, holdoutGroupBody{Group: g.Key, Percent: g.Weight, ExposedUsers: g.ExposedUsers,
			Exposures: g.Exposures, Goals: goalsToWire(g.Goals)})
	}
	for _, p := range phases {
		body.Phases = append(body.Phases, holdoutPhaseToWire(p))
	}
	body.Effects = effectsToWire(res.Effects())
	c.JSON(http.StatusOK, body)
}

// holdoutCohort reads from and to (YYYY-MM-DD, days of the zone of now, both included): cohort
// is false when neither is given (every user of the phase). from defaults to the phase's first
// day, to to today. The dates come back as midnight UTC of the same calendar dates.
func holdoutCohort(c *gin.Context, h popup.Holdout, now time.Time) (from, to time.Time, cohort bool, aerr *httpapi.Error) {
	fromQ, toQ := c.Query("from"), c.Query("to")
	if fromQ == "" && toQ == "" {
		return from, to, false, nil
	}
	day := func(t time.Time) time.Time {
		y, m, d := t.Date()
		return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	}
	from, to = day(h.StartedAt.In(now.Location())), day(now)
	if fromQ != "" {
		if from, aerr = parseDay("from", fromQ); aerr != nil {
			return from, to, true, aerr
		}
	}
	if toQ != "" {
		if to, aerr = parseDay("to", toQ); aerr != nil {
			return from, to, true, aerr
		}
	}
	return from, to, true, checkRange(from, to)
}

// daysWithin is the rows of days whose day is in [from, to] (YYYY-MM-DD).
func daysWithin(days []report.ExperimentDay, from, to string) []report.ExperimentDay {
	var out []report.ExperimentDay
	for _, d := range days {
		if d.Day >= from && d.Day <= to {
			out = append(out, d)
		}
	}
	return out
}
