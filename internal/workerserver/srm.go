package workerserver

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"popupsvc/internal/experiment/results"
	"popupsvc/internal/popup"
	"popupsvc/internal/report"
)

// srmEvery is how often the sample-ratio check of running experiments is refreshed
// (docs/CONTRACT.md §10 "Results").
const srmEvery = time.Minute

// srmMonitor keeps popup_experiment_srm_alarm and popup_experiment_srm_p_value, per popup, for
// the running experiments: each refresh reads the popups that have an experiment, and each running
// experiment's current phase counts, and computes its results as the results endpoint does. A popup whose experiment
// no longer runs loses its series.
type srmMonitor struct {
	popups func(ctx context.Context) ([]popup.Popup, error)                                                     // the live popups with an experiment (PopupRepo.ListWithExperiments)
	days   func(ctx context.Context, id int64, salt string, loc *time.Location) ([]report.ExperimentDay, error) // a phase's counts
	now    func() time.Time
	log    *slog.Logger
	alarm  *prometheus.GaugeVec
	p      *prometheus.GaugeVec
	shown  map[string]bool // popup ids with series
}

func newSRMMonitor(popups func(context.Context) ([]popup.Popup, error),
	days func(context.Context, int64, string, *time.Location) ([]report.ExperimentDay, error), log *slog.Logger, reg prometheus.Registerer) *srmMonitor {
	m := &srmMonitor{popups: popups, days: days, now: time.Now, log: log, shown: map[string]bool{},
		alarm: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "popup_experiment_srm_alarm",
			Help: "1 when a running experiment's sample-ratio check alarms (p below its srm_alpha, 0.001): users are lost or moved between arms and its results are not to be trusted.",
		}, []string{"popup_id"}),
		p: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "popup_experiment_srm_p_value",
			Help: "The p-value of a running experiment's sample-ratio check (Pearson chi-squared of every arm's exposed users against the weights).",
		}, []string{"popup_id"}),
	}
	reg.MustRegister(m.alarm, m.p)
	return m
}

// refresh recomputes the series of every running experiment. A popup whose counts cannot be read
// keeps its last values; the first such error is returned after the others are done.
func (m *srmMonitor) refresh(ctx context.Context) error {
	ps, err := m.popups(ctx)
	if err != nil {
		return fmt.Errorf("list popups: %w", err)
	}
	now := m.now()
	running := make(map[string]bool, len(ps))
	var first error
	for i := range ps {
		e := ps[i].Experiment
		if !e.Assigning() {
			continue
		}
		id := strconv.FormatInt(ps[i].ID, 10)
		running[id] = true
		days, err := m.days(ctx, ps[i].ID, e.Salt, time.UTC) // the check reads the totals: any zone's days sum to them
		var res results.Results
		if err == nil {
			res, err = results.Compute(e, days, now)
		}
		if err != nil {
			if first == nil {
				first = fmt.Errorf("experiment of popup %s: %w", id, err)
			}
			continue
		}
		alarm := 0.0
		if res.SampleRatio.SRM {
			alarm = 1
		}
		m.alarm.WithLabelValues(id).Set(alarm)
		m.p.WithLabelValues(id).Set(res.SampleRatio.P)
		m.shown[id] = true
	}
	for id := range m.shown {
		if !running[id] {
			m.alarm.DeleteLabelValues(id)
			m.p.DeleteLabelValues(id)
			delete(m.shown, id)
		}
	}
	return first
}

// run refreshes at once, then every interval, until ctx ends.
func (m *srmMonitor) run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := m.refresh(ctx); err != nil && ctx.Err() == nil {
			m.log.Warn("experiment sample-ratio check", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
