// Package popupdoc is the stored popup document: the one JSON codec of every place a popup is
// stored, the Redis config blob, MySQL's JSON columns (targeting, content, experiment) and the
// documents of its revisions and audit entries. Golden files pin its keys (testdata/).
//
// These are storage shapes, not the domain type: stored documents outlive the build that wrote
// them (rows for ever; the blob across a rolling deploy, when old and new instances read each
// other's), so a key is never renamed or dropped here, and every document any release wrote keeps
// decoding (testdata/older/). Two envelopes share the parts: a blob Entry holds its content's keys
// at its top level, a Revision holds them under "content", as each has since it first existed.
package popupdoc

import (
	"cmp"
	"encoding/json"
	"slices"
	"time"

	"popupsvc/internal/popup"
	"popupsvc/internal/popup/rules"
)

type (
	// Targeting is popup_config.targeting and a document's "targeting".
	Targeting struct {
		Platforms      []string   `json:"platforms"`
		MinAppVersion  string     `json:"min_app_version"`
		MaxAppVersion  string     `json:"max_app_version"`
		Regions        []string   `json:"regions"`
		Langs          []string   `json:"langs"`
		RolloutPercent int        `json:"rollout_percent"`
		UIDs           []string   `json:"uids"`
		Audiences      *Audiences `json:"audiences,omitempty"`
		// Placements, Trigger and Rules are absent at their defaults (the homepage alone, no
		// trigger, no rules), as in every document written before they existed.
		Placements []string `json:"placements,omitempty"`
		Trigger    *Trigger `json:"trigger,omitempty"`
		Rules      []Rule   `json:"rules,omitempty"`
	}
	// Trigger is a targeting's "trigger": the event and its property conditions.
	Trigger struct {
		Event      string      `json:"event"`
		Conditions []Condition `json:"conditions,omitempty"`
	}
	// Rule is one of a targeting's "rules".
	Rule struct {
		Conditions []Condition `json:"conditions"`
	}
	// Condition is one condition of a rule or a trigger; Value is its operand as JSON (a scalar, a
	// list for in and not_in, absent for exists and not_exists: rules.EncodeValue).
	Condition struct {
		Attr  string          `json:"attr"`
		Op    string          `json:"op"`
		Value json.RawMessage `json:"value,omitempty"`
	}
	// Audiences is a targeting's "audiences"; a targeting without audiences has no such key, as
	// every document written before audiences existed, so that its stored bytes stay what they
	// were (operators query the columns: docs/CONTRACT.md §5).
	Audiences struct {
		Include []int64 `json:"include"`
		Exclude []int64 `json:"exclude"`
	}
	// Content is a creative: popup_config.content, a Revision's "content", and the top-level keys
	// of an Entry and of a Variant.
	Content struct {
		Title    string `json:"title"`
		Content  string `json:"content"`
		ImageURL string `json:"image_url"`
		// ImageAlt is absent when empty, as in every document written before it existed.
		ImageAlt string          `json:"image_alt,omitempty"`
		LinkURL  string          `json:"link_url"`
		Buttons  []Button        `json:"buttons"`
		Ext      json.RawMessage `json:"ext"`
		// Translations are the creative in other languages by BCP 47 tag; a creative without
		// any has no such key, as every document written before translations existed.
		Translations map[string]Translation `json:"translations,omitempty"`
	}
	// Translation is one language of a creative's "translations".
	Translation struct {
		Title    string   `json:"title"`
		Content  string   `json:"content"`
		ImageURL string   `json:"image_url"`
		LinkURL  string   `json:"link_url"`
		Buttons  []Button `json:"buttons"`
	}
	// Button is one of a creative's buttons.
	Button struct {
		Text    string `json:"text"`
		LinkURL string `json:"link_url"`
	}
	// Experiment is popup_config.experiment (NULL: none) and a document's "experiment" (absent:
	// none, and in documents from before experiments existed).
	Experiment struct {
		Status          string     `json:"status"`
		CoveragePercent int        `json:"coverage_percent"`
		Variants        []Variant  `json:"variants"`
		Control         *Control   `json:"control"`
		PlannedEndAt    *time.Time `json:"planned_end_at"`
		// PrimaryGoal is absent for none, as in documents from before goals existed.
		PrimaryGoal      string     `json:"primary_goal,omitempty"`
		Phase            int        `json:"phase"`
		Salt             string     `json:"salt"`
		PhaseStartedAt   *time.Time `json:"phase_started_at"`
		ConcludedVariant string     `json:"concluded_variant"`
	}
	// Variant is an experiment's content arm: its key and weight beside its creative's keys.
	Variant struct {
		Key    string `json:"key"`
		Weight int    `json:"weight"`
		Content
	}
	// Control is an experiment's control arm.
	Control struct {
		Weight int    `json:"weight"`
		Mode   string `json:"mode"`
	}
	// Header is what both envelopes hold of a popup besides its parts: popup_config's other
	// columns.
	Header struct {
		ID       int64  `json:"id"`
		Revision int64  `json:"revision"`
		Name     string `json:"name"`
		// BucketSeed is absent from documents written before seeds existed (migration 00007):
		// the popup's decimal id is its seed (popup.Popup.RolloutSeed).
		BucketSeed           string     `json:"bucket_seed,omitempty"`
		Status               string     `json:"status"`
		Priority             int        `json:"priority"`
		StartAt              *time.Time `json:"start_at"`
		EndAt                *time.Time `json:"end_at"`
		ReshowAfterSeconds   int64      `json:"reshow_after_seconds"`
		ClickCooldownSeconds int64      `json:"click_cooldown_seconds"`
		CloseCooldownSeconds int64      `json:"close_cooldown_seconds"`
		MaxImpressions       int        `json:"max_impressions"`
		// ExemptFromCaps is absent (false) from documents of popups that pace like the others, as
		// from every document written before pacing existed.
		ExemptFromCaps bool `json:"exempt_from_caps,omitempty"`
		// HoldoutExempt is absent (false) from documents of popups the holdout keeps from its
		// users, as from every document written before the holdout existed.
		HoldoutExempt bool      `json:"holdout_exempt,omitempty"`
		CreatedAt     time.Time `json:"created_at"`
		UpdatedAt     time.Time `json:"updated_at"`
	}
	// Entry is one popup of the Redis config blob (a JSON array of entries).
	Entry struct {
		Header
		Targeting Targeting `json:"targeting"`
		Content
		Experiment *Experiment `json:"experiment,omitempty"`
	}
	// Revision is a popup as popup_revision and popup_audit store it (and migration 00004 wrote
	// for the popups that existed before it).
	Revision struct {
		Header
		Targeting  Targeting   `json:"targeting"`
		Content    Content     `json:"content"`
		Experiment *Experiment `json:"experiment,omitempty"`
	}
)

// HeaderOf is p's header.
func HeaderOf(p *popup.Popup) Header {
	return Header{ID: p.ID, Revision: p.Revision, Name: p.Name, BucketSeed: p.BucketSeed, Status: string(p.Status),
		Priority: p.Priority, StartAt: p.StartAt, EndAt: p.EndAt, ReshowAfterSeconds: p.ReshowAfterSeconds,
		ClickCooldownSeconds: p.ClickCooldownSeconds, CloseCooldownSeconds: p.CloseCooldownSeconds,
		MaxImpressions: p.MaxImpressions, ExemptFromCaps: p.ExemptFromCaps, HoldoutExempt: p.HoldoutExempt, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}
}

// Popup is the popup of h, without its parts; times in UTC.
func (h *Header) Popup() popup.Popup {
	return popup.Popup{ID: h.ID, Revision: h.Revision, Name: h.Name, BucketSeed: h.BucketSeed, Status: popup.Status(h.Status),
		Priority: h.Priority, StartAt: popup.UTCPtr(h.StartAt), EndAt: popup.UTCPtr(h.EndAt),
		ReshowAfterSeconds: h.ReshowAfterSeconds, ClickCooldownSeconds: h.ClickCooldownSeconds,
		CloseCooldownSeconds: h.CloseCooldownSeconds, MaxImpressions: h.MaxImpressions, ExemptFromCaps: h.ExemptFromCaps, HoldoutExempt: h.HoldoutExempt,
		CreatedAt: h.CreatedAt.UTC(), UpdatedAt: h.UpdatedAt.UTC()}
}

// TargetingOf is t as stored; lists keep their nil-ness (null stays null, [] stays []).
func TargetingOf(t popup.Targeting) Targeting {
	out := Targeting{Platforms: t.Platforms, MinAppVersion: t.MinAppVersion, MaxAppVersion: t.MaxAppVersion,
		Regions: t.Regions, Langs: t.Langs, RolloutPercent: t.RolloutPercent, UIDs: t.UIDs,
		Audiences: audiencesOf(t.Audiences), Placements: t.Placements, Rules: rulesOf(t.Rules)}
	if tr := t.Trigger; tr != nil {
		out.Trigger = &Trigger{Event: tr.Event, Conditions: conditionsOf(tr.Conditions)}
	}
	return out
}

func rulesOf(rs []rules.Rule) []Rule {
	if rs == nil {
		return nil
	}
	out := make([]Rule, len(rs))
	for i, r := range rs {
		out[i] = Rule{Conditions: conditionsOf(r.Conditions)}
		if out[i].Conditions == nil {
			out[i].Conditions = []Condition{} // (invalid, but kept as it was)
		}
	}
	return out
}

func conditionsOf(cs []rules.Condition) []Condition {
	if cs == nil {
		return nil
	}
	out := make([]Condition, len(cs))
	for i, c := range cs {
		out[i] = Condition{Attr: c.Attr, Op: string(c.Op), Value: rules.EncodeValue(c.Op, c.Values)}
	}
	return out
}

// popupRules is the stored rules (nil: none).
func popupRules(rs []Rule) []rules.Rule {
	if len(rs) == 0 {
		return nil
	}
	out := make([]rules.Rule, len(rs))
	for i, r := range rs {
		out[i] = rules.Rule{Conditions: popupConditions(r.Conditions)}
	}
	return out
}

// popupConditions is the stored conditions (nil: none). An operand that is not a scalar or a list
// of them reads as none, which validation then refuses, so the popup is reported, not served.
func popupConditions(cs []Condition) []rules.Condition {
	if len(cs) == 0 {
		return nil
	}
	out := make([]rules.Condition, len(cs))
	for i, c := range cs {
		vs, _ := rules.DecodeValue(c.Value)
		out[i] = rules.Condition{Attr: c.Attr, Op: rules.Op(c.Op), Values: vs}
	}
	return out
}

// Popup is the stored audiences (nil: none).
func (a *Audiences) Popup() popup.AudienceRefs {
	if a == nil {
		return popup.AudienceRefs{}
	}
	return popup.AudienceRefs{Include: a.Include, Exclude: a.Exclude}
}

// audiencesOf is refs as stored: nil (no key) when it names no audience.
func audiencesOf(refs popup.AudienceRefs) *Audiences {
	if len(refs.Include) == 0 && len(refs.Exclude) == 0 {
		return nil
	}
	return &Audiences{Include: refs.Include, Exclude: refs.Exclude}
}

// Popup is the stored targeting.
func (t Targeting) Popup() popup.Targeting {
	out := popup.Targeting{Platforms: t.Platforms, MinAppVersion: t.MinAppVersion, MaxAppVersion: t.MaxAppVersion,
		Regions: t.Regions, Langs: t.Langs, RolloutPercent: t.RolloutPercent, UIDs: t.UIDs,
		Audiences: t.Audiences.Popup(), Placements: t.Placements, Rules: popupRules(t.Rules)}
	if len(out.Placements) == 0 {
		out.Placements = nil
	}
	if tr := t.Trigger; tr != nil {
		out.Trigger = &popup.Trigger{Event: tr.Event, Conditions: popupConditions(tr.Conditions)}
	}
	return out
}

// ContentOf is c as stored; its buttons keep their nil-ness.
func ContentOf(c popup.Creative) Content {
	out := Content{Title: c.Title, Content: c.Content, ImageURL: c.ImageURL, ImageAlt: c.ImageAlt, LinkURL: c.LinkURL, Buttons: buttonsOf(c.Buttons), Ext: c.Ext}
	if len(c.Translations) > 0 {
		out.Translations = make(map[string]Translation, len(c.Translations))
		for _, t := range c.Translations {
			out.Translations[t.Locale] = Translation{Title: t.Title, Content: t.Content, ImageURL: t.ImageURL,
				LinkURL: t.LinkURL, Buttons: buttonsOf(t.Buttons)}
		}
	}
	return out
}

// buttonsOf is bs as stored, keeping its nil-ness.
func buttonsOf(bs []popup.Button) []Button {
	if bs == nil {
		return nil
	}
	out := make([]Button, len(bs))
	for i, b := range bs {
		out[i] = Button(b)
	}
	return out
}

// popupButtons is the stored buttons, [] for none.
func popupButtons(bs []Button) []popup.Button {
	out := make([]popup.Button, len(bs))
	for i, b := range bs {
		out[i] = popup.Button(b)
	}
	return out
}

// Creative is the stored creative; missing buttons read as none and a missing ext as {} (a
// content written before they existed).
func (c *Content) Creative() popup.Creative {
	out := popup.Creative{Title: c.Title, Content: c.Content, ImageURL: c.ImageURL, ImageAlt: c.ImageAlt, LinkURL: c.LinkURL, Ext: c.Ext,
		Buttons: popupButtons(c.Buttons)}
	if len(c.Translations) > 0 {
		out.Translations = make([]popup.Translation, 0, len(c.Translations))
		for locale, t := range c.Translations {
			out.Translations = append(out.Translations, popup.Translation{Locale: locale, Title: t.Title, Content: t.Content,
				ImageURL: t.ImageURL, LinkURL: t.LinkURL, Buttons: popupButtons(t.Buttons)})
		}
		slices.SortFunc(out.Translations, func(a, b popup.Translation) int { return cmp.Compare(a.Locale, b.Locale) })
	}
	if len(out.Ext) == 0 {
		out.Ext = json.RawMessage(`{}`)
	}
	return out
}

// ExperimentOf is e as stored; nil (no experiment) stays nil.
func ExperimentOf(e *popup.Experiment) *Experiment {
	if e == nil {
		return nil
	}
	d := &Experiment{Status: string(e.Status), CoveragePercent: e.CoveragePercent, Variants: make([]Variant, len(e.Variants)),
		PlannedEndAt: e.PlannedEndAt, PrimaryGoal: e.PrimaryGoal, Phase: e.Phase, Salt: e.Salt, PhaseStartedAt: e.PhaseStartedAt, ConcludedVariant: e.ConcludedVariant}
	for i, v := range e.Variants {
		d.Variants[i] = Variant{Key: v.Key, Weight: v.Weight, Content: ContentOf(v.Creative)}
	}
	if c := e.Control; c != nil {
		d.Control = &Control{Weight: c.Weight, Mode: string(c.Mode)}
	}
	return d
}

// Popup is the stored experiment (nil: none); its times in UTC.
func (d *Experiment) Popup() *popup.Experiment {
	if d == nil {
		return nil
	}
	e := &popup.Experiment{Status: popup.ExperimentStatus(d.Status), CoveragePercent: d.CoveragePercent,
		Variants: make([]popup.Variant, len(d.Variants)), PlannedEndAt: popup.UTCPtr(d.PlannedEndAt), PrimaryGoal: d.PrimaryGoal, Phase: d.Phase, Salt: d.Salt,
		PhaseStartedAt: popup.UTCPtr(d.PhaseStartedAt), ConcludedVariant: d.ConcludedVariant}
	for i := range d.Variants {
		v := &d.Variants[i]
		e.Variants[i] = popup.Variant{Key: v.Key, Weight: v.Weight, Creative: v.Content.Creative()}
	}
	if c := d.Control; c != nil {
		e.Control = &popup.Control{Weight: c.Weight, Mode: popup.ControlMode(c.Mode)}
	}
	return e
}

// EntryOf is p as the config blob holds it.
func EntryOf(p *popup.Popup) Entry {
	return Entry{Header: HeaderOf(p), Targeting: TargetingOf(p.Targeting), Content: ContentOf(p.Creative),
		Experiment: ExperimentOf(p.Experiment)}
}

// Popup is the popup of a blob entry.
func (e *Entry) Popup() popup.Popup {
	return assemble(&e.Header, e.Targeting, &e.Content, e.Experiment)
}

// RevisionOf is p as a revision or an audit entry stores it.
func RevisionOf(p *popup.Popup) Revision {
	return Revision{Header: HeaderOf(p), Targeting: TargetingOf(p.Targeting), Content: ContentOf(p.Creative),
		Experiment: ExperimentOf(p.Experiment)}
}

// Popup is the popup of a revision document.
func (r *Revision) Popup() popup.Popup {
	return assemble(&r.Header, r.Targeting, &r.Content, r.Experiment)
}

// assemble is the popup of a document's parts, whichever envelope held them.
func assemble(h *Header, t Targeting, c *Content, e *Experiment) popup.Popup {
	p := h.Popup()
	p.Targeting = t.Popup()
	p.Creative = c.Creative()
	p.Experiment = e.Popup()
	return p
}

// Goal is a goal as its history (popup_goal_change.before_state and after_state) stores it.
type Goal struct {
	Key         string    `json:"key"`
	Name        string    `json:"name"`
	WindowHours int64     `json:"window_hours"`
	Value       string    `json:"value"`
	ValueCap    *float64  `json:"value_cap,omitempty"`
	Version     int64     `json:"version"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// GoalOf is g as stored; nil stays nil.
func GoalOf(g *popup.Goal) *Goal {
	if g == nil {
		return nil
	}
	return &Goal{Key: g.Key, Name: g.Name, WindowHours: int64(g.Window / time.Hour), Value: string(g.Value),
		ValueCap: g.ValueCap, Version: g.Version, CreatedAt: g.CreatedAt.UTC(), UpdatedAt: g.UpdatedAt.UTC()}
}

// Popup is the stored goal (nil: none), its times in UTC.
func (d *Goal) Popup() *popup.Goal {
	if d == nil {
		return nil
	}
	return &popup.Goal{Key: d.Key, Name: d.Name, Window: time.Duration(d.WindowHours) * time.Hour, Value: popup.GoalValue(d.Value),
		ValueCap: d.ValueCap, Version: d.Version, CreatedAt: d.CreatedAt.UTC(), UpdatedAt: d.UpdatedAt.UTC()}
}
