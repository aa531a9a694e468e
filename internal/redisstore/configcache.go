package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"popupsvc/internal/jsonx"
	"popupsvc/internal/popup"
)

// publishScript writes blob and version unless Redis already holds a newer version, so that two
// racing warmers cannot put an older config back. Both keys share the {cfg} hash tag.
var publishScript = redis.NewScript(`
local cur = tonumber(redis.call('GET', KEYS[2]) or '0')
local v = tonumber(ARGV[2])
if v < cur then return cur end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('SET', KEYS[2], ARGV[2])
return v
`)

// ConfigCache is the shared Redis copy of the popup configs: a blob and its version, and the
// channel that announces a new version to every API instance.
type ConfigCache struct {
	rdb  redis.UniversalClient
	keys Keys
}

// NewConfigCache returns the config cache under keys.
func NewConfigCache(rdb redis.UniversalClient, keys Keys) *ConfigCache {
	return &ConfigCache{rdb: rdb, keys: keys}
}

// Publish writes (version, popups) to the cache, unless it holds a newer version, and announces
// the version it holds afterwards, which it returns.
func (c *ConfigCache) Publish(ctx context.Context, version int64, popups []popup.Popup) (int64, error) {
	blob, err := encodeConfig(popups)
	if err != nil {
		return 0, fmt.Errorf("encode config cache: %w", err)
	}
	held, err := publishScript.Run(ctx, c.rdb, []string{c.keys.ConfigBlob(), c.keys.ConfigVersion()}, blob, version).Int64()
	if err != nil {
		return 0, fmt.Errorf("write config cache: %w", err)
	}
	if err := c.rdb.Publish(ctx, c.keys.ConfigChannel(), held).Err(); err != nil {
		return held, fmt.Errorf("announce config version: %w", err)
	}
	return held, nil
}

// Version reads the cached version; found is false when the cache is empty (a fresh or flushed
// Redis).
func (c *ConfigCache) Version(ctx context.Context) (v int64, found bool, err error) {
	v, err = c.rdb.Get(ctx, c.keys.ConfigVersion()).Int64()
	switch {
	case errors.Is(err, redis.Nil):
		return 0, false, nil
	case err != nil:
		return 0, false, fmt.Errorf("read config cache version: %w", err)
	}
	return v, true, nil
}

// Load reads the cached version and popups in one round trip; found is false when the cache is
// empty.
func (c *ConfigCache) Load(ctx context.Context) (version int64, popups []popup.Popup, found bool, err error) {
	vals, err := c.rdb.MGet(ctx, c.keys.ConfigVersion(), c.keys.ConfigBlob()).Result()
	if err != nil {
		return 0, nil, false, fmt.Errorf("read config cache: %w", err)
	}
	vs, ok1 := vals[0].(string)
	blob, ok2 := vals[1].(string)
	if !ok1 || !ok2 {
		return 0, nil, false, nil
	}
	version, err = strconv.ParseInt(vs, 10, 64)
	if err != nil {
		return 0, nil, false, fmt.Errorf("config cache version %q: %w", vs, err)
	}
	if popups, err = decodeConfig([]byte(blob)); err != nil {
		return 0, nil, false, fmt.Errorf("decode config cache: %w", err)
	}
	return version, popups, true, nil
}

// Subscribe listens to the announcements until ctx ends: the returned channel receives (without
// blocking the listener; one pending signal at most) on every announcement. err says the
// subscription was not confirmed within wait (Redis unreachable): the channel still works, as
// go-redis resubscribes once Redis is back, and the caller should poll meanwhile.
func (c *ConfigCache) Subscribe(ctx context.Context, wait time.Duration) (<-chan struct{}, error) {
	sub := c.rdb.Subscribe(ctx, c.keys.ConfigChannel())
	sctx, cancel := context.WithTimeout(ctx, wait)
	_, err := sub.Receive(sctx)
	cancel()
	if err != nil {
		err = fmt.Errorf("subscribe to config announcements: %w", err)
	}
	msgs := sub.Channel(redis.WithChannelHealthCheckInterval(10 * time.Second))
	out := make(chan struct{}, 1)
	go func() { // owned by ctx: it closes the subscription when ctx ends
		defer sub.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case _, ok := <-msgs:
				if !ok {
					return
				}
				select {
				case out <- struct{}{}:
				default:
				}
			}
		}
	}()
	return out, err
}

// The config blob's own shape. Its JSON keys are a contract between instances, not a copy of the
// domain type: during a rolling deploy old and new instances read each other's blob, so a key is
// never renamed or dropped here (TestConfigBlobKeysStayCompatible pins them all).
type (
	cachedPopup struct {
		ID                   int64           `json:"id"`
		Revision             int64           `json:"revision"`
		Name                 string          `json:"name"`
		BucketSeed           string          `json:"bucket_seed"` // absent from an older build's blob: the popup's id is its seed
		Status               string          `json:"status"`
		Priority             int             `json:"priority"`
		StartAt              *time.Time      `json:"start_at"`
		EndAt                *time.Time      `json:"end_at"`
		Targeting            cachedTargeting `json:"targeting"`
		ReshowAfterSeconds   int64           `json:"reshow_after_seconds"`
		ClickCooldownSeconds int64           `json:"click_cooldown_seconds"`
		CloseCooldownSeconds int64           `json:"close_cooldown_seconds"`
		MaxImpressions       int             `json:"max_impressions"`
		Title                string          `json:"title"`
		Content              string          `json:"content"`
		ImageURL             string          `json:"image_url"`
		LinkURL              string          `json:"link_url"`
		Buttons              []cachedButton  `json:"buttons"`
		Ext                  json.RawMessage `json:"ext"`
		CreatedAt            time.Time       `json:"created_at"`
		UpdatedAt            time.Time       `json:"updated_at"`
		// Experiment is absent for a popup without one, and from an older build's blob.
		Experiment *cachedExperiment `json:"experiment,omitempty"`
	}
	cachedExperiment struct {
		Status           string          `json:"status"`
		CoveragePercent  int             `json:"coverage_percent"`
		Variants         []cachedVariant `json:"variants"`
		Control          *cachedControl  `json:"control"`
		PlannedEndAt     *time.Time      `json:"planned_end_at"`
		Phase            int             `json:"phase"`
		Salt             string          `json:"salt"`
		PhaseStartedAt   *time.Time      `json:"phase_started_at"`
		ConcludedVariant string          `json:"concluded_variant"`
	}
	cachedVariant struct {
		Key      string          `json:"key"`
		Weight   int             `json:"weight"`
		Title    string          `json:"title"`
		Content  string          `json:"content"`
		ImageURL string          `json:"image_url"`
		LinkURL  string          `json:"link_url"`
		Buttons  []cachedButton  `json:"buttons"`
		Ext      json.RawMessage `json:"ext"`
	}
	cachedControl struct {
		Weight int    `json:"weight"`
		Mode   string `json:"mode"`
	}
	cachedTargeting struct {
		Platforms      []string `json:"platforms"`
		MinAppVersion  string   `json:"min_app_version"`
		MaxAppVersion  string   `json:"max_app_version"`
		Regions        []string `json:"regions"`
		Langs          []string `json:"langs"`
		RolloutPercent int      `json:"rollout_percent"`
		UIDs           []string `json:"uids"`
	}
	cachedButton struct {
		Text    string `json:"text"`
		LinkURL string `json:"link_url"`
	}
)

// encodeConfig is the blob of popups. It stays on encoding/json: it runs once per config
// change, off the request path.
func encodeConfig(popups []popup.Popup) ([]byte, error) {
	out := make([]cachedPopup, len(popups))
	for i := range popups {
		out[i] = toBlob(&popups[i])
	}
	return json.Marshal(out)
}

// decodeConfig reads a blob written by encodeConfig (by this or an older build). jsonx: every
// instance decodes the whole config on each announcement, and json-iterator measured faster for
// this blob while accepting exactly what encoding/json accepts.
func decodeConfig(blob []byte) ([]popup.Popup, error) {
	var in []cachedPopup
	if err := jsonx.Unmarshal(blob, &in); err != nil {
		return nil, err
	}
	if in == nil { // the blob "null"
		return nil, nil
	}
	out := make([]popup.Popup, len(in))
	for i := range in {
		out[i] = fromBlob(&in[i])
	}
	return out, nil
}

// toBlob is p in the blob's shape. Slices keep their nil-ness, so a popup reads back exactly as
// it was written (null stays null, [] stays []).
func toBlob(p *popup.Popup) cachedPopup {
	t := &p.Targeting
	return cachedPopup{
		ID: p.ID, Revision: p.Revision, Name: p.Name, BucketSeed: p.BucketSeed, Status: string(p.Status), Priority: p.Priority,
		StartAt: p.StartAt, EndAt: p.EndAt,
		Targeting: cachedTargeting{Platforms: t.Platforms, MinAppVersion: t.MinAppVersion, MaxAppVersion: t.MaxAppVersion,
			Regions: t.Regions, Langs: t.Langs, RolloutPercent: t.RolloutPercent, UIDs: t.UIDs},
		ReshowAfterSeconds: p.ReshowAfterSeconds, ClickCooldownSeconds: p.ClickCooldownSeconds,
		CloseCooldownSeconds: p.CloseCooldownSeconds, MaxImpressions: p.MaxImpressions,
		Title: p.Title, Content: p.Content, ImageURL: p.ImageURL, LinkURL: p.LinkURL, Buttons: buttonsToBlob(p.Buttons), Ext: p.Ext,
		CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt, Experiment: experimentToBlob(p.Experiment),
	}
}

func buttonsToBlob(bs []popup.Button) []cachedButton {
	if bs == nil {
		return nil
	}
	out := make([]cachedButton, len(bs))
	for i, b := range bs {
		out[i] = cachedButton{Text: b.Text, LinkURL: b.LinkURL}
	}
	return out
}

func buttonsFromBlob(bs []cachedButton) []popup.Button {
	if bs == nil {
		return nil
	}
	out := make([]popup.Button, len(bs))
	for i, b := range bs {
		out[i] = popup.Button{Text: b.Text, LinkURL: b.LinkURL}
	}
	return out
}

// experimentToBlob is e in the blob's shape; nil stays nil (no "experiment" key).
func experimentToBlob(e *popup.Experiment) *cachedExperiment {
	if e == nil {
		return nil
	}
	var variants []cachedVariant
	if e.Variants != nil {
		variants = make([]cachedVariant, len(e.Variants))
		for i, v := range e.Variants {
			variants[i] = cachedVariant{Key: v.Key, Weight: v.Weight, Title: v.Title, Content: v.Content, ImageURL: v.ImageURL,
				LinkURL: v.LinkURL, Buttons: buttonsToBlob(v.Buttons), Ext: v.Ext}
		}
	}
	var control *cachedControl
	if e.Control != nil {
		control = &cachedControl{Weight: e.Control.Weight, Mode: string(e.Control.Mode)}
	}
	return &cachedExperiment{Status: string(e.Status), CoveragePercent: e.CoveragePercent, Variants: variants, Control: control,
		PlannedEndAt: e.PlannedEndAt, Phase: e.Phase, Salt: e.Salt, PhaseStartedAt: e.PhaseStartedAt, ConcludedVariant: e.ConcludedVariant}
}

// experimentFromBlob is the inverse of experimentToBlob.
func experimentFromBlob(c *cachedExperiment) *popup.Experiment {
	if c == nil {
		return nil
	}
	var variants []popup.Variant
	if c.Variants != nil {
		variants = make([]popup.Variant, len(c.Variants))
		for i, v := range c.Variants {
			variants[i] = popup.Variant{Key: v.Key, Weight: v.Weight, Creative: popup.Creative{Title: v.Title, Content: v.Content,
				ImageURL: v.ImageURL, LinkURL: v.LinkURL, Buttons: buttonsFromBlob(v.Buttons), Ext: v.Ext}}
		}
	}
	var control *popup.Control
	if c.Control != nil {
		control = &popup.Control{Weight: c.Control.Weight, Mode: popup.ControlMode(c.Control.Mode)}
	}
	return &popup.Experiment{Status: popup.ExperimentStatus(c.Status), CoveragePercent: c.CoveragePercent, Variants: variants,
		Control: control, PlannedEndAt: c.PlannedEndAt, Phase: c.Phase, Salt: c.Salt, PhaseStartedAt: c.PhaseStartedAt,
		ConcludedVariant: c.ConcludedVariant}
}

// fromBlob is the popup a blob entry holds; the inverse of toBlob.
func fromBlob(c *cachedPopup) popup.Popup {
	t := &c.Targeting
	return popup.Popup{
		ID: c.ID, Revision: c.Revision, Name: c.Name, BucketSeed: c.BucketSeed, Status: popup.Status(c.Status), Priority: c.Priority,
		StartAt: c.StartAt, EndAt: c.EndAt,
		Targeting: popup.Targeting{Platforms: t.Platforms, MinAppVersion: t.MinAppVersion, MaxAppVersion: t.MaxAppVersion,
			Regions: t.Regions, Langs: t.Langs, RolloutPercent: t.RolloutPercent, UIDs: t.UIDs},
		ReshowAfterSeconds: c.ReshowAfterSeconds, ClickCooldownSeconds: c.ClickCooldownSeconds,
		CloseCooldownSeconds: c.CloseCooldownSeconds, MaxImpressions: c.MaxImpressions,
		Title: c.Title, Content: c.Content, ImageURL: c.ImageURL, LinkURL: c.LinkURL, Buttons: buttonsFromBlob(c.Buttons), Ext: c.Ext,
		CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt, Experiment: experimentFromBlob(c.Experiment),
	}
}
