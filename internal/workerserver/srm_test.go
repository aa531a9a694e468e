package workerserver

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/event"
	"popupsvc/internal/manage"
	"popupsvc/internal/mysqlstore"
	"popupsvc/internal/popup"
	"popupsvc/internal/testenv"
)

// runningExperiment stores a popup with a running experiment (variants a and b at 40, a control
// at 20 that shows nothing) and returns it.
func runningExperiment(t *testing.T, writes *manage.Service, name string) popup.Popup {
	t.Helper()
	ctx := context.Background()
	admin := popup.Actor{Name: "tester", Role: popup.RoleAdmin}
	p, err := popup.Input{Name: name}.BuildWith(popup.LinkSchemes{})
	require.NoError(t, err)
	p, err = writes.Create(ctx, admin, p)
	require.NoError(t, err)
	p.Experiment = &popup.Experiment{CoveragePercent: 100, Variants: []popup.Variant{{Key: "a", Weight: 40}, {Key: "b", Weight: 40}},
		Control: &popup.Control{Weight: 20, Mode: popup.ControlNone}}
	p, _, err = writes.Update(ctx, admin, p.ID, p, popup.UpdateOptions{})
	require.NoError(t, err)
	p, err = writes.Transition(ctx, admin, p.ID, popup.ExperimentTransition{Action: popup.ChangeExperimentStart}, nil)
	require.NoError(t, err)
	require.True(t, p.Experiment.Assigning())
	return p
}

// exposeUsers writes, as the worker does, one exposure for each of n[arm] users of each arm.
func exposeUsers(t *testing.T, w *mysqlstore.EventWriter, p popup.Popup, n map[string]int) {
	t.Helper()
	at := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	var events []event.Event
	for arm, k := range n {
		for u := range k {
			uid := fmt.Sprintf("%d-%s-%d", p.ID, arm, u)
			events = append(events, event.Event{ID: uid, UID: uid, PopupID: p.ID, Action: event.Impression, At: at, Impressions: 1,
				Arms: []event.ArmRef{{PopupID: p.ID, Salt: p.Experiment.Salt, Arm: arm}}})
		}
	}
	require.NoError(t, w.WriteBatch(context.Background(), events))
}

// gauges reads the series of the gauge name from reg, by popup id.
func gauges(t *testing.T, reg *prometheus.Registry, name string) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "popup_id" {
					out[l.GetValue()] = m.GetGauge().GetValue()
				}
			}
		}
	}
	return out
}

func TestSRMMetricAlarmsOnASkewedExperimentOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.MySQL(t)
	repo := mysqlstore.NewPopupRepo(db)
	writes := manage.New(manage.TxFunc[*mysqlstore.Tx](repo.InTx), time.Now)
	w := mysqlstore.NewEventWriter(db)
	skewed := runningExperiment(t, writes, "skewed")
	even := runningExperiment(t, writes, "even")
	exposeUsers(t, w, skewed, map[string]int{"a": 400, "b": 400, "control": 100}) // the control lost half its users
	exposeUsers(t, w, even, map[string]int{"a": 400, "b": 410, "control": 195})

	plain, err := popup.Input{Name: "no experiment"}.BuildWith(popup.LinkSchemes{})
	require.NoError(t, err)
	_, err = writes.Create(ctx, popup.Actor{Name: "tester", Role: popup.RoleAdmin}, plain)
	require.NoError(t, err)
	listed, err := repo.ListWithExperiments(ctx)
	require.NoError(t, err)
	assert.Len(t, listed, 2, "only the popups with an experiment are read")

	reg := prometheus.NewRegistry()
	m := newSRMMonitor(repo.ListWithExperiments,
		mysqlstore.NewStatsRepo(db).ExperimentDays, slog.New(slog.NewTextHandler(io.Discard, nil)), reg)
	require.NoError(t, m.refresh(ctx))

	id := func(p popup.Popup) string { return strconv.FormatInt(p.ID, 10) }
	alarms, ps := gauges(t, reg, "popup_experiment_srm_alarm"), gauges(t, reg, "popup_experiment_srm_p_value")
	assert.Equal(t, map[string]float64{id(skewed): 1, id(even): 0}, alarms)
	assert.Less(t, ps[id(skewed)], 0.001)
	assert.Greater(t, ps[id(even)], 0.1)

	// A stopped experiment loses its series.
	_, err = writes.Transition(ctx, popup.Actor{Name: "tester", Role: popup.RoleAdmin}, skewed.ID,
		popup.ExperimentTransition{Action: popup.ChangeExperimentStop}, nil)
	require.NoError(t, err)
	require.NoError(t, m.refresh(ctx))
	assert.Equal(t, map[string]float64{id(even): 0}, gauges(t, reg, "popup_experiment_srm_alarm"))
	assert.Len(t, gauges(t, reg, "popup_experiment_srm_p_value"), 1)
}

func TestSRMMonitorRefreshesAtOnceThenOnItsTickerAndStopsWithItsContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	lists := make(chan struct{}, 16)
	m := newSRMMonitor(func(context.Context) ([]popup.Popup, error) {
		lists <- struct{}{}
		return nil, nil
	}, nil, slog.New(slog.NewTextHandler(io.Discard, nil)), prometheus.NewRegistry())
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.run(ctx, 10*time.Millisecond)
	}()
	for range 3 {
		select {
		case <-lists:
		case <-time.After(5 * time.Second):
			t.Fatal("no refresh")
		}
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the monitor did not stop with its context")
	}
}
