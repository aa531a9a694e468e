// Package ingestkeys is the admin slice of the ingest keys (docs/CONTRACT.md §14, "Ingest"):
// their routes, their store port and their wire shape.
package ingestkeys

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"popupsvc/internal/httpapi"
	"popupsvc/internal/popup"
)

// Ingest keys on the admin API (docs/CONTRACT.md §14, "Ingest"): an admin creates a key for a
// backend that reports conversions with a value, reads the list (never a secret), and revokes a
// key. The secret is answered once, at creation; the store keeps its SHA-256. Every write is
// recorded in the key's row (who and when) and logged without the secret.

// API serves the ingest keys.
type API struct {
	*httpapi.Shared
	IngestKeys IngestKeyStore
}

// Register adds the ingest key routes: managing them is an admin's, as secrets are.
func (a *API) Register(g *gin.RouterGroup) {
	admin := func(what string) gin.HandlerFunc { return a.Require(popup.RoleAdmin, what) }
	g.POST("/ingest-keys", admin("creating an ingest key"), a.createIngestKey)
	g.GET("/ingest-keys", admin("listing ingest keys"), a.listIngestKeys)
	g.DELETE("/ingest-keys/:id", admin("revoking an ingest key"), a.revokeIngestKey)
}

// IngestKeyStore keeps the ingest keys (mysqlstore.IngestKeyRepo).
type IngestKeyStore interface {
	CreateIngestKey(ctx context.Context, name, prefix string, hash [32]byte, actor popup.Actor, now time.Time) (popup.IngestKey, error)
	IngestKeys(ctx context.Context) ([]popup.IngestKey, error)
	RevokeIngestKey(ctx context.Context, id int64, actor popup.Actor, now time.Time) (popup.IngestKey, error)
}

// ingestKeyWire is an ingest key on the wire; Key, the secret, only in a create's answer.
type ingestKeyWire struct {
	ID          int64      `json:"id"`
	Name        string     `json:"name"`
	Prefix      string     `json:"prefix"`
	CreatedAt   time.Time  `json:"created_at"`
	CreatedBy   string     `json:"created_by"`
	CreatedRole string     `json:"created_role"`
	RevokedAt   *time.Time `json:"revoked_at"`
	RevokedBy   *string    `json:"revoked_by"`
	Key         string     `json:"key,omitempty"`
}

func ingestKeyToWire(k popup.IngestKey) ingestKeyWire {
	w := ingestKeyWire{ID: k.ID, Name: k.Name, Prefix: k.Prefix, CreatedAt: k.CreatedAt, CreatedBy: k.CreatedBy,
		CreatedRole: k.CreatedRole.String(), RevokedAt: k.RevokedAt}
	if k.RevokedAt != nil {
		by := k.RevokedBy
		w.RevokedBy = &by
	}
	return w
}

var errIngestKeyID = httpapi.BadRequest("invalid_ingest_key_id", "ingest key id must be a positive integer")

func (a *API) createIngestKey(c *gin.Context) {
	var body struct {
		Name *string `json:"name"`
	}
	if aerr := httpapi.ReadSmallJSON(c, httpapi.MaxActionBody, &body); aerr != nil {
		a.Fail(c, aerr)
		return
	}
	name := ""
	if body.Name != nil {
		name = *body.Name
	}
	if ve := popup.ValidateIngestKeyName(name); ve != nil {
		a.Fail(c, ve)
		return
	}
	by := httpapi.Actor(c)
	secret, prefix, hash := popup.NewIngestKeySecret()
	k, err := a.IngestKeys.CreateIngestKey(c.Request.Context(), name, prefix, hash, by, a.Now())
	if err != nil {
		a.Fail(c, err)
		return
	}
	a.Log.Info("ingest key created", "operator", by.Name, "role", by.Role.String(), "ingest_key_id", k.ID, "prefix", k.Prefix)
	w := ingestKeyToWire(k)
	w.Key = secret
	c.Header("Cache-Control", "no-store")
	c.JSON(http.StatusCreated, w)
}

func (a *API) listIngestKeys(c *gin.Context) {
	ks, err := a.IngestKeys.IngestKeys(c.Request.Context())
	if err != nil {
		a.Fail(c, err)
		return
	}
	out := make([]ingestKeyWire, len(ks))
	for i, k := range ks {
		out[i] = ingestKeyToWire(k)
	}
	c.JSON(http.StatusOK, gin.H{"ingest_keys": out})
}

func (a *API) revokeIngestKey(c *gin.Context) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		a.Fail(c, errIngestKeyID)
		return
	}
	by := httpapi.Actor(c)
	k, err := a.IngestKeys.RevokeIngestKey(c.Request.Context(), id, by, a.Now())
	if err != nil {
		a.Fail(c, err)
		return
	}
	a.Log.Info("ingest key revoked", "operator", by.Name, "role", by.Role.String(), "ingest_key_id", k.ID, "prefix", k.Prefix)
	c.JSON(http.StatusOK, ingestKeyToWire(k))
}
