package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"time"

	"github.com/gin-gonic/gin"

	"popupsvc/internal/popup"
)

// SettingsStore holds the team's settings (mysqlstore.SettingsRepo): Get answers def for a
// setting never set; Set returns the value it replaced.
type SettingsStore interface {
	Get(ctx context.Context, name, def string) (string, error)
	Set(ctx context.Context, actor, name, value, def string) (old string, err error)
}

// The reporting time zone: the zone whose days results are counted in, unless a request names
// another (tz). An IANA name; UTC until an operator sets it.
const (
	settingReportingTimeZone = "reporting_time_zone"
	defaultReportingTimeZone = "UTC"
)

// settingsBody is GET /admin/v1/settings' answer and PUT's body.
type settingsBody struct {
	ReportingTimeZone string `json:"reporting_time_zone"`
}

// getSettings answers GET /admin/v1/settings.
func (a *Admin) getSettings(c *gin.Context) {
	tz, err := a.reportingTimeZone(c.Request.Context())
	if err != nil {
		writeError(c, a.Log, err)
		return
	}
	c.JSON(http.StatusOK, settingsBody{ReportingTimeZone: tz})
}

// putSettings answers PUT /admin/v1/settings: the whole settings object, validated, stored, and
// the change logged (operator, old, new).
func (a *Admin) putSettings(c *gin.Context) {
	raw, aerr := readBody(c, maxActionBody, errTooLarge)
	if aerr != nil {
		writeError(c, a.Log, aerr)
		return
	}
	in, err := decodeSettings(raw)
	if err != nil {
		writeError(c, a.Log, err)
		return
	}
	who := actor(c).Name
	old, err := a.Settings.Set(c.Request.Context(), who, settingReportingTimeZone, in.ReportingTimeZone, defaultReportingTimeZone)
	if err != nil {
		writeError(c, a.Log, err)
		return
	}
	a.Log.Info("setting changed", "operator", who, "setting", settingReportingTimeZone, "old", old, "new", in.ReportingTimeZone)
	c.JSON(http.StatusOK, in)
}

// decodeSettings reads a settings body: one JSON object holding exactly the known settings,
// each valid; the error names every offending field.
func decodeSettings(raw []byte) (settingsBody, error) {
	var in settingsBody
	var obj map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&obj); err != nil || obj == nil || dec.More() {
		return in, badRequest("invalid_json", `body must be one JSON object like {"reporting_time_zone": "America/Los_Angeles"}`)
	}
	var fields []popup.FieldError
	v, ok := obj[settingReportingTimeZone]
	switch {
	case !ok:
		fields = append(fields, popup.FieldError{Field: settingReportingTimeZone, Message: "is required"})
	case json.Unmarshal(v, &in.ReportingTimeZone) != nil:
		fields = append(fields, popup.FieldError{Field: settingReportingTimeZone, Message: "must be a string, an IANA time zone name"})
	default:
		if _, msg := loadZone(in.ReportingTimeZone); msg != "" {
			fields = append(fields, popup.FieldError{Field: settingReportingTimeZone, Message: msg})
		}
	}
	var unknown []string
	for k := range obj {
		if k != settingReportingTimeZone {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	for _, k := range unknown {
		fields = append(fields, popup.FieldError{Field: k, Message: "is not a setting"})
	}
	if len(fields) > 0 {
		return in, &popup.ValidationError{Fields: fields}
	}
	return in, nil
}

// loadZone loads an IANA time zone name; msg says what is wrong otherwise. "" and "Local", which
// time.LoadLocation takes for UTC and the server's own zone, are not names.
func loadZone(name string) (loc *time.Location, msg string) {
	if name == "" || name == "Local" || len(name) > 64 {
		return nil, "must be an IANA time zone name like UTC or America/Los_Angeles"
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, "must be an IANA time zone name like UTC or America/Los_Angeles; " + name + " is not one"
	}
	return loc, ""
}

// reportingTimeZone is the stored reporting time zone, UTC when none was set.
func (a *Admin) reportingTimeZone(ctx context.Context) (string, error) {
	return a.Settings.Get(ctx, settingReportingTimeZone, defaultReportingTimeZone)
}
