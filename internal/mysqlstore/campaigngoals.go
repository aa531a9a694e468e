package mysqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"popupsvc/internal/popup"
	"popupsvc/internal/report"
)

// CampaignGoals returns popup id's conversions on each of goals whose time is in [from, to)
// (docs/CONTRACT.md §8 "Conversions"): a conversion counts when the action log holds an impression
// of the popup by the same user in the goal's window before it, [at − window, at], and counts
// among the clicked ones when it holds a click there too. Every popup shown within the window
// counts the conversion (a conversion is not split or given to the last one alone). Computed when
// read, from the conversion log and the action log: a range whose windows reach before what the
// action log keeps misses those impressions (the caller says so).
// With a value cap, each user's value (the sum of their values counted) is capped in the capped
// sums. Queries: per goal, a range of the conversion log's (goal_key, event_at) index, each conversion
// probing the action log's (uid, event_at) index twice.
func (r *StatsRepo) CampaignGoals(ctx context.Context, id int64, goals []popup.Goal, from, to time.Time) ([]report.CampaignGoal, error) {
	out := make([]report.CampaignGoal, 0, len(goals))
	for _, g := range goals {
		// The window is [exposure, exposure + window): an impression at or before the conversion,
		// less than a window earlier (popup.Goal.Counts).
		const touched = `EXISTS (SELECT 1 FROM popup_action_log a WHERE a.uid = c.uid AND a.popup_id = ? AND a.action = ?
			AND a.event_at <= c.event_at AND a.event_at > c.event_at - INTERVAL ? MICROSECOND)`
		win := g.Window.Microseconds()
		// Per user first (y), so that each user's value can be capped: LEAST with a NULL cap is
		// NULL, and so is its SUM.
		var cap any
		if g.Value == popup.GoalValueSum && g.ValueCap != nil {
			cap = *g.ValueCap
		}
		row := r.db.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(SUM(y.n), 0), COALESCE(SUM(y.v), 0),
			COALESCE(SUM(y.cn > 0), 0), COALESCE(SUM(y.cn), 0), COALESCE(SUM(y.cv), 0),
			SUM(LEAST(y.v, ?)), SUM(CASE WHEN y.cn > 0 THEN LEAST(y.cv, ?) ELSE 0 END)
			FROM (SELECT x.uid, COUNT(*) AS n, SUM(x.value) AS v, SUM(x.clicked) AS cn, SUM(CASE WHEN x.clicked THEN x.value ELSE 0 END) AS cv
			      FROM (SELECT c.uid, c.value, `+touched+` AS clicked
			            FROM popup_conversion_log c
			            WHERE c.goal_key = ? AND c.event_at >= ? AND c.event_at < ? AND `+touched+`) x
			      GROUP BY x.uid) y`,
			cap, cap, id, "click", win, g.Key, toDB(from), toDB(to), id, "impression", win)
		cg := report.CampaignGoal{Goal: g}
		var shownCapped, clickedCapped sql.NullFloat64
		if err := row.Scan(&cg.Shown.ConvertedUsers, &cg.Shown.Conversions, &cg.Shown.ValueSum,
			&cg.Clicked.ConvertedUsers, &cg.Clicked.Conversions, &cg.Clicked.ValueSum, &shownCapped, &clickedCapped); err != nil {
			return nil, fmt.Errorf("read popup %d's conversions on %s: %w", id, g.Key, err)
		}
		if cap != nil {
			cg.Shown.ValueSumCapped = &shownCapped.Float64 // 0 without a converted user
			cg.Clicked.ValueSumCapped = &clickedCapped.Float64
		}
		if g.Value != popup.GoalValueSum {
			cg.Shown.ValueSum, cg.Clicked.ValueSum = 0, 0 // as the experiments count them
		}
		out = append(out, cg)
	}
	return out, nil
}
