// Package results is the admin slice of the reports: a popup's results over days (stats, its
// CSV, its conversions on the goals), every popup's totals, an experiment phase's results and
// verdict, and the global holdout's results. They share one wire vocabulary (a goal's result,
// the sample ratio check, the options) and one rule for the days they count (the reporting
// time zone, or tz), which is why they are one slice.
package results

import (
	"context"
	"time"

	"github.com/gin-gonic/gin"

	"popupsvc/internal/httpapi"
	"popupsvc/internal/popup"
)

// API serves the reports. Every route is a read: every operator's.
type API struct {
	*httpapi.Shared
	// Reports are the experiment and holdout results' read service; its popups and goals serve
	// the stats too.
	Reports *Reports
	Stats   StatsReader // GET .../stats: daily results per popup
	// CampaignGoals reads a popup's conversions for its results (nil: results without them).
	CampaignGoals CampaignGoals
	// Zones knows the team's reporting time zone.
	Zones Zones
	// LogRetention is POPUP_ACTION_LOG_RETENTION: unique users are counted for the days the
	// action log still keeps whole (0: its default).
	LogRetention time.Duration
}

// Register adds the report routes.
func (a *API) Register(g *gin.RouterGroup) {
	g.GET("/popups/:id/stats", a.popupStats)
	g.GET("/popups/:id/stats.csv", a.popupStatsCSV)
	g.GET("/stats", a.allStats)
	g.GET("/popups/:id/experiment/results", a.experimentResults)
	g.GET("/holdout/results", a.holdoutResults)
}

// PopupReader reads a popup and its revisions (mysqlstore.PopupRepo).
type PopupReader interface {
	Get(ctx context.Context, id int64) (popup.Popup, error)
	History(ctx context.Context, id int64) ([]popup.Revision, error)
}

// GoalLister lists the goals (manage.Goals).
type GoalLister interface {
	List(ctx context.Context) ([]popup.Goal, error)
}

// Zones knows the team's reporting time zone (the settings slice).
type Zones interface {
	ReportingTimeZone(ctx context.Context) (string, error)
}
