package results_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/experiment/results"
	"popupsvc/internal/experiment/stats"
	"popupsvc/internal/popup"
	"popupsvc/internal/report"
)

// decided is the results of an experiment (variants a and b, 50/50, and with mode a control)
// with the given users, clicked users and purchasers, and primary goal purchase unless primary
// is "", after Decide.
func decided(t *testing.T, mode popup.ControlMode, primary string, exposed, clicked, converted map[string]int64, in results.VerdictInput) results.Results {
	t.Helper()
	e := experiment(mode)
	e.PrimaryGoal = primary
	res, err := results.Compute(e, days(exposed, clicked), now)
	require.NoError(t, err)
	var counts []report.GoalCount
	for arm, n := range converted {
		counts = append(counts, report.GoalCount{Arm: arm, Goal: "purchase", ConvertedUsers: n, Conversions: n})
	}
	require.NoError(t, results.AddGoals(&res, e, []popup.Goal{purchase, signup}, counts, now))
	results.Decide(&res, in)
	return res
}

func TestVerdictIsTheOneOnThePrimaryGoal(t *testing.T) {
	t.Parallel()
	// a clicks far more, b converts more: the headline, the reason and the leader are b's on
	// purchase, against the goal baseline, in the goal's words.
	res := decided(t, "", "purchase", map[string]int64{"a": 10000, "b": 10000}, map[string]int64{"a": 1500, "b": 500},
		map[string]int64{"a": 500, "b": 650}, results.VerdictInput{Status: popup.ExperimentRunning, GoalName: "Purchase"})
	v := res.Verdict
	assert.Equal(t, "purchase", v.Metric)
	assert.Equal(t, "a", v.Baseline)
	assert.Equal(t, "b", v.Winner)
	assert.Equal(t, "b", v.Leader)
	assert.Equal(t, stats.ReasonSequential, v.Reason)
	assert.InDelta(t, 0.065, v.Rate, 1e-12)
	assert.InDelta(t, 0.05, v.BaselineRate, 1e-12)
	assert.Equal(t, "“b” converts 1.5 points more users to Purchase than “a” (6.5% against 5.0%, +30%): confident — you can ship it.", v.Summary)
	assert.Contains(t, v.Why, "the rate of users converting to Purchase from “a”")
	assert.NotContains(t, v.Summary+v.Why, "click")
}

func TestVerdictWordsEachCase(t *testing.T) {
	t.Parallel()
	shipped := &results.Shipped{Variant: "b", At: time.Date(2026, 11, 30, 14, 5, 0, 0, time.UTC), By: "ana"}
	berlin, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	tests := []struct {
		name      string
		mode      popup.ControlMode
		primary   string
		exposed   map[string]int64
		clicked   map[string]int64
		converted map[string]int64
		in        results.VerdictInput
		want      string // the summary
		wantWhy   string // a part of the reason
	}{
		{name: "clicks, against a falling-through control", mode: popup.ControlFallThrough,
			exposed: map[string]int64{"a": 8000, "b": 8000, "control": 4000}, clicked: map[string]int64{"a": 400, "b": 800, "control": 200},
			want:    "“b” gets 5.0 points more users clicking than the control (10.0% against 5.0%, +100%): confident — you can ship it.",
			wantWhy: "difference in click-through rate from the control"},
		{name: "too few buyers: the minimum is worded for the goal", primary: "purchase",
			exposed: map[string]int64{"a": 10000, "b": 10000}, clicked: map[string]int64{"a": 900, "b": 400}, converted: map[string]int64{"a": 5, "b": 20},
			in:      results.VerdictInput{GoalName: "Purchase"},
			want:    "“b” converts 0.1 points more users to Purchase than “a” so far (0.2% against 0.1%, +300%), but that is not sure yet: about 100,000 more users, about 5 days at today’s rate (20,000 users a day).",
			wantWhy: "30 users who converted to Purchase and 30 who did not"},
		{name: "a goal verdict against a control that shows nothing", mode: popup.ControlNone, primary: "purchase",
			exposed: map[string]int64{"a": 8000, "b": 8000, "control": 4000}, clicked: map[string]int64{"a": 800, "b": 400},
			converted: map[string]int64{"a": 400, "b": 560, "control": 200}, in: results.VerdictInput{GoalName: "Purchase"},
			want:    "“b” converts 2.0 points more users to Purchase than the control (7.0% against 5.0%, +40%): confident — you can ship it.",
			wantWhy: "from the control"},
		{name: "no difference on the goal", primary: "purchase",
			exposed: map[string]int64{"a": 10000, "b": 10000}, clicked: map[string]int64{"a": 900, "b": 400}, converted: map[string]int64{"a": 500, "b": 500},
			want:    "No variant differs from “a” on purchase so far: not enough data to tell them apart.",
			wantWhy: "no arm differs from “a” in the rate of users converting to purchase"},
		{name: "concluded: what was shipped and when", primary: "purchase",
			exposed: map[string]int64{"a": 10000, "b": 10000}, clicked: map[string]int64{"a": 900, "b": 400}, converted: map[string]int64{"a": 500, "b": 650},
			in:   results.VerdictInput{Status: popup.ExperimentConcluded, Shipped: shipped, GoalName: "Purchase", Zone: berlin},
			want: "Concluded on 2026-11-30 15:05 CET by ana: variant “b” was shipped as the popup's content for every user. The verdict on Purchase named it: it converts 1.5 points more users to Purchase than “a” (6.5% against 5.0%, +30%)."},
		{name: "nobody yet", exposed: map[string]int64{}, in: results.VerdictInput{Status: popup.ExperimentDraft},
			want: "No data yet: the experiment has not started."},
		{name: "nobody yet on a draft popup", exposed: map[string]int64{}, in: results.VerdictInput{Status: popup.ExperimentRunning, PopupDraft: true},
			want: "No data yet: nobody has been exposed in phase 2. The popup is a draft: nobody sees it until it is published."},
		{name: "a sample-ratio mismatch", primary: "purchase",
			exposed: map[string]int64{"a": 10000, "b": 8000}, clicked: map[string]int64{"a": 900, "b": 400}, converted: map[string]int64{"a": 500, "b": 650},
			want:    "Do not act on these results: the arms’ users do not match their weights (a sample-ratio mismatch, below). Find the cause first.",
			wantWhy: "sample-ratio mismatch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := decided(t, tt.mode, tt.primary, tt.exposed, tt.clicked, tt.converted, tt.in).Verdict
			assert.Equal(t, tt.want, v.Summary)
			assert.Contains(t, v.Why, tt.wantWhy)
		})
	}
}

func TestVerdictNeedIsTheMetrics(t *testing.T) {
	t.Parallel()
	// a leads on clicks, b on purchase: the estimate, its leader and the days are purchase's.
	res := decided(t, "", "purchase", map[string]int64{"a": 2000, "b": 2000}, map[string]int64{"a": 400, "b": 100},
		map[string]int64{"a": 100, "b": 115}, results.VerdictInput{GoalName: "Purchase"})
	v := res.Verdict
	require.Empty(t, v.Winner)
	require.NotNil(t, v.Need)
	assert.Equal(t, "b", v.Need.Leader)
	assert.Equal(t, "b", v.Leader)
	assert.Positive(t, v.Days)
	assert.Contains(t, v.Summary, "“b” converts 0.8 points more users to Purchase than “a” so far")
}
