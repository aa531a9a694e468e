package apiserver

import (
	"context"
	"time"

	"popupsvc/internal/health"
	"popupsvc/internal/mysqlstore"
	"popupsvc/internal/popup"
)

// gatedIngestKeys is the ingest key store behind the MySQL gate: the admin routes' writes and
// reads (httpapi.IngestKeyStore) and the conversion routes' check (httpapi.IngestKeyChecker),
// which reads MySQL per request, so a revocation holds from its commit on.
type gatedIngestKeys struct {
	repo *mysqlstore.IngestKeyRepo
	dep  *health.Dep
}

func (g gatedIngestKeys) CreateIngestKey(ctx context.Context, name, prefix string, hash [32]byte, actor popup.Actor, now time.Time) (popup.IngestKey, error) {
	return gate(g.dep, func() (popup.IngestKey, error) { return g.repo.CreateIngestKey(ctx, name, prefix, hash, actor, now) })
}

func (g gatedIngestKeys) IngestKeys(ctx context.Context) ([]popup.IngestKey, error) {
	return gate(g.dep, func() ([]popup.IngestKey, error) { return g.repo.IngestKeys(ctx) })
}

func (g gatedIngestKeys) RevokeIngestKey(ctx context.Context, id int64, actor popup.Actor, now time.Time) (popup.IngestKey, error) {
	return gate(g.dep, func() (popup.IngestKey, error) { return g.repo.RevokeIngestKey(ctx, id, actor, now) })
}

func (g gatedIngestKeys) ActiveIngestKey(ctx context.Context, hash [32]byte) (bool, error) {
	return gate(g.dep, func() (bool, error) { return g.repo.ActiveIngestKey(ctx, hash) })
}
