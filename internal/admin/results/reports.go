package results

import (
	"context"
	"time"

	"popupsvc/internal/experiment/results"
	"popupsvc/internal/popup"
	"popupsvc/internal/report"
)

// Reports is the slice's read service: the use cases of the experiment and holdout results,
// from the stores to the computed results and verdict (internal/experiment/results), with no
// HTTP in them. The handlers read a request, call one of these and answer.
type Reports struct {
	// Repo reads the popups the reports are of.
	Repo PopupReader
	// ExperimentDays reads experiment results (GET .../experiment/results).
	ExperimentDays ExperimentDays
	// ExperimentGoals reads the goal counts of experiment results (nil: results without goals).
	ExperimentGoals ExperimentGoals
	// Holdout reads the global holdout's phases and cohorts (nil: no holdout results).
	Holdout HoldoutReads
	// Goals lists the goals results are counted on (nil: results without goals).
	Goals GoalLister
	Now   func() time.Time
}

// Experiment is popup id's experiment phase (0: the current one) computed over loc's days, its
// verdict decided; status is the experiment's current status. An earlier phase is found in the
// popup's revisions (results.Phase). A popup without an experiment is errNoExperiment, a phase
// it never had errNoPhase.
func (r *Reports) Experiment(ctx context.Context, id int64, phase int, loc *time.Location) (popup.ExperimentStatus, results.Results, error) {
	stored, err := r.Repo.Get(ctx, id)
	if err != nil {
		return "", results.Results{}, err
	}
	cur := stored.Experiment
	if cur == nil {
		return "", results.Results{}, errNoExperiment
	}
	if phase == 0 {
		phase = cur.Phase
	}
	var history []popup.Revision
	if phase < cur.Phase || cur.Status == popup.ExperimentConcluded {
		if history, err = r.Repo.History(ctx, id); err != nil {
			return "", results.Results{}, err
		}
	}
	exp, ok := results.Phase(cur, history, phase)
	if !ok {
		return "", results.Results{}, errNoPhase
	}
	// The goals before the exposures (goalsThenExposures says why).
	goals, counts, withGoals, err := r.goalCounts(ctx, func(ctx context.Context) ([]report.GoalCount, error) {
		return r.ExperimentGoals.GoalCounts(ctx, id, exp.Salt)
	})
	if err != nil {
		return "", results.Results{}, err
	}
	days, err := r.ExperimentDays.ExperimentDays(ctx, id, exp.Salt, loc)
	if err != nil {
		return "", results.Results{}, err
	}
	now := r.Now()
	res, err := results.Compute(exp, days, now)
	if err != nil {
		return "", results.Results{}, err
	}
	if withGoals {
		if err := results.AddGoals(&res, exp, goals, counts, now); err != nil {
			return "", results.Results{}, err
		}
	}
	vin := results.VerdictInput{Status: cur.Status, PopupDraft: stored.Status == popup.StatusDraft, Shipped: shipped(cur, history), Zone: loc}
	for _, g := range goals {
		if g.Key == res.PrimaryGoal {
			vin.GoalName = g.Name
		}
	}
	results.Decide(&res, vin)
	return cur.Status, res, nil
}

// HoldoutPhases are the holdout's phases, the latest first, and phase n's (0: the latest);
// errNoHoldout when there never was one, errNoHoldoutPhase for a phase it never had.
func (r *Reports) HoldoutPhases(ctx context.Context, n int) (cur report.HoldoutPhase, phases []report.HoldoutPhase, err error) {
	if r.Holdout == nil {
		return cur, nil, errNoHoldout
	}
	if phases, err = r.Holdout.HoldoutPhases(ctx); err != nil {
		return cur, nil, err
	}
	if len(phases) == 0 {
		return cur, nil, errNoHoldout
	}
	cur = phases[0] // the latest first
	if n > 0 {
		i := len(phases) - n // phases are numbered from 1 without gaps
		if i < 0 || i >= len(phases) || phases[i].Phase != n {
			return cur, nil, errNoHoldoutPhase
		}
		cur = phases[i]
	}
	return cur, phases, nil
}

// HoldoutResults are phase cur's groups compared on every goal: over every user of the phase, or with
// cohort only the users it first exposed on the days from..to of loc (both included).
func (r *Reports) HoldoutResults(ctx context.Context, cur report.HoldoutPhase, from, to time.Time, cohort bool, loc *time.Location) (results.HoldoutResults, error) {
	key := cur.PhaseKey()
	// The goals before the exposures (goalsThenExposures says why).
	goals, counts, _, err := r.goalCounts(ctx, func(ctx context.Context) ([]report.GoalCount, error) {
		if cohort {
			// Midnight of the zone's first day to midnight after its last: the users first exposed then.
			bounds := report.DayBounds(from, to, loc)
			return r.Holdout.GoalCountsExposedIn(ctx, popup.HoldoutPopupID, key, bounds[0], bounds[len(bounds)-1])
		}
		return r.ExperimentGoals.GoalCounts(ctx, popup.HoldoutPopupID, key)
	})
	if err != nil {
		return results.HoldoutResults{}, err
	}
	days, err := r.ExperimentDays.ExperimentDays(ctx, popup.HoldoutPopupID, key, loc)
	if err != nil {
		return results.HoldoutResults{}, err
	}
	if cohort {
		days = daysWithin(days, from.Format(time.DateOnly), to.Format(time.DateOnly))
	}
	return results.Holdout(cur.Holdout, days, goals, counts, r.Now())
}

// goalCounts reads the goals and, when there are any, a phase's counts on them (counts: an
// experiment phase's, or a holdout cohort's); withGoals is false when the server has no goal
// stores.
//
// goalsThenExposures: a results route reads the goal counts before the exposures, each in a
// statement of its own. The worker attributes a conversion in the transaction that sees the
// user's exposure (the same batch's or an earlier one's), so exposures read later hold every user
// the counts read earlier name: a batch committed between the reads adds exposures without their
// conversions, never conversions of users not yet exposed (converted users above exposed ones).
func (r *Reports) goalCounts(ctx context.Context, counts func(context.Context) ([]report.GoalCount, error)) (goals []popup.Goal, got []report.GoalCount, withGoals bool, err error) {
	if r.Goals == nil || r.ExperimentGoals == nil {
		return nil, nil, false, nil
	}
	if goals, err = r.Goals.List(ctx); err != nil || len(goals) == 0 {
		return goals, nil, err == nil, err
	}
	got, err = counts(ctx)
	return goals, got, err == nil, err
}
