// Package settings is the admin slice of the team's settings (docs/CONTRACT.md §13, §15): the
// reporting time zone, the pacing and the holdout percentage, read and written whole.
package settings

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"time"

	"github.com/gin-gonic/gin"

	"popupsvc/internal/httpapi"
	"popupsvc/internal/popup"
)

// API serves the team's settings.
type API struct {
	*httpapi.Shared
	Settings SettingsStore
	// DefaultPacing is the pacing until the team sets one (config.Config.DefaultPacing).
	DefaultPacing popup.Pacing
}

// Register adds the settings routes: reading is for every operator, changing them is an admin's.
func (a *API) Register(g *gin.RouterGroup) {
	g.GET("/settings", a.getSettings)
	g.PUT("/settings", a.Require(popup.RoleAdmin, "changing settings"), a.putSettings)
}

// SettingsStore holds the team's settings (mysqlstore.SettingsRepo): Get answers def for a
// setting never set; Set returns the value it replaced. The pacing is read and written whole
// (nil: never set); SetPacing also makes a new config version, which Reload then propagates.
// Holdout is the latest holdout phase (running or ended; the zero value: never set), and
// SetHoldout applies popup.Holdout.Change to it, making a new config version when it changes.
type SettingsStore interface {
	Get(ctx context.Context, name, def string) (string, error)
	Set(ctx context.Context, actor, name, value, def string) (old string, err error)
	Pacing(ctx context.Context) (*popup.Pacing, error)
	SetPacing(ctx context.Context, actor string, p popup.Pacing) (old *popup.Pacing, err error)
	Holdout(ctx context.Context) (popup.Holdout, error)
	SetHoldout(ctx context.Context, actor string, percent int, now time.Time) (old, cur popup.Holdout, changed bool, err error)
}

// The reporting time zone: the zone whose days results are counted in, unless a request names
// another (tz). An IANA name; UTC until an operator sets it.
const (
	settingReportingTimeZone = "reporting_time_zone"
	defaultReportingTimeZone = "UTC"
)

// The pacing settings (docs/CONTRACT.md §13): after any popup is shown to a user, no other for
// min_gap_seconds; at most daily_cap popups a user per UTC day. Until an operator sets them they
// are the instance's default (Admin.DefaultPacing: POPUP_USER_DAILY_CAP, no gap).
const (
	settingMinGapSeconds = "min_gap_seconds"
	settingDailyCap      = "daily_cap"
)

// settingHoldoutPercent is the global holdout's share of users (docs/CONTRACT.md §15): 0 (no
// holdout, the default) to popup.MaxHoldoutPercent.
const settingHoldoutPercent = "holdout_percent"

// settingsBody is GET /admin/v1/settings' answer and PUT's body; in a PUT the pacing settings
// may be left out (unchanged), in an answer they are always there.
type settingsBody struct {
	ReportingTimeZone string `json:"reporting_time_zone"`
	MinGapSeconds     *int64 `json:"min_gap_seconds"`
	DailyCap          *int   `json:"daily_cap"`
	HoldoutPercent    *int   `json:"holdout_percent"`
}

// getSettings answers GET /admin/v1/settings.
func (a *API) getSettings(c *gin.Context) {
	out, err := a.settings(c.Request.Context())
	if err != nil {
		a.Fail(c, err)
		return
	}
	c.JSON(http.StatusOK, out)
}

// settings is the team's settings as they stand, defaults filled in.
func (a *API) settings(ctx context.Context) (settingsBody, error) {
	tz, err := a.ReportingTimeZone(ctx)
	if err != nil {
		return settingsBody{}, err
	}
	pacing, err := a.pacing(ctx)
	if err != nil {
		return settingsBody{}, err
	}
	h, err := a.Settings.Holdout(ctx)
	if err != nil {
		return settingsBody{}, err
	}
	held := h.RunningPercent()
	gap := int64(pacing.MinGap / time.Second)
	return settingsBody{ReportingTimeZone: tz, MinGapSeconds: &gap, DailyCap: &pacing.DailyCap, HoldoutPercent: &held}, nil
}

// pacing is the stored pacing, the default when none was set.
func (a *API) pacing(ctx context.Context) (popup.Pacing, error) {
	p, err := a.Settings.Pacing(ctx)
	if err != nil || p == nil {
		return a.DefaultPacing, err
	}
	return *p, nil
}

// putSettings answers PUT /admin/v1/settings: the whole settings object, validated, stored, and
// the change logged (operator, old, new).
func (a *API) putSettings(c *gin.Context) {
	raw, aerr := httpapi.ReadBody(c, httpapi.MaxActionBody, httpapi.ErrTooLarge)
	if aerr != nil {
		a.Fail(c, aerr)
		return
	}
	in, err := decodeSettings(raw)
	if err != nil {
		a.Fail(c, err)
		return
	}
	ctx := c.Request.Context()
	who := httpapi.Actor(c).Name
	old, err := a.Settings.Set(ctx, who, settingReportingTimeZone, in.ReportingTimeZone, defaultReportingTimeZone)
	if err != nil {
		a.Fail(c, err)
		return
	}
	a.Log.Info("setting changed", "operator", who, "setting", settingReportingTimeZone, "old", old, "new", in.ReportingTimeZone)
	if in.MinGapSeconds != nil || in.DailyCap != nil {
		if err := a.putPacing(ctx, who, in); err != nil {
			a.Fail(c, err)
			return
		}
	}
	if in.HoldoutPercent != nil {
		if err := a.putHoldout(ctx, who, *in.HoldoutPercent); err != nil {
			a.Fail(c, err)
			return
		}
	}
	out, err := a.settings(ctx)
	if err != nil {
		a.Fail(c, err)
		return
	}
	c.JSON(http.StatusOK, out)
}

// putPacing stores the pacing in (a setting left out keeps its value) and propagates it to every
// instance as a config change: the new version's snapshots carry it.
func (a *API) putPacing(ctx context.Context, who string, in settingsBody) error {
	next, err := a.pacing(ctx)
	if err != nil {
		return err
	}
	if in.MinGapSeconds != nil {
		next.MinGap = time.Duration(*in.MinGapSeconds) * time.Second
	}
	if in.DailyCap != nil {
		next.DailyCap = *in.DailyCap
	}
	old, err := a.Settings.SetPacing(ctx, who, next)
	if err != nil {
		return err
	}
	was := a.DefaultPacing
	if old != nil {
		was = *old
	}
	a.Log.Info("setting changed", "operator", who, "setting", "pacing",
		"old_min_gap_seconds", int64(was.MinGap/time.Second), "old_daily_cap", was.DailyCap,
		"new_min_gap_seconds", int64(next.MinGap/time.Second), "new_daily_cap", next.DailyCap)
	a.Propagate(ctx)
	return nil
}

// putHoldout sets the holdout percentage: a new percentage ends the running phase and starts the
// next (popup.Holdout.Change), a new config version that reaches every instance; the same one
// changes nothing.
func (a *API) putHoldout(ctx context.Context, who string, percent int) error {
	old, cur, changed, err := a.Settings.SetHoldout(ctx, who, percent, a.Now())
	if err != nil || !changed {
		return err
	}
	was := old.RunningPercent()
	a.Log.Info("setting changed", "operator", who, "setting", settingHoldoutPercent, "old", was, "new", percent,
		"ended_phase", old.Phase, "phase", cur.Phase)
	a.Propagate(ctx)
	return nil
}

// decodeSettings reads a settings body: one JSON object holding exactly the known settings,
// each valid; the error names every offending field.
func decodeSettings(raw []byte) (settingsBody, error) {
	var in settingsBody
	var obj map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&obj); err != nil || obj == nil || dec.More() {
		return in, httpapi.BadRequest("invalid_json", `body must be one JSON object like {"reporting_time_zone": "America/Los_Angeles"}`)
	}
	var fields []popup.FieldError
	v, ok := obj[settingReportingTimeZone]
	switch {
	case !ok:
		fields = append(fields, popup.FieldError{Field: settingReportingTimeZone, Message: "is required"})
	case json.Unmarshal(v, &in.ReportingTimeZone) != nil:
		fields = append(fields, popup.FieldError{Field: settingReportingTimeZone, Message: "must be a string, an IANA time zone name"})
	default:
		if _, msg := httpapi.LoadZone(in.ReportingTimeZone); msg != "" {
			fields = append(fields, popup.FieldError{Field: settingReportingTimeZone, Message: msg})
		}
	}
	fields = append(fields, decodeWhole(obj, settingMinGapSeconds, &in.MinGapSeconds)...)
	fields = append(fields, decodeWhole(obj, settingDailyCap, &in.DailyCap)...)
	if hf := decodeWhole(obj, settingHoldoutPercent, &in.HoldoutPercent); len(hf) > 0 {
		fields = append(fields, hf...)
	} else if in.HoldoutPercent != nil {
		fields = append(fields, popup.ValidateHoldoutPercent(*in.HoldoutPercent)...)
	}
	if len(fields) == 0 && (in.MinGapSeconds != nil || in.DailyCap != nil) {
		gap, dailyCap := int64(0), 0
		if in.MinGapSeconds != nil {
			gap = *in.MinGapSeconds
		}
		if in.DailyCap != nil {
			dailyCap = *in.DailyCap
		}
		fields = append(fields, popup.ValidatePacing(gap, dailyCap)...)
	}
	var unknown []string
	for k := range obj {
		if k != settingReportingTimeZone && k != settingMinGapSeconds && k != settingDailyCap && k != settingHoldoutPercent {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	for _, k := range unknown {
		fields = append(fields, popup.FieldError{Field: k, Message: "is not a setting"})
	}
	if len(fields) > 0 {
		return in, &popup.ValidationError{Of: "settings", Fields: fields}
	}
	return in, nil
}

// decodeWhole decodes the optional whole number obj[name] into *dst (left nil when absent; null
// is not a number, not "unchanged").
func decodeWhole[T int | int64](obj map[string]json.RawMessage, name string, dst **T) []popup.FieldError {
	raw, ok := obj[name]
	if !ok {
		return nil
	}
	var v T
	if err := json.Unmarshal(raw, &v); err != nil || string(bytes.TrimSpace(raw)) == "null" {
		return []popup.FieldError{{Field: name, Message: "must be a whole number"}}
	}
	*dst = &v
	return nil
}

// ReportingTimeZone is the stored reporting time zone, UTC when none was set.
func (a *API) ReportingTimeZone(ctx context.Context) (string, error) {
	return a.Settings.Get(ctx, settingReportingTimeZone, defaultReportingTimeZone)
}
