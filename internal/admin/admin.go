package admin

import (
	"context"
	"time"

	"popupsvc/internal/admin/audiences"
	"popupsvc/internal/admin/audit"
	"popupsvc/internal/admin/goals"
	"popupsvc/internal/admin/ingestkeys"
	"popupsvc/internal/admin/popups"
	"popupsvc/internal/admin/results"
	"popupsvc/internal/admin/settings"
	"popupsvc/internal/admin/users"
	"popupsvc/internal/decide"
	"popupsvc/internal/httpapi"
	"popupsvc/internal/popup"
	"popupsvc/internal/snapshot"
)

// Deps are the stores and services the slices consume, built by the server's wiring
// (internal/apiserver). A nil optional port turns its feature's extras off, as each slice says.
type Deps struct {
	Repo      popups.PopupRepo
	Users     users.UserStates
	Snapshots *snapshot.Holder
	Decider   *decide.Decider
	Links     popup.LinkSchemes
	// Stats reads the results; ExperimentDays, ExperimentGoals and CampaignGoals are the
	// experiment and campaign counts (mysqlstore.StatsRepo, all four).
	Stats           results.StatsReader
	ExperimentDays  results.ExperimentDays
	ExperimentGoals results.ExperimentGoals
	CampaignGoals   results.CampaignGoals
	Holdout         results.HoldoutReads
	Settings        settings.SettingsStore
	// DefaultPacing is the pacing until the team sets one (config.Config.DefaultPacing).
	DefaultPacing popup.Pacing
	// LogRetention is POPUP_ACTION_LOG_RETENTION (results.API.LogRetention).
	LogRetention time.Duration
	Audiences    audiences.AudienceService
	AudienceSets audiences.AudienceSets
	Erasures     users.Erasures
	Exports      users.Exports
	Goals        goals.GoalService
	GoalsChanged func(ctx context.Context) error
	IngestKeys   ingestkeys.IngestKeyStore
	// Changes are the audit log's changes besides popups'.
	Changes audit.ChangeLog
}

// New is every admin slice over d, each given sh. Adding a feature is one line here.
func New(sh *httpapi.Shared, d Deps) []httpapi.Slice {
	st := &settings.API{Shared: sh, Settings: d.Settings, DefaultPacing: d.DefaultPacing}
	var goalList results.GoalLister
	if d.Goals != nil {
		goalList = d.Goals
	}
	return []httpapi.Slice{
		&popups.API{Shared: sh, Repo: d.Repo, Snapshots: d.Snapshots, Decider: d.Decider, ExperimentDays: d.ExperimentDays, Links: d.Links},
		&results.API{Shared: sh, Stats: d.Stats, CampaignGoals: d.CampaignGoals, Zones: st, LogRetention: d.LogRetention,
			Reports: &results.Reports{Repo: d.Repo, ExperimentDays: d.ExperimentDays, ExperimentGoals: d.ExperimentGoals,
				Holdout: d.Holdout, Goals: goalList, Now: sh.Now}},
		&audiences.API{Shared: sh, Audiences: d.Audiences, AudienceSets: d.AudienceSets},
		&goals.API{Shared: sh, Goals: d.Goals, GoalsChanged: d.GoalsChanged},
		st,
		&users.API{Shared: sh, Users: d.Users, Erasures: d.Erasures, Exports: d.Exports},
		&ingestkeys.API{Shared: sh, IngestKeys: d.IngestKeys},
		&audit.API{Shared: sh, Changes: d.Changes},
	}
}
