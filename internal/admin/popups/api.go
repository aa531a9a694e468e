// Package popups is the admin slice of the popups: their writes (create, update, archive,
// rollback, the experiment's transitions, import, the translations table), their reads (list,
// history, audit, export), the previews that explain a decision, and the popup's admin wire
// shape, which all of these carry.
package popups

import (
	"context"
	"net/http"

	"github.com/gin-gonic/gin"

	"popupsvc/internal/decide"
	"popupsvc/internal/httpapi"
	"popupsvc/internal/popup"
	"popupsvc/internal/snapshot"
)

// API serves the popups.
type API struct {
	*httpapi.Shared
	Repo      PopupRepo
	Snapshots *snapshot.Holder
	Decider   *decide.Decider // the preview explains its decisions
	// ExperimentDays reads the users an experiment phase counted (the reassignment preview).
	ExperimentDays UserArms
	// Links is the POPUP_LINK_SCHEMES allow-list of link_url and buttons[].link_url; the zero
	// value allows http and https.
	Links popup.LinkSchemes
}

// UserArms reads the users an experiment phase counted (mysqlstore.StatsRepo).
type UserArms interface {
	// ExperimentUserArms calls each with every user a phase counted and the arm it counted them in.
	ExperimentUserArms(ctx context.Context, popupID int64, salt string, each func(uid, arm string)) error
}

// Register adds the popup routes. Reads (GET, and the previews, which record nothing) are
// every operator's. Each write route has the least role any of its requests needs as a guard; a
// popup write's own role (a draft that stays a draft is an editor's, anything live a
// publisher's) is checked in the write, against the stored popup locked in its transaction
// (PopupRepo, manage).
func (a *API) Register(g *gin.RouterGroup) {
	var (
		editor    = a.Require(popup.RoleEditor, "writing popups")
		publisher = func(what string) gin.HandlerFunc { return a.Require(popup.RolePublisher, what) }
	)
	g.POST("/popups", editor, a.create)
	g.GET("/popups", a.list)
	g.GET("/popups/:id", a.get)
	g.PUT("/popups/:id", editor, a.update)
	g.DELETE("/popups/:id", publisher("archiving a popup"), a.archive)
	g.GET("/popups/:id/translations.csv", a.getTranslationsCSV)
	g.PUT("/popups/:id/translations.csv", editor, a.putTranslationsCSV)
	g.GET("/popups/:id/history", a.history)
	g.POST("/popups/:id/rollback", publisher("rolling back a popup"), a.rollback)
	g.POST("/popups/:id/experiment/start", editor, a.transition(popup.ChangeExperimentStart))
	g.POST("/popups/:id/experiment/stop", editor, a.transition(popup.ChangeExperimentStop))
	g.POST("/popups/:id/experiment/conclude", editor, a.transition(popup.ChangeExperimentConclude))
	g.POST("/popups/:id/experiment/reassignment", a.experimentReassignment) // a read: it records nothing
	g.GET("/audit", a.audit)
	g.GET("/export", a.export)
	g.POST("/import", editor, a.importPopups)
	g.GET("/preview", a.preview)
	g.POST("/preview", a.previewDraft)
	g.POST("/cache/reload", a.Require(popup.RoleAdmin, "reloading the cache"), a.reload)
}

func (a *API) reload(c *gin.Context) {
	v, err := a.Reload(c.Request.Context())
	if err != nil {
		a.Fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"config_version": v})
}
