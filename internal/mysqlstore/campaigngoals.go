package mysqlstore

import (
	"context"
	"fmt"
	"time"

	"popupsvc/internal/popup"
)

// CampaignGoals returns popup id's conversions on each of goals whose time is in [from, to)
// (docs/CONTRACT.md §8 "Conversions"): a conversion counts when the action log holds an impression
// of the popup by the same user in the goal's window before it, [at − window, at], and counts
// among the clicked ones when it holds a click there too. Every popup shown within the window
// counts the conversion (a conversion is not split or given to the last one alone). Computed when
// read, from the conversion log and the action log: a range whose windows reach before what the
// action log keeps misses those impressions (the caller says so).
// Queries: per goal, a range of the conversion log's (goal_key, event_at) index, each conversion
// probing the action log's (uid, event_at) index twice.
func (r *StatsRepo) CampaignGoals(ctx context.Context, id int64, goals []popup.Goal, from, to time.Time) ([]popup.CampaignGoal, error) {
	out := make([]popup.CampaignGoal, 0, len(goals))
	for _, g := range goals {
		// The window is [exposure, exposure + window): an impression at or before the conversion,
		// less than a window earlier (popup.Goal.Counts).
		const touched = `EXISTS (SELECT 1 FROM popup_action_log a WHERE a.uid = c.uid AND a.popup_id = ? AND a.action = ?
			AND a.event_at <= c.event_at AND a.event_at > c.event_at - INTERVAL ? MICROSECOND)`
		win := g.Window.Microseconds()
		row := r.db.QueryRowContext(ctx, `SELECT COUNT(DISTINCT x.uid), COUNT(*), COALESCE(SUM(x.value), 0),
			COUNT(DISTINCT CASE WHEN x.clicked THEN x.uid END), COALESCE(SUM(x.clicked), 0), COALESCE(SUM(CASE WHEN x.clicked THEN x.value ELSE 0 END), 0)
			FROM (SELECT c.uid, c.value, `+touched+` AS clicked
			      FROM popup_conversion_log c
			      WHERE c.goal_key = ? AND c.event_at >= ? AND c.event_at < ? AND `+touched+`) x`,
			id, "click", win, g.Key, toDB(from), toDB(to), id, "impression", win)
		cg := popup.CampaignGoal{Goal: g}
		if err := row.Scan(&cg.Shown.ConvertedUsers, &cg.Shown.Conversions, &cg.Shown.ValueSum,
			&cg.Clicked.ConvertedUsers, &cg.Clicked.Conversions, &cg.Clicked.ValueSum); err != nil {
			return nil, fmt.Errorf("read popup %d's conversions on %s: %w", id, g.Key, err)
		}
		if g.Value != popup.GoalValueSum {
			cg.Shown.ValueSum, cg.Clicked.ValueSum = 0, 0 // as the experiments count them
		}
		out = append(out, cg)
	}
	return out, nil
}
