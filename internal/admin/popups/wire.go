package popups

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"popupsvc/internal/httpapi"
	"popupsvc/internal/popup"
	"popupsvc/internal/popup/rules"
)

// adminPopup is a popup as the admin API shows it: the domain popup plus the server-managed
// fields (id, state, revision, created_at, updated_at). What GET returns, PUT accepts back.
type adminPopup struct {
	ID                   int64          `json:"id"`
	Name                 string         `json:"name"`
	BucketSeed           string         `json:"bucket_seed"`
	Status               string         `json:"status"`
	State                string         `json:"state"` // computed at the time of the answer
	Priority             int            `json:"priority"`
	StartAt              *time.Time     `json:"start_at"`
	EndAt                *time.Time     `json:"end_at"`
	Targeting            adminTargeting `json:"targeting"`
	ReshowAfterSeconds   int64          `json:"reshow_after_seconds"`
	ClickCooldownSeconds int64          `json:"click_cooldown_seconds"`
	CloseCooldownSeconds int64          `json:"close_cooldown_seconds"`
	MaxImpressions       int            `json:"max_impressions"`
	ExemptFromCaps       bool           `json:"exempt_from_caps"`
	HoldoutExempt        bool           `json:"holdout_exempt"`
	adminCreative
	Experiment *adminExperiment `json:"experiment"` // null: none
	CreatedAt  time.Time        `json:"created_at"`
	UpdatedAt  time.Time        `json:"updated_at"`
	Revision   int64            `json:"revision"`
}

type adminTargeting struct {
	Platforms      []string          `json:"platforms"`
	MinAppVersion  string            `json:"min_app_version"`
	MaxAppVersion  string            `json:"max_app_version"`
	Regions        []string          `json:"regions"`
	Langs          []string          `json:"langs"`
	RolloutPercent int               `json:"rollout_percent"`
	UIDs           []string          `json:"uids"`
	Audiences      adminAudienceRefs `json:"audiences"`
	Placements     []string          `json:"placements"` // ["home"] by default
	Trigger        *adminTrigger     `json:"trigger"`    // null: none
	Rules          []adminRule       `json:"rules"`      // [] when none
}

// adminTrigger is targeting.trigger on the admin wire, in and out: the event and the conditions
// on its properties ([] when none).
type adminTrigger struct {
	Event      string           `json:"event"`
	Conditions []adminCondition `json:"conditions"`
}

// adminRule is one of targeting.rules, in and out.
type adminRule struct {
	Conditions []adminCondition `json:"conditions"`
}

// adminCondition is one condition, in and out: value is a scalar, a list (in, not_in) or absent
// (exists, not_exists), as rules.EncodeValue writes it.
type adminCondition struct {
	Attr  string          `json:"attr"`
	Op    string          `json:"op"`
	Value json.RawMessage `json:"value,omitempty"`
}

func conditionsToWire(cs []rules.Condition) []adminCondition {
	out := make([]adminCondition, len(cs))
	for i, c := range cs {
		out[i] = adminCondition{Attr: c.Attr, Op: string(c.Op), Value: rules.EncodeValue(c.Op, c.Values)}
	}
	return out
}

// conditionsFromWire is the domain's conditions; a value that is no scalar or list of them
// becomes one value of no kind, which validation names (targeting.rules[0].conditions[1].value).
func conditionsFromWire(cs []adminCondition) []rules.Condition {
	if cs == nil {
		return nil
	}
	out := make([]rules.Condition, len(cs))
	for i, c := range cs {
		vs, ok := rules.DecodeValue(c.Value)
		if !ok {
			vs = []rules.Value{{}}
		}
		out[i] = rules.Condition{Attr: c.Attr, Op: rules.Op(c.Op), Values: vs}
	}
	return out
}

func whereToWire(t popup.Targeting) (placements []string, tr *adminTrigger, rs []adminRule) {
	placements = t.PlacementsOr()
	if t.Trigger != nil {
		tr = &adminTrigger{Event: t.Trigger.Event, Conditions: conditionsToWire(t.Trigger.Conditions)}
	}
	rs = make([]adminRule, len(t.Rules))
	for i, r := range t.Rules {
		rs[i] = adminRule{Conditions: conditionsToWire(r.Conditions)}
	}
	return placements, tr, rs
}

// adminAudienceRefs is targeting.audiences on the admin wire, in and out; lists are [] when empty.
type adminAudienceRefs struct {
	Include []int64 `json:"include"`
	Exclude []int64 `json:"exclude"`
}

type adminButton struct {
	Text    string `json:"text"`
	LinkURL string `json:"link_url"`
}

// adminTranslations is a creative's "translations" on the admin wire, in and out: by BCP 47 tag,
// {} when none (docs/CONTRACT.md §13).
type adminTranslations map[string]adminTranslation

// adminTranslation is one language of a creative; "" links keep the creative's own.
type adminTranslation struct {
	Title    string        `json:"title"`
	Content  string        `json:"content"`
	ImageURL string        `json:"image_url"`
	LinkURL  string        `json:"link_url"`
	Buttons  []adminButton `json:"buttons"`
}

// translationsToWire is ts as the admin API shows them: {} for none.
func translationsToWire(ts []popup.Translation) adminTranslations {
	out := make(adminTranslations, len(ts))
	for _, t := range ts {
		out[t.Locale] = adminTranslation{Title: t.Title, Content: t.Content, ImageURL: t.ImageURL, LinkURL: t.LinkURL,
			Buttons: buttonsToWire(t.Buttons)}
	}
	return out
}

// decodeTranslations decodes a creative's "translations" at path, naming every problem under
// path.<tag>: nil for null or {}. Tags are taken as written; the domain puts them in canonical
// case and reports a malformed one.
func decodeTranslations(raw json.RawMessage, path string, dst *[]popup.Translation) []popup.FieldError {
	if isNull(raw) {
		*dst = nil
		return nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return []popup.FieldError{{Field: path, Message: "must be an object of translations by language tag, like {\"pt-BR\": {\"title\": …}}"}}
	}
	tags := make([]string, 0, len(obj))
	for tag := range obj {
		tags = append(tags, tag)
	}
	slices.Sort(tags)
	var fes []popup.FieldError
	out := make([]popup.Translation, len(tags))
	for i, tag := range tags {
		t := &out[i]
		t.Locale = tag
		var buttons []adminButton
		fes = append(fes, httpapi.DecodeObject(obj[tag], path+"."+tag, "a translation", []httpapi.InputField{
			{Key: "title", Dst: &t.Title}, {Key: "content", Dst: &t.Content}, {Key: "image_url", Dst: &t.ImageURL},
			{Key: "link_url", Dst: &t.LinkURL}, {Key: "buttons", Dst: &buttons},
		})...)
		t.Buttons = buttonsFromWire(buttons)
	}
	*dst = out
	return fes
}

// adminExperiment is a popup's experiment as the admin API shows it (docs/CONTRACT.md §10).
type adminExperiment struct {
	Status           string         `json:"status"`
	CoveragePercent  int            `json:"coverage_percent"`
	Variants         []adminVariant `json:"variants"`
	Control          *adminControl  `json:"control"`
	PlannedEndAt     *time.Time     `json:"planned_end_at"`
	PrimaryGoal      *string        `json:"primary_goal"`
	Phase            int            `json:"phase"`
	Salt             string         `json:"salt"`
	PhaseStartedAt   *time.Time     `json:"phase_started_at"`
	ConcludedVariant *string        `json:"concluded_variant"`
}

type adminVariant struct {
	Key    string `json:"key"`
	Weight int    `json:"weight"`
	adminCreative
}

// adminCreative is a creative (popup.Creative) on the admin wire, out: the popup's own content
// and each variant's. Both embed it, so that a content field is written here once; encoding/json
// writes its fields where it is embedded.
type adminCreative struct {
	Title        string            `json:"title"`
	Content      string            `json:"content"`
	ImageURL     string            `json:"image_url"`
	ImageAlt     string            `json:"image_alt"`
	LinkURL      string            `json:"link_url"`
	Buttons      []adminButton     `json:"buttons"`
	Ext          json.RawMessage   `json:"ext"`
	Translations adminTranslations `json:"translations"`
}

func creativeToWire(c popup.Creative) adminCreative {
	return adminCreative{Title: c.Title, Content: c.Content, ImageURL: c.ImageURL, ImageAlt: c.ImageAlt, LinkURL: c.LinkURL,
		Buttons: buttonsToWire(c.Buttons), Ext: extOrEmpty(c.Ext), Translations: translationsToWire(c.Translations)}
}

type adminControl struct {
	Weight int    `json:"weight"`
	Mode   string `json:"mode"`
}

func buttonsToWire(bs []popup.Button) []adminButton {
	out := make([]adminButton, len(bs))
	for i, b := range bs {
		out[i] = adminButton{Text: b.Text, LinkURL: b.LinkURL}
	}
	return out
}

func extOrEmpty(ext json.RawMessage) json.RawMessage {
	if len(ext) == 0 {
		return json.RawMessage("{}")
	}
	return ext
}

// experimentToWire is e as the admin API shows it: times in UTC, null for none.
func experimentToWire(e *popup.Experiment) *adminExperiment {
	if e == nil {
		return nil
	}
	out := &adminExperiment{Status: string(e.Status), CoveragePercent: e.CoveragePercent, Variants: make([]adminVariant, len(e.Variants)),
		PlannedEndAt: popup.UTCPtr(e.PlannedEndAt), Phase: e.Phase, Salt: e.Salt, PhaseStartedAt: popup.UTCPtr(e.PhaseStartedAt)}
	if e.PrimaryGoal != "" {
		out.PrimaryGoal = &e.PrimaryGoal
	}
	for i, v := range e.Variants {
		out.Variants[i] = adminVariant{Key: v.Key, Weight: v.Weight, adminCreative: creativeToWire(v.Creative)}
	}
	if c := e.Control; c != nil {
		out.Control = &adminControl{Weight: c.Weight, Mode: string(c.Mode)}
	}
	if e.ConcludedVariant != "" {
		k := e.ConcludedVariant
		out.ConcludedVariant = &k
	}
	return out
}

// toWire is the boundary from the domain popup to the admin API's JSON; the campaign state is
// p's at now.
func toWire(p popup.Popup, now time.Time) adminPopup {
	t := p.Targeting
	placements, trigger, rs := whereToWire(t)
	return adminPopup{
		ID: p.ID, Name: p.Name, BucketSeed: p.RolloutSeed(), Status: string(p.Status), State: string(p.StateAt(now)),
		Priority: p.Priority, StartAt: p.StartAt, EndAt: p.EndAt,
		Targeting: adminTargeting{Platforms: nonNil(t.Platforms), MinAppVersion: t.MinAppVersion, MaxAppVersion: t.MaxAppVersion,
			Regions: nonNil(t.Regions), Langs: nonNil(t.Langs), RolloutPercent: t.RolloutPercent, UIDs: nonNil(t.UIDs),
			Audiences:  adminAudienceRefs{Include: nonNil(t.Audiences.Include), Exclude: nonNil(t.Audiences.Exclude)},
			Placements: placements, Trigger: trigger, Rules: rs},
		ReshowAfterSeconds: p.ReshowAfterSeconds, ClickCooldownSeconds: p.ClickCooldownSeconds,
		CloseCooldownSeconds: p.CloseCooldownSeconds, MaxImpressions: p.MaxImpressions, ExemptFromCaps: p.ExemptFromCaps,
		HoldoutExempt: p.HoldoutExempt, adminCreative: creativeToWire(p.Creative),
		Experiment: experimentToWire(p.Experiment), CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt, Revision: p.Revision,
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
	ID                   *int64                `json:"id"`
	Name                 string                `json:"name"`
	BucketSeed           string                `json:"bucket_seed"`
	Status               *string               `json:"status"`
	Priority             *int                  `json:"priority"`
	StartAt              *time.Time            `json:"start_at"`
	EndAt                *time.Time            `json:"end_at"`
	Targeting            *adminTargetingInput  `json:"targeting"`
	ReshowAfterSeconds   *int64                `json:"reshow_after_seconds"`
	ClickCooldownSeconds *int64                `json:"click_cooldown_seconds"`
	CloseCooldownSeconds *int64                `json:"close_cooldown_seconds"`
	MaxImpressions       *int                  `json:"max_impressions"`
	ExemptFromCaps       bool                  `json:"exempt_from_caps"`
	HoldoutExempt        bool                  `json:"holdout_exempt"`
	Creative             adminCreativeInput    `json:"-"`          // decoded by its fields
	Experiment           *adminExperimentInput `json:"experiment"` // nil: none (absent or null)
}

// adminExperimentInput is an experiment as POST and PUT accept it: coverage_percent defaults to
// 100, a control's mode to none. The server-managed fields (status, phase, salt,
// phase_started_at, concluded_variant) are accepted so that a GET's answer can be sent back, and
// ignored: only the transitions change them (popup.KeepExperiment).
type adminExperimentInput struct {
	CoveragePercent *int
	Variants        []adminVariantInput
	Control         *adminControlInput
	PlannedEndAt    *time.Time
	PrimaryGoal     *string
	// PrimaryGoalNamed: the body has the key primary_goal (null too). Without it the stored
	// experiment's primary goal stays (popup.UpdateOptions.KeepPrimaryGoal).
	PrimaryGoalNamed bool
}

type adminVariantInput struct {
	Key      string
	Weight   int
	Creative adminCreativeInput
}

// adminCreativeInput is a creative as POST and PUT accept it: the popup's own content and each
// variant's, decoded by the same fields.
type adminCreativeInput struct {
	Title    string
	Content  string
	ImageURL string
	ImageAlt string
	LinkURL  string
	Buttons  []adminButton
	Ext      json.RawMessage
	// Translations are decoded by decodeTranslations.
	Translations []popup.Translation
}

// fields maps every key of a creative to where it is decoded, in the order of the JSON shape.
func (in *adminCreativeInput) fields() []httpapi.InputField {
	return []httpapi.InputField{
		{Key: "title", Dst: &in.Title}, {Key: "content", Dst: &in.Content}, {Key: "image_url", Dst: &in.ImageURL},
		{Key: "image_alt", Dst: &in.ImageAlt}, {Key: "link_url", Dst: &in.LinkURL}, {Key: "buttons", Dst: &in.Buttons}, {Key: "ext", Dst: &in.Ext},
		{Key: "translations", Decode: func(raw json.RawMessage, path string) []popup.FieldError {
			return decodeTranslations(raw, path, &in.Translations)
		}},
	}
}

// creative is the domain's creative of in; ext is left as sent (BuildWith compacts it).
func (in *adminCreativeInput) creative() popup.Creative {
	return popup.Creative{Title: in.Title, Content: in.Content, ImageURL: in.ImageURL, ImageAlt: in.ImageAlt, LinkURL: in.LinkURL,
		Buttons: buttonsFromWire(in.Buttons), Ext: in.Ext, Translations: in.Translations}
}

type adminControlInput struct {
	Weight int
	Mode   *string
}

// fields maps every key an experiment body may hold to where it is decoded, in the order of the
// JSON shape; variants and control are objects of their own (httpapi.DecodeObject names their fields).
func (in *adminExperimentInput) fields() []httpapi.InputField {
	var ignored json.RawMessage
	return []httpapi.InputField{
		{Key: "status", Dst: &ignored}, {Key: "coverage_percent", Dst: &in.CoveragePercent},
		{Key: "variants", Decode: in.decodeVariants}, {Key: "control", Decode: in.decodeControl},
		{Key: "planned_end_at", Dst: &in.PlannedEndAt}, {Key: "primary_goal", Decode: func(raw json.RawMessage, path string) []popup.FieldError {
			in.PrimaryGoalNamed = true
			return httpapi.DecodeValue(raw, strings.TrimSuffix(path, "primary_goal"), "primary_goal", &in.PrimaryGoal)
		}},
		{Key: "phase", Dst: &ignored}, {Key: "salt", Dst: &ignored}, {Key: "phase_started_at", Dst: &ignored},
		{Key: "concluded_variant", Dst: &ignored},
	}
}

func (in *adminExperimentInput) decodeVariants(raw json.RawMessage, path string) []popup.FieldError {
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil || list == nil {
		return []popup.FieldError{{Field: path, Message: "must be an array of variants"}}
	}
	var fes []popup.FieldError
	in.Variants = make([]adminVariantInput, len(list))
	for i, r := range list {
		v := &in.Variants[i]
		fields := append([]httpapi.InputField{{Key: "key", Dst: &v.Key}, {Key: "weight", Dst: &v.Weight}}, v.Creative.fields()...)
		fes = append(fes, httpapi.DecodeObject(r, path+"["+strconv.Itoa(i)+"]", "a variant", fields)...)
	}
	return fes
}

func (in *adminExperimentInput) decodeControl(raw json.RawMessage, path string) []popup.FieldError {
	if isNull(raw) {
		return nil
	}
	in.Control = &adminControlInput{}
	return httpapi.DecodeObject(raw, path, "the control", []httpapi.InputField{{Key: "weight", Dst: &in.Control.Weight}, {Key: "mode", Dst: &in.Control.Mode}})
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// decodeExperiment decodes a popup body's experiment: nil for null.
func decodeExperiment(raw json.RawMessage, path string) (*adminExperimentInput, []popup.FieldError) {
	if isNull(raw) {
		return nil, nil
	}
	in := &adminExperimentInput{}
	return in, httpapi.DecodeObject(raw, path, "an experiment", in.fields())
}

// keepsPrimaryGoal reports whether a write of in keeps the stored experiment's primary goal: its
// experiment does not name one (docs/CONTRACT.md §10: absent keeps, null removes).
func (in adminPopupInput) keepsPrimaryGoal() bool {
	return in.Experiment != nil && !in.Experiment.PrimaryGoalNamed
}

type adminTargetingInput struct {
	Platforms      []string           `json:"platforms"`
	MinAppVersion  string             `json:"min_app_version"`
	MaxAppVersion  string             `json:"max_app_version"`
	Regions        []string           `json:"regions"`
	Langs          []string           `json:"langs"`
	RolloutPercent *int               `json:"rollout_percent"`
	UIDs           []string           `json:"uids"`
	Audiences      *adminAudienceRefs `json:"audiences"`
	Placements     []string           `json:"placements"`
	Trigger        *adminTrigger      `json:"trigger"`
	Rules          []adminRule        `json:"rules"`
}

// fromWire is the boundary from the admin API's JSON to the domain's input.
func fromWire(in adminPopupInput) popup.Input {
	out := popup.Input{
		Name: in.Name, BucketSeed: in.BucketSeed, Priority: in.Priority, StartAt: in.StartAt, EndAt: in.EndAt,
		ReshowAfterSeconds: in.ReshowAfterSeconds, ClickCooldownSeconds: in.ClickCooldownSeconds,
		CloseCooldownSeconds: in.CloseCooldownSeconds, MaxImpressions: in.MaxImpressions, ExemptFromCaps: in.ExemptFromCaps,
		HoldoutExempt: in.HoldoutExempt, Creative: in.Creative.creative(),
	}
	if in.Status != nil {
		s := popup.Status(*in.Status)
		out.Status = &s
	}
	if t := in.Targeting; t != nil {
		out.Targeting = &popup.TargetingInput{Platforms: t.Platforms, MinAppVersion: t.MinAppVersion, MaxAppVersion: t.MaxAppVersion,
			Regions: t.Regions, Langs: t.Langs, RolloutPercent: t.RolloutPercent, UIDs: t.UIDs}
		if a := t.Audiences; a != nil {
			out.Targeting.Audiences = popup.AudienceRefs{Include: a.Include, Exclude: a.Exclude}
		}
		out.Targeting.Placements = t.Placements
		if tr := t.Trigger; tr != nil {
			out.Targeting.Trigger = &popup.Trigger{Event: tr.Event, Conditions: conditionsFromWire(tr.Conditions)}
		}
		if t.Rules != nil {
			out.Targeting.Rules = make([]rules.Rule, len(t.Rules))
			for i, r := range t.Rules {
				out.Targeting.Rules[i] = rules.Rule{Conditions: conditionsFromWire(r.Conditions)}
			}
		}
	}
	out.Experiment = experimentFromWire(in.Experiment)
	return out
}

func buttonsFromWire(bs []adminButton) []popup.Button {
	if bs == nil {
		return nil
	}
	out := make([]popup.Button, len(bs))
	for i, b := range bs {
		out[i] = popup.Button{Text: b.Text, LinkURL: b.LinkURL}
	}
	return out
}

// experimentFromWire is the experiment a write gives the popup, with its defaults (coverage 100,
// control mode none); its server-managed fields are left for the store to fill
// (popup.KeepExperiment), its status a draft's meanwhile.
func experimentFromWire(in *adminExperimentInput) *popup.Experiment {
	if in == nil {
		return nil
	}
	e := &popup.Experiment{Status: popup.ExperimentDraft, CoveragePercent: 100, PlannedEndAt: in.PlannedEndAt,
		Variants: make([]popup.Variant, len(in.Variants))}
	if in.CoveragePercent != nil {
		e.CoveragePercent = *in.CoveragePercent
	}
	if in.PrimaryGoal != nil {
		e.PrimaryGoal = *in.PrimaryGoal
	}
	if e.PlannedEndAt != nil {
		t := e.PlannedEndAt.UTC()
		e.PlannedEndAt = &t
	}
	for i, v := range in.Variants {
		e.Variants[i] = popup.Variant{Key: v.Key, Weight: v.Weight, Creative: v.Creative.creative()}
	}
	if c := in.Control; c != nil {
		e.Control = &popup.Control{Weight: c.Weight, Mode: popup.ControlNone}
		if c.Mode != nil {
			e.Control.Mode = popup.ControlMode(*c.Mode)
		}
	}
	return e
}

// inputFields maps every key a popup body may hold to where it is decoded, in the order of the
// JSON shape (field errors come out in that order). The server-managed keys other than id are
// decoded into a value that is then dropped.
func (in *adminPopupInput) inputFields() []httpapi.InputField {
	var ignored json.RawMessage
	fields := []httpapi.InputField{
		{Key: "id", Dst: &in.ID}, {Key: "name", Dst: &in.Name}, {Key: "bucket_seed", Dst: &in.BucketSeed}, {Key: "status", Dst: &in.Status},
		{Key: "state", Dst: &ignored}, {Key: "priority", Dst: &in.Priority},
		{Key: "start_at", Dst: &in.StartAt}, {Key: "end_at", Dst: &in.EndAt}, {Key: "targeting", Dst: &in.Targeting},
		{Key: "reshow_after_seconds", Dst: &in.ReshowAfterSeconds}, {Key: "click_cooldown_seconds", Dst: &in.ClickCooldownSeconds},
		{Key: "close_cooldown_seconds", Dst: &in.CloseCooldownSeconds}, {Key: "max_impressions", Dst: &in.MaxImpressions},
		{Key: "exempt_from_caps", Dst: &in.ExemptFromCaps}, {Key: "holdout_exempt", Dst: &in.HoldoutExempt},
	}
	fields = append(fields, in.Creative.fields()...)
	return append(fields,
		httpapi.InputField{Key: "experiment", Decode: func(raw json.RawMessage, path string) (fes []popup.FieldError) {
			in.Experiment, fes = decodeExperiment(raw, path)
			return fes
		}},
		httpapi.InputField{Key: "created_at", Dst: &ignored}, httpapi.InputField{Key: "updated_at", Dst: &ignored},
		httpapi.InputField{Key: "revision", Dst: &ignored},
	)
}

// decodePopupBody decodes a popup body. Every problem is an *httpapi.Error with code invalid_json: a
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
			return in, httpapi.BadRequest("invalid_json", "body must be a JSON object, not "+te.Value)
		}
		return in, httpapi.BadRequest("invalid_json", "body is not valid JSON: "+strings.TrimPrefix(err.Error(), "json: "))
	}
	if obj == nil {
		return in, httpapi.BadRequest("invalid_json", "body must be a JSON object, not null")
	}
	if dec.More() {
		return in, httpapi.BadRequest("invalid_json", "body must hold exactly one JSON object")
	}
	fields := httpapi.DecodeFields(obj, "", "a popup", in.inputFields())
	if len(fields) > 0 {
		return in, httpapi.NewError(httpapi.Problem{Status: http.StatusBadRequest, Code: "invalid_json",
			Message: "body is not a valid popup: " + strings.TrimPrefix((&popup.ValidationError{Fields: fields}).Error(), "invalid popup: "),
			Fields:  fields})
	}
	return in, nil
}
