package apiserver

import (
	"context"

	"popupsvc/internal/health"
	"popupsvc/internal/mysqlstore"
	"popupsvc/internal/popup"
	"popupsvc/internal/privacy"
)

// gatedPrivacy is the privacy repository behind the MySQL gate, for what popup-api does with it:
// record erasure requests, read their status and read a user's rows for an export (popup-worker
// runs the erasures, on the repository itself).
type gatedPrivacy struct {
	*mysqlstore.PrivacyRepo
	dep *health.Dep
}

func (g gatedPrivacy) Request(ctx context.Context, r privacy.Request) (string, error) {
	return gate(g.dep, func() (string, error) { return g.PrivacyRepo.Request(ctx, r) })
}

func (g gatedPrivacy) Erasure(ctx context.Context, id string) (privacy.Erasure, error) {
	return gate(g.dep, func() (privacy.Erasure, error) { return g.PrivacyRepo.Erasure(ctx, id) })
}

func (g gatedPrivacy) UserStateRows(ctx context.Context, uid string) (map[int64]popup.PopupState, error) {
	return gate(g.dep, func() (map[int64]popup.PopupState, error) { return g.PrivacyRepo.UserStateRows(ctx, uid) })
}

func (g gatedPrivacy) Actions(ctx context.Context, uid string) ([]privacy.Action, error) {
	return gate(g.dep, func() ([]privacy.Action, error) { return g.PrivacyRepo.Actions(ctx, uid) })
}

func (g gatedPrivacy) Conversions(ctx context.Context, uid string) ([]privacy.Conversion, error) {
	return gate(g.dep, func() ([]privacy.Conversion, error) { return g.PrivacyRepo.Conversions(ctx, uid) })
}

func (g gatedPrivacy) ExperimentRows(ctx context.Context, uid string) ([]privacy.Experiment, error) {
	return gate(g.dep, func() ([]privacy.Experiment, error) { return g.PrivacyRepo.ExperimentRows(ctx, uid) })
}

func (g gatedPrivacy) GoalRows(ctx context.Context, uid string) ([]privacy.GoalAttribution, error) {
	return gate(g.dep, func() ([]privacy.GoalAttribution, error) { return g.PrivacyRepo.GoalRows(ctx, uid) })
}

func (g gatedPrivacy) UploadRows(ctx context.Context, uid string) ([]privacy.UploadRow, error) {
	return gate(g.dep, func() ([]privacy.UploadRow, error) { return g.PrivacyRepo.UploadRows(ctx, uid) })
}

func (g gatedPrivacy) KeptRows(ctx context.Context, uid string) ([]privacy.Kept, error) {
	return gate(g.dep, func() ([]privacy.Kept, error) { return g.PrivacyRepo.KeptRows(ctx, uid) })
}
