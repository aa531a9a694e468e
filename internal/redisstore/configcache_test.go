package redisstore_test

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/popup"
	"popupsvc/internal/redisstore"
	"popupsvc/internal/testenv"
)

// oldConfigBlob is a config blob as builds before the blob had its own type wrote it
// (json.Marshal of []popup.Popup with the domain's tags), with every field set. Old and new
// instances read each other's blob during a rolling deploy, so it must decode unchanged.
const oldConfigBlob = `[{"id":7,"revision":3,"name":"spring-sale","status":"active","priority":5,` +
	`"start_at":"2026-03-01T00:00:00Z","end_at":"2026-04-01T00:00:00.5Z",` +
	`"targeting":{"platforms":["ios","android"],"min_app_version":"8.1.0","max_app_version":"9.0.0",` +
	`"regions":["cn","us"],"langs":["zh"],"rollout_percent":40,"uids":["vip-1","vip-2"]},` +
	`"reshow_after_seconds":3600,"click_cooldown_seconds":-1,"close_cooldown_seconds":7200,"max_impressions":3,` +
	`"title":"Spring","content":"Up to 50% off","image_url":"https://cdn.example.com/s.png","link_url":"app://sale",` +
	`"buttons":[{"text":"Open","link_url":"app://sale/open"},{"text":"Later","link_url":""}],` +
	`"ext":{"theme":"dark","n":[1,2]},` +
	`"created_at":"2026-02-01T10:00:00.123Z","updated_at":"2026-02-02T11:30:00Z"},` +
	`{"id":8,"revision":1,"name":"plain","status":"paused","priority":0,"start_at":null,"end_at":null,` +
	`"targeting":{"platforms":[],"min_app_version":"","max_app_version":"","regions":[],"langs":[],"rollout_percent":100,"uids":[]},` +
	`"reshow_after_seconds":86400,"click_cooldown_seconds":0,"close_cooldown_seconds":86400,"max_impressions":0,` +
	`"title":"","content":"","image_url":"","link_url":"","buttons":[],"ext":{},` +
	`"created_at":"2026-02-03T00:00:00Z","updated_at":"2026-02-03T00:00:00Z"}]`

func configBlobPopups() []popup.Popup {
	at := func(s string) time.Time {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			panic(err)
		}
		return t
	}
	start, end := at("2026-03-01T00:00:00Z"), at("2026-04-01T00:00:00.5Z")
	return []popup.Popup{{
		ID: 7, Revision: 3, Name: "spring-sale", Status: popup.StatusActive, Priority: 5, StartAt: &start, EndAt: &end,
		Targeting: popup.Targeting{Platforms: []string{"ios", "android"}, MinAppVersion: "8.1.0", MaxAppVersion: "9.0.0",
			Regions: []string{"cn", "us"}, Langs: []string{"zh"}, RolloutPercent: 40, UIDs: []string{"vip-1", "vip-2"}},
		ReshowAfterSeconds: 3600, ClickCooldownSeconds: -1, CloseCooldownSeconds: 7200, MaxImpressions: 3,
		CreatedAt: at("2026-02-01T10:00:00.123Z"), UpdatedAt: at("2026-02-02T11:30:00Z"),
		Creative: popup.Creative{
			Title:    "Spring",
			Content:  "Up to 50% off",
			ImageURL: "https://cdn.example.com/s.png",
			LinkURL:  "app://sale",
			Buttons:  []popup.Button{{Text: "Open", LinkURL: "app://sale/open"}, {Text: "Later"}},
			Ext:      json.RawMessage(`{"theme":"dark","n":[1,2]}`),
		},
	}, {
		ID: 8, Revision: 1, Name: "plain", Status: popup.StatusPaused,
		Targeting:          popup.Targeting{Platforms: []string{}, Regions: []string{}, Langs: []string{}, RolloutPercent: 100, UIDs: []string{}},
		ReshowAfterSeconds: 86400, CloseCooldownSeconds: 86400,
		CreatedAt: at("2026-02-03T00:00:00Z"), UpdatedAt: at("2026-02-03T00:00:00Z"),
		Creative: popup.Creative{
			Buttons: []popup.Button{},
			Ext:     json.RawMessage(`{}`),
		},
	}}
}

func newConfigCache(t *testing.T) (*redisstore.ConfigCache, redisstore.Keys, context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	keys := redisstore.Keys{Prefix: testenv.RedisPrefix(t), Shards: 1}
	return redisstore.NewConfigCache(testenv.Redis(t), keys), keys, ctx
}

func TestConfigCacheReadsTheBlobOlderBuildsWrote(t *testing.T) {
	t.Parallel()
	cache, keys, ctx := newConfigCache(t)
	rdb := testenv.Redis(t)
	require.NoError(t, rdb.Set(ctx, keys.ConfigBlob(), oldConfigBlob, 0).Err())
	require.NoError(t, rdb.Set(ctx, keys.ConfigVersion(), 12, 0).Err())

	version, got, team, found, err := cache.Load(ctx)
	require.NoError(t, err)
	require.True(t, found)
	assert.EqualValues(t, 12, version)
	assert.Equal(t, configBlobPopups(), got)
	assert.Equal(t, "7", got[0].RolloutSeed(), "a popup cached without a seed buckets users by its id, as before seeds")
	assert.Nil(t, got[0].Experiment, "a popup cached before experiments has none")
	assert.Equal(t, popup.Team{}, team, "an older build wrote no pacing (the instance's default applies) and no holdout")
}

// TestConfigCacheCarriesTheTeamSettings: the team's pacing and running holdout go with their
// config version, and a version published without them (never set, no holdout) removes the last
// one's.
func TestConfigCacheCarriesTheTeamSettings(t *testing.T) {
	t.Parallel()
	cache, _, ctx := newConfigCache(t)
	want := popup.Team{Pacing: &popup.Pacing{MinGap: 90 * time.Second, DailyCap: 3},
		Holdout: popup.Holdout{Percent: 10, Salt: "5eed5eed5eed5eed", Phase: 2, StartedAt: time.Date(2026, 11, 27, 9, 0, 0, 125e6, time.UTC)}}
	_, err := cache.Publish(ctx, 5, configBlobPopups(), want)
	require.NoError(t, err)
	_, _, got, found, err := cache.Load(ctx)
	require.NoError(t, err)
	require.True(t, found)
	assert.Equal(t, want, got)

	_, err = cache.Publish(ctx, 6, configBlobPopups(), popup.Team{})
	require.NoError(t, err)
	_, _, got, _, err = cache.Load(ctx)
	require.NoError(t, err)
	assert.Equal(t, popup.Team{}, got)
}

func TestConfigBlobKeysStayCompatible(t *testing.T) {
	t.Parallel()
	cache, keys, ctx := newConfigCache(t)
	held, err := cache.Publish(ctx, 5, configBlobPopups(), popup.Team{})
	require.NoError(t, err)
	require.EqualValues(t, 5, held)

	blob, err := testenv.Redis(t).Get(ctx, keys.ConfigBlob()).Result()
	require.NoError(t, err)
	// Popups with no seed and no experiment, as an older build knew them, make exactly its blob
	// (the keys added since are absent when empty: bucket_seed, experiment; internal/popupdoc's
	// golden files pin them)...
	assert.JSONEq(t, oldConfigBlob, blob)
	// ...its keys spelled out, so that a renamed key names itself in the failure.
	assert.Equal(t, objectKeys(t, oldConfigBlob), objectKeys(t, blob))

	_, got, _, found, err := cache.Load(ctx)
	require.NoError(t, err)
	require.True(t, found)
	assert.Equal(t, configBlobPopups(), got)
}

func TestConfigCacheRefusesABrokenBlob(t *testing.T) {
	t.Parallel()
	cache, keys, ctx := newConfigCache(t)
	rdb := testenv.Redis(t)
	// json-iterator alone accepts a raw control character in a string; the cache must not.
	require.NoError(t, rdb.Set(ctx, keys.ConfigBlob(), "[{\"id\":1,\"name\":\"a\x01b\"}]", 0).Err())
	require.NoError(t, rdb.Set(ctx, keys.ConfigVersion(), 1, 0).Err())

	_, _, _, _, err := cache.Load(ctx)
	assert.ErrorContains(t, err, "decode config cache")
}

// objectKeys lists every object key of a JSON document with its path, sorted: "[].targeting.uids".
func objectKeys(t *testing.T, doc string) []string {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal([]byte(doc), &v))
	seen := map[string]bool{}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				seen[path+"."+k] = true
				walk(path+"."+k, e)
			}
		case []any:
			for _, e := range v {
				walk(path+"[]", e)
			}
		}
	}
	walk("", v)
	return slices.Sorted(maps.Keys(seen))
}

func TestConfigCacheCarriesExperiments(t *testing.T) {
	t.Parallel()
	cache, keys, ctx := newConfigCache(t)
	popups := configBlobPopups()
	end := time.Date(2026, 12, 9, 0, 0, 0, 0, time.UTC)
	popups[0].Experiment = &popup.Experiment{Status: popup.ExperimentRunning, CoveragePercent: 100,
		Variants: []popup.Variant{
			{Key: "a", Weight: 50, Creative: popup.Creative{Title: "A", Buttons: []popup.Button{}, Ext: json.RawMessage(`{}`)}},
			{Key: "b", Weight: 30, Creative: popup.Creative{Title: "B", Buttons: []popup.Button{{Text: "Go", LinkURL: "app://b"}}, Ext: json.RawMessage(`{"x":1}`)}},
		},
		Control: &popup.Control{Weight: 20, Mode: popup.ControlNone}, PlannedEndAt: &end, Phase: 1, Salt: "spring-sale_2026"}
	_, err := cache.Publish(ctx, 6, popups, popup.Team{})
	require.NoError(t, err)

	blob, err := testenv.Redis(t).Get(ctx, keys.ConfigBlob()).Result()
	require.NoError(t, err)
	assert.Contains(t, objectKeys(t, blob), "[].experiment.variants[].key")
	_, got, _, found, err := cache.Load(ctx)
	require.NoError(t, err)
	require.True(t, found)
	assert.Equal(t, popups, got)
	assert.Nil(t, got[1].Experiment, "a popup without an experiment reads back without one")
}
