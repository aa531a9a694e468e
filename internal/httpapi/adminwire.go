package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"popupsvc/internal/popup"
)

// adminPopup is a popup as the admin API shows it: the domain popup plus the server-managed
// fields (id, state, revision, created_at, updated_at). What GET returns, PUT accepts back.
type adminPopup struct {
	ID                   int64           `json:"id"`
	Name                 string          `json:"name"`
	BucketSeed           string          `json:"bucket_seed"`
	Status               string          `json:"status"`
	State                string          `json:"state"` // computed at the time of the answer
	Priority             int             `json:"priority"`
	StartAt              *time.Time      `json:"start_at"`
	EndAt                *time.Time      `json:"end_at"`
	Targeting            adminTargeting  `json:"targeting"`
	ReshowAfterSeconds   int64           `json:"reshow_after_seconds"`
	ClickCooldownSeconds int64           `json:"click_cooldown_seconds"`
	CloseCooldownSeconds int64           `json:"close_cooldown_seconds"`
	MaxImpressions       int             `json:"max_impressions"`
	Title                string          `json:"title"`
	Content              string          `json:"content"`
	ImageURL             string          `json:"image_url"`
	LinkURL              string          `json:"link_url"`
	Buttons              []adminButton   `json:"buttons"`
	Ext                  json.RawMessage `json:"ext"`
	CreatedAt            time.Time       `json:"created_at"`
	UpdatedAt            time.Time       `json:"updated_at"`
	Revision             int64           `json:"revision"`
}

type adminTargeting struct {
	Platforms      []string `json:"platforms"`
	MinAppVersion  string   `json:"min_app_version"`
	MaxAppVersion  string   `json:"max_app_version"`
	Regions        []string `json:"regions"`
	Langs          []string `json:"langs"`
	RolloutPercent int      `json:"rollout_percent"`
	UIDs           []string `json:"uids"`
}

type adminButton struct {
	Text    string `json:"text"`
	LinkURL string `json:"link_url"`
}

// toWire is the boundary from the domain popup to the admin API's JSON; the campaign state is
// p's at now.
func toWire(p popup.Popup, now time.Time) adminPopup {
	buttons := make([]adminButton, len(p.Buttons))
	for i, b := range p.Buttons {
		buttons[i] = adminButton{Text: b.Text, LinkURL: b.LinkURL}
	}
	ext := p.Ext
	if len(ext) == 0 {
		ext = json.RawMessage("{}")
	}
	t := p.Targeting
	return adminPopup{
		ID: p.ID, Name: p.Name, BucketSeed: p.RolloutSeed(), Status: string(p.Status), State: string(p.StateAt(now)),
		Priority: p.Priority, StartAt: p.StartAt, EndAt: p.EndAt,
		Targeting: adminTargeting{Platforms: nonNil(t.Platforms), MinAppVersion: t.MinAppVersion, MaxAppVersion: t.MaxAppVersion,
			Regions: nonNil(t.Regions), Langs: nonNil(t.Langs), RolloutPercent: t.RolloutPercent, UIDs: nonNil(t.UIDs)},
		ReshowAfterSeconds: p.ReshowAfterSeconds, ClickCooldownSeconds: p.ClickCooldownSeconds,
		CloseCooldownSeconds: p.CloseCooldownSeconds, MaxImpressions: p.MaxImpressions,
		Title: p.Title, Content: p.Content, ImageURL: p.ImageURL, LinkURL: p.LinkURL, Buttons: buttons, Ext: ext,
		CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt, Revision: p.Revision,
	}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// adminPopupInput is a popup body as POST and PUT accept it. Every field may be omitted (it takes
// its default); scalars whose zero is a real setting are pointers so that omitted and zero stay
// apart. The server-managed fields are accepted so that a GET's answer can be sent back as it is,
// and ignored, except id, which must match the path of a PUT, and bucket_seed, which must match
// the stored one (it never changes; "" or absent keeps it, and a create draws one).
type adminPopupInput struct {
	ID                   *int64               `json:"id"`
	Name                 string               `json:"name"`
	BucketSeed           string               `json:"bucket_seed"`
	Status               *string              `json:"status"`
	Priority             *int                 `json:"priority"`
	StartAt              *time.Time           `json:"start_at"`
	EndAt                *time.Time           `json:"end_at"`
	Targeting            *adminTargetingInput `json:"targeting"`
	ReshowAfterSeconds   *int64               `json:"reshow_after_seconds"`
	ClickCooldownSeconds *int64               `json:"click_cooldown_seconds"`
	CloseCooldownSeconds *int64               `json:"close_cooldown_seconds"`
	MaxImpressions       *int                 `json:"max_impressions"`
	Title                string               `json:"title"`
	Content              string               `json:"content"`
	ImageURL             string               `json:"image_url"`
	LinkURL              string               `json:"link_url"`
	Buttons              []adminButton        `json:"buttons"`
	Ext                  json.RawMessage      `json:"ext"`
}

type adminTargetingInput struct {
	Platforms      []string `json:"platforms"`
	MinAppVersion  string   `json:"min_app_version"`
	MaxAppVersion  string   `json:"max_app_version"`
	Regions        []string `json:"regions"`
	Langs          []string `json:"langs"`
	RolloutPercent *int     `json:"rollout_percent"`
	UIDs           []string `json:"uids"`
}

// fromWire is the boundary from the admin API's JSON to the domain's input.
func fromWire(in adminPopupInput) popup.Input {
	out := popup.Input{
		Name: in.Name, BucketSeed: in.BucketSeed, Priority: in.Priority, StartAt: in.StartAt, EndAt: in.EndAt,
		ReshowAfterSeconds: in.ReshowAfterSeconds, ClickCooldownSeconds: in.ClickCooldownSeconds,
		CloseCooldownSeconds: in.CloseCooldownSeconds, MaxImpressions: in.MaxImpressions,
		Title: in.Title, Content: in.Content, ImageURL: in.ImageURL, LinkURL: in.LinkURL, Ext: in.Ext,
	}
	if in.Status != nil {
		s := popup.Status(*in.Status)
		out.Status = &s
	}
	if t := in.Targeting; t != nil {
		out.Targeting = &popup.TargetingInput{Platforms: t.Platforms, MinAppVersion: t.MinAppVersion, MaxAppVersion: t.MaxAppVersion,
			Regions: t.Regions, Langs: t.Langs, RolloutPercent: t.RolloutPercent, UIDs: t.UIDs}
	}
	if in.Buttons != nil {
		out.Buttons = make([]popup.Button, len(in.Buttons))
		for i, b := range in.Buttons {
			out.Buttons[i] = popup.Button{Text: b.Text, LinkURL: b.LinkURL}
		}
	}
	return out
}

// inputFields maps every key a popup body may hold to where it is decoded, in the order of the
// JSON shape (field errors come out in that order). The server-managed keys other than id are
// decoded into a value that is then dropped.
func (in *adminPopupInput) inputFields() []inputField {
	var ignored json.RawMessage
	return []inputField{
		{"id", &in.ID}, {"name", &in.Name}, {"bucket_seed", &in.BucketSeed}, {"status", &in.Status},
		{"state", &ignored}, {"priority", &in.Priority},
		{"start_at", &in.StartAt}, {"end_at", &in.EndAt}, {"targeting", &in.Targeting},
		{"reshow_after_seconds", &in.ReshowAfterSeconds}, {"click_cooldown_seconds", &in.ClickCooldownSeconds},
		{"close_cooldown_seconds", &in.CloseCooldownSeconds}, {"max_impressions", &in.MaxImpressions},
		{"title", &in.Title}, {"content", &in.Content}, {"image_url", &in.ImageURL}, {"link_url", &in.LinkURL},
		{"buttons", &in.Buttons}, {"ext", &in.Ext},
		{"created_at", &ignored}, {"updated_at", &ignored}, {"revision", &ignored},
	}
}

type inputField struct {
	key string
	dst any
}

// decodePopupBody decodes a popup body. Every problem is an *apiError with code invalid_json: a
// body that is not one JSON object, and, with the fields named (all at once), a value of the
// wrong type, a time that is not RFC 3339 or a key the popup does not have, at any depth. Rules
// on the values themselves are the domain's (validation_failed).
func decodePopupBody(raw []byte) (adminPopupInput, error) {
	var in adminPopupInput
	var obj map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&obj); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return in, badRequest("invalid_json", "body must be a JSON object, not "+te.Value)
		}
		return in, badRequest("invalid_json", "body is not valid JSON: "+strings.TrimPrefix(err.Error(), "json: "))
	}
	if obj == nil {
		return in, badRequest("invalid_json", "body must be a JSON object, not null")
	}
	if dec.More() {
		return in, badRequest("invalid_json", "body must hold exactly one JSON object")
	}
	var fields []popup.FieldError
	known := in.inputFields()
	for _, f := range known {
		v, ok := obj[f.key]
		if !ok {
			continue
		}
		d := json.NewDecoder(bytes.NewReader(v))
		d.DisallowUnknownFields()
		if err := d.Decode(f.dst); err != nil {
			fields = append(fields, fieldDecodeError(f.key, err))
		}
	}
	var unknown []string
	for k := range obj {
		if !slices.ContainsFunc(known, func(f inputField) bool { return f.key == k }) {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	for _, k := range unknown {
		fields = append(fields, popup.FieldError{Field: k, Message: "is not a field of a popup"})
	}
	if len(fields) > 0 {
		return in, &apiError{status: http.StatusBadRequest, code: "invalid_json",
			message: "body is not a valid popup: " + strings.TrimPrefix((&popup.ValidationError{Fields: fields}).Error(), "invalid popup: "),
			fields:  fields}
	}
	return in, nil
}

// fieldDecodeError turns a decoding error of key's value into a FieldError naming the field as
// exactly as the decoder lets us (the nested key for an unknown or mistyped nested field).
func fieldDecodeError(key string, err error) popup.FieldError {
	if key == "start_at" || key == "end_at" {
		return popup.FieldError{Field: key, Message: "must be an RFC 3339 time such as 2026-12-01T00:00:00Z, or null"}
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := key
		if te.Field != "" {
			field = key + "." + te.Field
		}
		return popup.FieldError{Field: field, Message: typeMismatch(te)}
	}
	const unknownPrefix = "json: unknown field "
	if msg := err.Error(); strings.HasPrefix(msg, unknownPrefix) {
		if name, uerr := strconv.Unquote(strings.TrimPrefix(msg, unknownPrefix)); uerr == nil {
			return popup.FieldError{Field: key + "." + name, Message: "is not a field of " + key}
		}
	}
	return popup.FieldError{Field: key, Message: "is not valid: " + strings.TrimPrefix(err.Error(), "json: ")}
}

// typeMismatch says what a JSON value of the wrong type should have been, and what it was.
func typeMismatch(te *json.UnmarshalTypeError) string {
	return "must be " + jsonKind(te.Type) + ", not " + te.Value
}

// jsonKind names what a Go type expects in JSON, for an error message.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer in range"
	case reflect.String:
		return "a string"
	case reflect.Slice:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Bool:
		return "true or false"
	}
	return "a " + t.Kind().String()
}
