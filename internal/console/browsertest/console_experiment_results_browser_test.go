package browsertest

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/apiserver/apitest"
	"popupsvc/internal/mysqlstore"
)

// The experiment results page (docs/CONTRACT.md §10 "Results", issue 23) over known counts written
// straight into popup_experiment_daily: the arms as the API computes them, the days, the phase
// choice, the interval chart's text, and the red sample-ratio alarm.

// armsCounts are the known counts of one arm, written straight into popup_experiment_daily.
type knownDay struct {
	arm                          string
	day                          string
	exposedUsers, exposures      int
	clickedUsers, clicks, closes int
}

func insertExperimentDays(t *testing.T, dsn string, popupID int64, salt string, rows []knownDay) {
	t.Helper()
	args := make([][]any, len(rows))
	for i, r := range rows {
		args[i] = []any{popupID, salt, r.arm, r.day, r.exposedUsers, r.exposures, r.clickedUsers, r.clicks, r.closes}
	}
	execEach(t, dsn, `INSERT INTO popup_experiment_daily (popup_id, salt, arm, day, exposed_users, exposures, clicked_users, clicks, closes)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, args)
}

// execEach runs statement once with each of args on the MySQL of dsn: known rows written straight
// into the tables the worker writes.
func execEach(t *testing.T, dsn, statement string, args [][]any) {
	t.Helper()
	ctx := context.Background()
	db, err := mysqlstore.Open(ctx, dsn, 2)
	require.NoError(t, err)
	defer db.Close()
	for _, a := range args {
		_, err := db.ExecContext(ctx, statement, a...)
		require.NoError(t, err)
	}
}

// experimentPopup creates a popup with a running experiment of arms a and b at 50% each and
// returns its id and the phase's salt.
func experimentPopup(t *testing.T, in *apitest.Instance, name string) (int64, string) {
	t.Helper()
	id := in.CreatePopup(t, map[string]any{"name": name, "status": "active", "title": "Own",
		"experiment": map[string]any{"variants": []map[string]any{{"key": "a", "weight": 50, "title": "A"}, {"key": "b", "weight": 50, "title": "B"}}}})

	res := in.AdminDo(t, http.MethodPost, "/admin/v1/popups/"+apitest.Itoa(id)+"/experiment/start", nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	return id, res.Body["experiment"].(map[string]any)["salt"].(string)
}

// pctText is the page's rendering of a rate: two decimals, in percent.
func pctText(v any, signed bool) string {
	x, ok := v.(float64)
	if !ok {
		return "—"
	}
	s := fmt.Sprintf("%.2f%%", x*100)
	if signed && x > 0 {
		s = "+" + s
	}
	return s
}

// pointsText is the page's rendering of a difference of rates: percentage points, signed.
func pointsText(v any) string {
	x, ok := v.(float64)
	if !ok {
		return "—"
	}
	s := fmt.Sprintf("%.2f points", x*100)
	if x > 0 {
		s = "+" + s
	}
	return s
}

func pointsCI(v any) string {
	ci, ok := v.([]any)
	if !ok || len(ci) != 2 {
		return "—"
	}
	return "[" + pointsText(ci[0]) + ", " + pointsText(ci[1]) + "]"
}

func ciText(v any, signed bool) string {
	ci, ok := v.([]any)
	if !ok || len(ci) != 2 {
		return "—"
	}
	return "[" + pctText(ci[0], signed) + ", " + pctText(ci[1], signed) + "]"
}

func TestConsoleExperimentResults(t *testing.T) {
	t.Parallel()
	cfg := apitest.Config(t)
	in := apitest.Start(t, cfg, nil)

	// phase 1 of a fair experiment: b clicks more; then a new phase (weights change), so the page
	// opens on the empty phase 2 and phase 1 is one choice away
	// days of the phase: today and yesterday (UTC), as the worker would have counted them
	today := time.Now().UTC().Format(time.DateOnly)
	yesterday := time.Now().UTC().AddDate(0, 0, -1).Format(time.DateOnly)
	fair, salt1 := experimentPopup(t, in, "fair test")
	insertExperimentDays(t, cfg.MySQLDSN, fair, salt1, []knownDay{
		{"a", yesterday, 600, 700, 30, 34, 100}, {"a", today, 400, 500, 20, 22, 80},
		{"b", yesterday, 590, 690, 50, 60, 90}, {"b", today, 410, 480, 40, 45, 70},
	})
	p := in.AdminDo(t, http.MethodGet, "/admin/v1/popups/"+apitest.Itoa(fair), nil).Body
	e := p["experiment"].(map[string]any)
	e["variants"].([]any)[0].(map[string]any)["weight"] = 60
	e["variants"].([]any)[1].(map[string]any)["weight"] = 40
	res := in.AdminDo(t, http.MethodPut, "/admin/v1/popups/"+apitest.Itoa(fair), p)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	require.Equal(t, 2.0, res.Body["experiment"].(map[string]any)["phase"])

	b := newBrowser(t, in)
	b.signIn()
	b.openPopup(fair, 3)
	b.run(chromedp.Click("#experiment-results-link", chromedp.ByQuery))
	b.waitFor(`location.hash === '#/popups/` + apitest.Itoa(fair) + `/experiment' && document.querySelector('#phase-select')`)
	assert.Equal(t, "2", b.value("#phase-select"), "the current phase first")
	b.fill("#phase-select", "1")
	b.waitFor(`location.hash.endsWith('?phase=1') && document.querySelector('#experiment-meta') && document.querySelector('#experiment-meta').textContent.startsWith('Phase 1,')`)

	want := in.AdminDo(t, http.MethodGet, "/admin/v1/popups/"+apitest.Itoa(fair)+"/experiment/results?phase=1", nil)
	require.Equal(t, http.StatusOK, want.Status, want.Raw)
	for _, raw := range want.Body["arms"].([]any) {
		a := raw.(map[string]any)
		var cells []string
		b.eval(`[...document.querySelectorAll('#arms-table tr[data-arm="`+a["key"].(string)+`"] td')].map(td => td.textContent)`, &cells)
		require.Len(t, cells, 14, a["key"])
		assert.Equal(t, []string{
			fmt.Sprint(a["exposed_users"]), fmt.Sprint(a["clicked_users"]), pctText(a["ctr"], false), ciText(a["ctr_ci"], false),
			pointsText(a["difference"]), pointsCI(a["difference_ci"]), pctText(a["lift"], true), ciText(a["lift_ci"], true),
		}, cells[1:9], "arm %s as the API answers it", a["key"])
	}
	var cells []string
	b.eval(`[...document.querySelectorAll('#arms-table tr[data-arm="b"] td')].map(td => td.textContent)`, &cells)
	assert.Equal(t, []string{"50%", "1000", "90", "9.00%"}, cells[:4], "b: the known counts summed over the days")
	b.eval(`[...document.querySelectorAll('#arms-table tr[data-arm="a"] td')].map(td => td.textContent)`, &cells)
	assert.Equal(t, []string{"50%", "1000", "50", "5.00%"}, cells[:4], "a: the known counts")
	assert.Equal(t, []string{"1200", "56", "180"}, cells[11:], "a: exposures, clicks, closes")
	var days int
	b.eval(`document.querySelectorAll('#days-table tbody tr').length`, &days)
	assert.Equal(t, 4, days)
	assert.Contains(t, b.text(`#days-table tr[data-day="`+today+`"][data-arm="b"]`), "410")
	assert.Contains(t, b.text("#srm"), "Sample ratio: OK")
	if winner, _ := want.Body["verdict"].(map[string]any)["winner"].(string); winner != "" {
		assert.Contains(t, b.text("#verdict"), "Winner on clicks: variant “"+winner+"”")
	} else {
		assert.Contains(t, b.text("#verdict"), "No winner on clicks")
	}
	assert.NotEmpty(t, b.text("#verdict-why"))
	var alt string
	b.eval(`document.getElementById('chart-ctr-desc').textContent`, &alt)
	assert.Contains(t, alt, "b: 9.00% ", "the chart's text alternative names the numbers")
	b.axeCheck("experiment results")

	// a sample-ratio mismatch: 1000 against 700 at 50/50 is a red alarm, and no winner
	skewed, salt := experimentPopup(t, in, "skewed test")
	insertExperimentDays(t, cfg.MySQLDSN, skewed, salt, []knownDay{
		{"a", today, 1000, 1100, 40, 45, 100}, {"b", today, 700, 760, 70, 75, 60},
	})
	b.run(chromedp.Navigate(b.origin + "/admin/ui/#/popups/" + apitest.Itoa(skewed) + "/experiment"))
	b.waitFor(`document.title.startsWith('Experiment results: skewed test') && document.querySelector('#arms-table tr[data-arm="b"]')`)
	assert.Equal(t, "alert", b.attr("#srm", "role"))
	assert.Contains(t, b.attr("#srm", "class"), "srm-alarm")
	assert.Contains(t, b.text("#srm"), "Sample-ratio mismatch")
	assert.Contains(t, b.text("#verdict"), "No winner")
	assert.Contains(t, b.text("#verdict-why"), "sample-ratio mismatch")
	assert.False(t, b.has("#phase-select"), "one phase: no phase choice")
	b.axeCheck("experiment results with an SRM alarm")
	b.shot("experiment-results-srm", "")
}

// knownGoal is the known counts of one arm on one goal, written straight into popup_experiment_goal.
type knownGoal struct {
	arm, goal                   string
	convertedUsers, conversions int
	valueSum, valueSqSum        float64
}

func insertGoalCounts(t *testing.T, dsn string, popupID int64, salt string, rows []knownGoal) {
	t.Helper()
	args := make([][]any, len(rows))
	for i, r := range rows {
		args[i] = []any{popupID, salt, r.arm, r.goal, r.convertedUsers, r.conversions, r.valueSum, r.valueSqSum}
	}
	execEach(t, dsn, `INSERT INTO popup_experiment_goal (popup_id, salt, arm, goal_key, converted_users, conversions, value_sum, value_sq_sum)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, args)
}

// TestConsoleExperimentGoalCharts: the results page charts each goal per arm, its conversion rate
// and its difference from the goal baseline (the control) with their intervals, over known counts
// written straight into the tables the worker writes; the charts' text alternatives carry the
// numbers the API answers, the goal tables stay, and axe passes.
func TestConsoleExperimentGoalCharts(t *testing.T) {
	t.Parallel()
	cfg := apitest.Config(t)
	in := apitest.Start(t, cfg, nil)
	for _, g := range []map[string]any{{"key": "purchase", "name": "Purchase", "value": "sum"}, {"key": "signup", "name": "Sign-up"}} {
		res := in.AdminDo(t, http.MethodPost, "/admin/v1/goals", g)
		require.Equal(t, http.StatusCreated, res.Status, res.Raw)
	}
	id := in.CreatePopup(t, map[string]any{"name": "goal charts", "status": "active", "title": "Own", "experiment": map[string]any{
		"primary_goal": "purchase", "control": map[string]any{"weight": 20, "mode": "none"},
		"variants": []map[string]any{{"key": "a", "weight": 40, "title": "A"}, {"key": "b", "weight": 40, "title": "B"}}}})

	res := in.AdminDo(t, http.MethodPost, "/admin/v1/popups/"+apitest.Itoa(id)+"/experiment/start", nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	salt := res.Body["experiment"].(map[string]any)["salt"].(string)
	today := time.Now().UTC().Format(time.DateOnly)
	insertExperimentDays(t, cfg.MySQLDSN, id, salt, []knownDay{
		{"a", today, 2000, 2300, 100, 120, 400}, {"b", today, 2000, 2250, 110, 130, 380}, {"control", today, 1000, 1000, 0, 0, 0},
	})
	insertGoalCounts(t, cfg.MySQLDSN, id, salt, []knownGoal{
		{"a", "purchase", 70, 75, 2100, 70000}, {"b", "purchase", 130, 140, 4100, 140000}, {"control", "purchase", 40, 41, 1150, 36000},
		{"a", "signup", 200, 200, 0, 0}, {"b", "signup", 190, 190, 0, 0}, {"control", "signup", 95, 95, 0, 0},
	})

	b := newBrowser(t, in)
	b.signIn()
	b.run(chromedp.Navigate(b.origin + "/admin/ui/#/popups/" + apitest.Itoa(id) + "/experiment"))
	b.waitFor(`document.querySelector('#chart-goal-signup-diff')`)

	want := in.AdminDo(t, http.MethodGet, "/admin/v1/popups/"+apitest.Itoa(id)+"/experiment/results", nil)
	require.Equal(t, http.StatusOK, want.Status, want.Raw)
	require.Equal(t, "control", want.Body["goal_baseline"])
	for k, goal := range []string{"purchase", "signup"} {
		var rates, diffs []string
		for _, raw := range want.Body["arms"].([]any) {
			a := raw.(map[string]any)
			g := a["goals"].([]any)[k].(map[string]any)
			require.Equal(t, goal, g["goal"])
			rates = append(rates, a["key"].(string)+": "+pctText(g["rate"], false)+" "+ciText(g["rate_ci"], false))
			if g["difference"] != nil {
				diffs = append(diffs, a["key"].(string)+": "+pctText(g["difference"], true)+" "+ciText(g["difference_ci"], true))
			}
		}
		require.Len(t, diffs, 2, "the variants against the control")
		var alt string
		b.eval(`document.getElementById('chart-goal-`+goal+`-rate-desc').textContent`, &alt)
		assert.Equal(t, strings.Join(rates, "; "), alt, "goal %s: the rate chart's text alternative is the API's numbers", goal)
		b.eval(`document.getElementById('chart-goal-`+goal+`-diff-desc').textContent`, &alt)
		assert.Equal(t, strings.Join(diffs, "; "), alt, "goal %s: the difference chart's text alternative is the API's numbers", goal)
		var marks []string
		b.eval(`[...document.querySelectorAll('#chart-goal-`+goal+`-rate g[data-arm]')].map(g => g.getAttribute('data-arm'))`, &marks)
		assert.Equal(t, []string{"a", "b", "control"}, marks, "goal %s: one interval per arm, the control's included", goal)
		b.eval(`[...document.querySelectorAll('#chart-goal-`+goal+`-diff g[data-arm]')].map(g => g.getAttribute('data-arm'))`, &marks)
		assert.Equal(t, []string{"a", "b"}, marks, "goal %s: the baseline has no difference", goal)
		assert.Equal(t, "chart-goal-"+goal+"-rate-cap", b.attr("#chart-goal-"+goal+"-rate svg", "aria-labelledby"))
		assert.True(t, b.has("#goal-table-"+goal), "goal %s: the table stays beside its charts", goal)
	}
	assert.Contains(t, b.text("#chart-goal-purchase-rate figcaption"), "Goal purchase: conversion rate by arm")
	b.axeCheck("experiment results with goal charts")
	b.shot("experiment-results-goals", "#goals")
}
