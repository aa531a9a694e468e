package mysqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"popupsvc/internal/popup"
)

// IngestKeyRepo stores the ingest keys (popup_ingest_key, migration 00021): their hashes, and
// who created and revoked them.
type IngestKeyRepo struct{ db *sql.DB }

// NewIngestKeyRepo returns the ingest keys of db.
func NewIngestKeyRepo(db *sql.DB) *IngestKeyRepo { return &IngestKeyRepo{db: db} }

const ingestKeyColumns = `id, name, key_prefix, created_at, created_by, created_role, revoked_at, COALESCE(revoked_by, ''), COALESCE(revoked_role, '')`

func scanIngestKey(s scanner) (popup.IngestKey, error) {
	var (
		k                popup.IngestKey
		created, revoked string
		revokedAt        sql.NullTime
	)
	if err := s.Scan(&k.ID, &k.Name, &k.Prefix, &k.CreatedAt, &k.CreatedBy, &created, &revokedAt, &k.RevokedBy, &revoked); err != nil {
		return popup.IngestKey{}, err
	}
	k.CreatedAt = k.CreatedAt.UTC()
	k.CreatedRole, _ = popup.ParseRole(created)
	if revokedAt.Valid {
		t := revokedAt.Time.UTC()
		k.RevokedAt = &t
		k.RevokedRole, _ = popup.ParseRole(revoked)
	}
	return k, nil
}

// CreateIngestKey stores a new key with its secret's hash, created by actor at now.
func (r *IngestKeyRepo) CreateIngestKey(ctx context.Context, name, prefix string, hash [32]byte, actor popup.Actor, now time.Time) (popup.IngestKey, error) {
	res, err := r.db.ExecContext(ctx, `INSERT INTO popup_ingest_key (name, key_hash, key_prefix, created_at, created_by, created_role)
		VALUES (?, ?, ?, ?, ?, ?)`, name, hash[:], prefix, now.UTC(), actor.Name, actor.Role.String())
	if err != nil {
		return popup.IngestKey{}, fmt.Errorf("create ingest key: %w", err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return popup.IngestKey{}, fmt.Errorf("create ingest key: %w", err)
	}
	return r.IngestKey(ctx, id)
}

// IngestKey reads key id (popup.ErrIngestKeyNotFound).
func (r *IngestKeyRepo) IngestKey(ctx context.Context, id int64) (popup.IngestKey, error) {
	k, err := scanIngestKey(r.db.QueryRowContext(ctx, `SELECT `+ingestKeyColumns+` FROM popup_ingest_key WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return popup.IngestKey{}, fmt.Errorf("ingest key %d: %w", id, popup.ErrIngestKeyNotFound)
	}
	return k, err
}

// IngestKeys lists every key, revoked ones included, newest first.
func (r *IngestKeyRepo) IngestKeys(ctx context.Context) ([]popup.IngestKey, error) {
	rows, err := r.db.QueryContext(ctx, `SELECT `+ingestKeyColumns+` FROM popup_ingest_key ORDER BY id DESC`)
	if err != nil {
		return nil, fmt.Errorf("list ingest keys: %w", err)
	}
	defer rows.Close()
	out := []popup.IngestKey{}
	for rows.Next() {
		k, err := scanIngestKey(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, rows.Err()
}

// RevokeIngestKey revokes key id by actor at now and returns it; revoking a revoked key changes
// nothing (its first revocation stays recorded).
func (r *IngestKeyRepo) RevokeIngestKey(ctx context.Context, id int64, actor popup.Actor, now time.Time) (popup.IngestKey, error) {
	if _, err := r.db.ExecContext(ctx, `UPDATE popup_ingest_key SET revoked_at = ?, revoked_by = ?, revoked_role = ?
		WHERE id = ? AND revoked_at IS NULL`, now.UTC(), actor.Name, actor.Role.String(), id); err != nil {
		return popup.IngestKey{}, fmt.Errorf("revoke ingest key %d: %w", id, err)
	}
	return r.IngestKey(ctx, id)
}

// ActiveIngestKey reports whether hash is the hash of a key that is not revoked.
func (r *IngestKeyRepo) ActiveIngestKey(ctx context.Context, hash [32]byte) (bool, error) {
	var n int
	err := r.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM popup_ingest_key WHERE key_hash = ? AND revoked_at IS NULL`, hash[:]).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("check ingest key: %w", err)
	}
	return n > 0, nil
}
