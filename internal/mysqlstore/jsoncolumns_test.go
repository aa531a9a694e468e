package mysqlstore_test

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/mysqlstore"
	"popupsvc/internal/popup"
	"popupsvc/internal/testenv"
)

// The targeting and content columns as builds before the storage documents had their own types
// wrote them (the domain's JSON tags), every field set. Rows written then must keep reading,
// and migration 00004 copied such JSON verbatim into the first revisions.
const (
	oldTargetingColumn = `{"platforms":["ios","web"],"min_app_version":"8.1.0","max_app_version":"9.0.0",` +
		`"regions":["cn"],"langs":["zh","en"],"rollout_percent":25,"uids":["vip-1"]}`
	oldContentColumn = `{"title":"Spring","content":"Up to 50% off","image_url":"https://cdn.example.com/s.png",` +
		`"link_url":"https://example.com/sale","buttons":[{"text":"Open","link_url":"https://example.com/open"},` +
		`{"text":"Later","link_url":""}],"ext":{"theme":"dark","n":[1,2]}}`
)

func storedColumnsPopup() popup.Popup {
	return popup.Popup{
		Name: "spring-sale", Status: popup.StatusActive, Priority: 5,
		Targeting: popup.Targeting{Platforms: []string{"ios", "web"}, MinAppVersion: "8.1.0", MaxAppVersion: "9.0.0",
			Regions: []string{"cn"}, Langs: []string{"zh", "en"}, RolloutPercent: 25, UIDs: []string{"vip-1"}},
		ReshowAfterSeconds: 3600, ClickCooldownSeconds: -1, CloseCooldownSeconds: 7200, MaxImpressions: 3,
		Creative: popup.Creative{
			Title:    "Spring",
			Content:  "Up to 50% off",
			ImageURL: "https://cdn.example.com/s.png",
			LinkURL:  "https://example.com/sale",
			Buttons:  []popup.Button{{Text: "Open", LinkURL: "https://example.com/open"}, {Text: "Later"}},
			Ext:      json.RawMessage(`{"theme":"dark","n":[1,2]}`),
		},
	}
}

func TestRowsWrittenByOlderBuildsStillRead(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	db := testenv.MySQL(t)
	res, err := db.ExecContext(ctx, `INSERT INTO popup_config (name, status, priority, reshow_after_seconds,
		click_cooldown_seconds, close_cooldown_seconds, max_impressions, targeting, content)
		VALUES ('spring-sale', 'active', 5, 3600, -1, 7200, 3, ?, ?)`, oldTargetingColumn, oldContentColumn)
	require.NoError(t, err)
	id, err := res.LastInsertId()
	require.NoError(t, err)

	got, err := mysqlstore.NewPopupRepo(db).Get(ctx, id)
	require.NoError(t, err)
	want := storedColumnsPopup()
	want.ID, want.Revision, want.CreatedAt, want.UpdatedAt = id, got.Revision, got.CreatedAt, got.UpdatedAt
	want.BucketSeed = strconv.FormatInt(id, 10) // a row without a seed reads with its id, as migration 00007 gave old rows
	assert.Equal(t, want, got)
}

func TestStoredJSONColumnsKeepTheirKeys(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	db := testenv.MySQL(t)
	created, err := newRepo(db).Create(ctx, as("tester"), storedColumnsPopup())
	require.NoError(t, err)

	var targeting, body string
	require.NoError(t, db.QueryRowContext(ctx, `SELECT targeting, content FROM popup_config WHERE id = ?`, created.ID).Scan(&targeting, &body))
	// Byte for byte what older builds wrote: same keys, same order.
	assert.Equal(t, oldTargetingColumn, targeting)
	assert.Equal(t, oldContentColumn, body)
}

func TestContentWithoutButtonsOrExtReadsAsEmpty(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	db := testenv.MySQL(t)
	res, err := db.ExecContext(ctx, `INSERT INTO popup_config (name, targeting, content) VALUES ('bare', ?, ?)`,
		`{"rollout_percent":100}`, `{"title":"t"}`)
	require.NoError(t, err)
	id, err := res.LastInsertId()
	require.NoError(t, err)

	got, err := mysqlstore.NewPopupRepo(db).Get(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, []popup.Button{}, got.Buttons)
	assert.Equal(t, json.RawMessage(`{}`), got.Ext)
	assert.Equal(t, "t", got.Title)
	assert.Equal(t, 100, got.Targeting.RolloutPercent)
}
