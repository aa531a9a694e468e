// Package popup holds the popup domain, pure: configs and their validation, targeting, display
// rules, selection, experiment and holdout assignment, goals, audiences' records, roles and the
// rights of a write, and errors with stable codes. The reporting read models (a popup's stats
// over days, its conversions on the goals, an experiment arm's days and goal counts, the
// holdout's phase history) are not rules of the domain: they live in internal/report, which the
// adapter that fills them and the results that serve them import. For the same reason the change
// log's read models live in internal/changelog and the admin list of popups in
// internal/popuplist.
package popup

import (
	"bytes"
	"cmp"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"popupsvc/internal/popup/rules"
)

// Status is the lifecycle state of a popup config. Only StatusActive popups are ever shown.
type Status string

// The statuses a popup config can be in.
const (
	StatusDraft    Status = "draft"
	StatusActive   Status = "active"
	StatusPaused   Status = "paused"
	StatusArchived Status = "archived"
)

// Valid reports whether s is one of the four known statuses.
func (s Status) Valid() bool {
	switch s {
	case StatusDraft, StatusActive, StatusPaused, StatusArchived:
		return true
	}
	return false
}

// The platforms a popup can target and a request can come from.
const (
	PlatformIOS     = "ios"
	PlatformAndroid = "android"
	PlatformWeb     = "web"
)

// Defaults applied by Input.BuildWith to omitted fields (docs/CONTRACT.md §2).
const (
	DefaultReshowAfterSeconds int64 = 86400
	DefaultRolloutPercent     int   = 100
)

// Limits enforced by ValidateWith. They keep a single popup's JSON small, because it is sent on
// every homepage open, and the uid allow-list small, because it is held in memory by every
// instance.
const (
	maxNameLen    = 200
	maxTitleLen   = 200
	maxContentLen = 4000
	maxImageAlt   = 300
	maxURLLen     = 2048
	maxButtons    = 10
	maxButtonText = 200
	maxUIDs       = 1000
	maxCodeLen    = 16 // region and language codes
)

// Limits that keep every value inside its MySQL column and the popup's JSON small, so that a
// hostile or mistaken value is a 400 naming the field, never a failed write (a 500).
const (
	// priority and max_impressions are INT columns (signed 32 bits).
	minPriority       = math.MinInt32
	maxPriority       = math.MaxInt32
	maxMaxImpressions = math.MaxInt32
	// MaxDurationSeconds bounds reshow_after_seconds and the two cooldowns: 10 years of 365
	// days. Longer is not a campaign setting but a typo; -1 already says "never again".
	MaxDurationSeconds int64 = 10 * 365 * 24 * 3600
	// maxExtBytes bounds the compacted ext, which is sent with the popup on every homepage open.
	maxExtBytes = 16 << 10
	// maxExtDepth bounds how deeply ext nests objects and arrays, ext itself being level 1:
	// enough for app settings, and an app's JSON parser is never handed a 9,000-level bomb.
	maxExtDepth = 8
)

// The window of times start_at and end_at may hold (after conversion to UTC): the stored
// DATETIME(3) column holds years 1000-9999 to the millisecond, and a campaign before the Unix
// epoch is a mistake.
var (
	minWindowTime = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
	maxWindowTime = time.Date(9999, 12, 31, 23, 59, 59, 999_000_000, time.UTC)
)

// Button is one call-to-action button of a popup.
type Button struct {
	Text    string
	LinkURL string
}

// Targeting decides which requests a popup may be shown to. Empty lists mean "all".
type Targeting struct {
	Platforms      []string
	MinAppVersion  string // inclusive; "" = no lower bound
	MaxAppVersion  string // inclusive; "" = no upper bound
	Regions        []string
	Langs          []string
	RolloutPercent int
	UIDs           []string // allow-list: these uids bypass RolloutPercent only
	Audiences      AudienceRefs
	// Placements are where in the app the popup may show (a request names one); nil is the
	// default, DefaultPlacement alone (PlacementsOr), and normalizes so.
	Placements []string
	// Trigger, when set, shows the popup only on a request carrying its event; nil: only on
	// requests carrying none (where.go).
	Trigger *Trigger
	// Rules are conditions on the request's attributes: the popup matches when any rule holds, a
	// rule when all its conditions do; none matches every request (package rules).
	Rules []rules.Rule
}

// AudienceRefs targets uploaded user lists: with Include non-empty a user must be a member of at
// least one of them, and of none of Exclude. Ids are audiences' (the write path checks that they
// exist); membership is decided in-process from the sets a snapshot binds (Compiled).
type AudienceRefs struct {
	Include []int64
	Exclude []int64
}

// maxAudienceRefs bounds each of a popup's include and exclude lists.
const maxAudienceRefs = 20

// IDs returns every audience id r names, include then exclude.
func (r AudienceRefs) IDs() []int64 {
	return append(append(make([]int64, 0, len(r.Include)+len(r.Exclude)), r.Include...), r.Exclude...)
}

// Popup is a stored popup config. It is not a wire or storage format: the admin API, the public
// answer, the Redis config blob and the MySQL columns each have their own shape, converted at
// their boundary.
type Popup struct {
	ID int64
	// Revision counts the popup's writes, starting at 1: the admin API's ETag, checked against
	// If-Match inside the write itself.
	Revision int64
	Name     string
	// BucketSeed keys the popup's rollout buckets (RolloutBucket): fixed before the first save and
	// never changed, so a user stays in or out of the rollout whatever else is edited. "" stands for
	// the decimal id, the seed migration 00007 gave every popup saved before seeds existed.
	BucketSeed string
	Status     Status
	Priority   int        // higher wins; ties go to the lower id
	StartAt    *time.Time // nil = open; the window is [StartAt, EndAt)
	EndAt      *time.Time // nil = open
	Targeting  Targeting

	// ReshowAfterSeconds hides the popup from a user for this long after it was returned to them.
	ReshowAfterSeconds int64
	// ClickCooldownSeconds hides it for this long after a click; -1 = never again. 0 means a
	// click hides it no longer than the impression that preceded it already did.
	ClickCooldownSeconds int64
	// CloseCooldownSeconds hides it for this long after a close; -1 = never again.
	CloseCooldownSeconds int64
	// MaxImpressions caps impressions per user over the popup's life; 0 = unlimited.
	MaxImpressions int
	// ExemptFromCaps lets the popup through the team's pacing across campaigns (min_gap and
	// daily_cap: Pacing), for service notices and outage messages; its own rules still apply.
	ExemptFromCaps bool
	// HoldoutExempt lets the popup through the team's holdout (docs/CONTRACT.md §15): a user
	// held out is shown it like anyone (service notices); no other popup.
	HoldoutExempt bool

	// Creative is the popup's own content: what it shows outside an experiment and to the users
	// in its experiment's coverage who fall in no arm. Its fields read as the popup's (p.Title).
	Creative

	// Experiment tests content variants (and a control) against each other; nil = none.
	Experiment *Experiment

	CreatedAt time.Time
	UpdatedAt time.Time
}

// TargetingInput is the targeting part of an Input. Nil slices and "" mean "no limit".
type TargetingInput struct {
	Platforms      []string
	MinAppVersion  string
	MaxAppVersion  string
	Regions        []string
	Langs          []string
	RolloutPercent *int
	UIDs           []string
	Audiences      AudienceRefs
	Placements     []string // nil = ["home"]
	Trigger        *Trigger
	Rules          []rules.Rule
}

// Input is what a client POSTs/PUTs, decoded from the admin API's wire shape: every field is
// optional so that omitted fields get defaults. Scalars whose zero value is a legitimate setting (priority 0, rollout 0, cooldown 0) are pointers
// so "omitted" and "zero" stay distinguishable; strings are plain because "" is their default.
type Input struct {
	Name                 string
	BucketSeed           string // "" = none given: a create draws one, an update keeps the stored one
	Status               *Status
	Priority             *int
	StartAt              *time.Time
	EndAt                *time.Time
	Targeting            *TargetingInput
	ReshowAfterSeconds   *int64
	ClickCooldownSeconds *int64
	CloseCooldownSeconds *int64
	MaxImpressions       *int
	ExemptFromCaps       bool
	HoldoutExempt        bool
	// Creative is the popup's own content, taken as it is (BuildWith compacts ext, defaults it
	// to {}, and validates it).
	Creative
	Experiment *Experiment // nil = none; its server-managed fields are ignored (KeepExperiment)
}

// BuildWith validates in, links checked against the allow-list links (the zero LinkSchemes: http,
// https), and applies the defaults of docs/CONTRACT.md §2: status active, priority 0, open
// window, no targeting limits, rollout 100, reshow 86400 s, click cooldown 0, close cooldown equal
// to the (possibly supplied) reshow, max impressions 0 (unlimited), ext {}. Times are converted
// to UTC, ext is compacted and nil slices become empty ones so the JSON shows [] rather than
// null. ID, Revision, CreatedAt and UpdatedAt are left zero for the store to fill. The error is a
// *ValidationError.
func (in Input) BuildWith(links LinkSchemes) (Popup, error) {
	p := Popup{
		Name:                 in.Name,
		BucketSeed:           in.BucketSeed,
		Status:               deref(in.Status, StatusActive),
		Priority:             deref(in.Priority, 0),
		StartAt:              UTCPtr(in.StartAt),
		EndAt:                UTCPtr(in.EndAt),
		ReshowAfterSeconds:   deref(in.ReshowAfterSeconds, DefaultReshowAfterSeconds),
		ClickCooldownSeconds: deref(in.ClickCooldownSeconds, 0),
		MaxImpressions:       deref(in.MaxImpressions, 0),
		ExemptFromCaps:       in.ExemptFromCaps,
		HoldoutExempt:        in.HoldoutExempt,
		Experiment:           in.Experiment,
		Creative:             in.Creative,
	}
	// A close is a stronger "not now" than merely seeing the popup, so by default it hides the
	// popup exactly as long as an impression does, whatever reshow interval was chosen.
	p.CloseCooldownSeconds = deref(in.CloseCooldownSeconds, p.ReshowAfterSeconds)
	p.Targeting.RolloutPercent = DefaultRolloutPercent
	if t := in.Targeting; t != nil {
		p.Targeting = Targeting{
			Platforms:      t.Platforms,
			MinAppVersion:  t.MinAppVersion,
			MaxAppVersion:  t.MaxAppVersion,
			Regions:        t.Regions,
			Langs:          t.Langs,
			RolloutPercent: deref(t.RolloutPercent, DefaultRolloutPercent),
			UIDs:           t.UIDs,
			Audiences:      t.Audiences,
			Placements:     t.Placements,
			Trigger:        t.Trigger,
			Rules:          t.Rules,
		}
	}
	p.normalize()
	if err := p.ValidateWith(links); err != nil {
		return Popup{}, err
	}
	return p, nil
}

// normalize gives p its canonical shape without changing its meaning: non-nil slices (JSON []),
// ext "{}" when absent and compacted otherwise, so the encoded popup is the same wherever it came from.
func (p *Popup) normalize() {
	p.Targeting.Platforms = nonNil(p.Targeting.Platforms)
	p.Targeting.Regions = nonNil(p.Targeting.Regions)
	p.Targeting.Langs = nonNil(p.Targeting.Langs)
	p.Targeting.UIDs = nonNil(p.Targeting.UIDs)
	// Audience lists are nil when empty (a document from before audiences has none at all), so
	// that "no audiences" has one form whatever a client sent.
	if len(p.Targeting.Audiences.Include) == 0 {
		p.Targeting.Audiences.Include = nil
	}
	if len(p.Targeting.Audiences.Exclude) == 0 {
		p.Targeting.Audiences.Exclude = nil
	}
	p.Targeting.normalizeWhere()
	c := p.Creative
	c.normalize()
	p.Creative = c
	if p.Experiment != nil {
		e := *p.Experiment // p is a copy, its experiment is not: another goroutine may read it
		e.normalize()
		p.Experiment = &e
	}
}

// normalize gives c its canonical shape: buttons [] rather than nil, ext "{}" when absent and
// compacted otherwise, translations as normalizeTranslations leaves them.
func (c *Creative) normalize() {
	c.Buttons = nonNil(c.Buttons)
	c.normalizeTranslations()
	ext := bytes.TrimSpace(c.Ext)
	if len(ext) == 0 || string(ext) == "null" {
		c.Ext = json.RawMessage("{}")
		return
	}
	var buf bytes.Buffer
	if json.Compact(&buf, ext) == nil {
		c.Ext = buf.Bytes()
	}
	// Invalid JSON is left as it is for ValidateWith to report.
}

// FieldError is one validation problem. Field is a JSON path such as "targeting.min_app_version"
// or "buttons[1].text", so a client can point at the offending input.
type FieldError struct {
	Field   string
	Message string
}

// ValidationError lists every problem of a popup (or of another input: Of), in the order of the
// fields in the JSON shape.
type ValidationError struct {
	Fields []FieldError
	// Of names what is invalid in the message ("settings", "goal", "conversion"); "" is a popup.
	Of string
}

// Code is validation_failed: the answer lists the fields.
func (e *ValidationError) Code() Code { return CodeValidationFailed }

func (e *ValidationError) Error() string {
	var b strings.Builder
	b.WriteString("invalid ")
	b.WriteString(cmp.Or(e.Of, "popup"))
	b.WriteString(": ")
	for i, f := range e.Fields {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(f.Field)
		b.WriteString(": ")
		b.WriteString(f.Message)
	}
	return b.String()
}

// ValidateWith checks every rule and reports all problems at once, so an operator fixes a form in
// one round trip; link_url and buttons[].link_url must use a scheme of links. It returns a
// *ValidationError or nil.
func (p Popup) ValidateWith(links LinkSchemes) error {
	var v validator
	v.text("name", strings.TrimSpace(p.Name), 1, maxNameLen)
	if p.BucketSeed != "" && !ValidBucketSeed(p.BucketSeed) {
		v.add("bucket_seed", "must be "+BucketSeedRule)
	}
	if !p.Status.Valid() {
		v.add("status", "must be one of draft, active, paused, archived")
	}
	if p.Priority < minPriority || p.Priority > maxPriority {
		v.add("priority", "must be between "+strconv.Itoa(minPriority)+" and "+strconv.Itoa(maxPriority))
	}
	startOK, endOK := v.windowTime("start_at", p.StartAt), v.windowTime("end_at", p.EndAt)
	if startOK && endOK && p.StartAt != nil && p.EndAt != nil && !p.EndAt.After(*p.StartAt) {
		v.add("end_at", "must be after start_at")
	}
	p.Targeting.validate(&v)
	v.duration("reshow_after_seconds", p.ReshowAfterSeconds, false)
	v.duration("click_cooldown_seconds", p.ClickCooldownSeconds, true)
	v.duration("close_cooldown_seconds", p.CloseCooldownSeconds, true)
	if p.MaxImpressions < 0 || p.MaxImpressions > maxMaxImpressions {
		v.add("max_impressions", "must be between 0 (unlimited) and "+strconv.Itoa(maxMaxImpressions))
	}
	p.Creative.validate(&v, "", links)
	if p.Experiment != nil {
		p.Experiment.validate(&v, links)
	}
	return v.err()
}

// validate checks a creative's content limits and links, reporting under prefix ("" for the
// popup's own content, "experiment.variants[i]." for a variant's).
func (c Creative) validate(v *validator, prefix string, links LinkSchemes) {
	v.text(prefix+"title", c.Title, 0, maxTitleLen)
	v.text(prefix+"content", c.Content, 0, maxContentLen)
	v.url(prefix+"image_url", c.ImageURL, isWebScheme, "http, https")
	v.text(prefix+"image_alt", c.ImageAlt, 0, maxImageAlt)
	v.url(prefix+"link_url", c.LinkURL, links.Allows, links.String())
	if len(c.Buttons) > maxButtons {
		v.add(prefix+"buttons", "must have at most "+strconv.Itoa(maxButtons)+" buttons")
	}
	for i, b := range c.Buttons {
		bp := prefix + "buttons[" + strconv.Itoa(i) + "]"
		v.text(bp+".text", strings.TrimSpace(b.Text), 1, maxButtonText)
		v.url(bp+".link_url", b.LinkURL, links.Allows, links.String())
	}
	v.ext(prefix+"ext", c.Ext)
	c.validateTranslations(v, prefix, links)
}

func (t Targeting) validate(v *validator) {
	for i, pl := range t.Platforms {
		if platformBit(pl) == 0 || pl != strings.ToLower(pl) {
			v.add("targeting.platforms["+strconv.Itoa(i)+"]", "must be one of ios, android, web")
		}
	}
	minV, minErr := ParseVersion(t.MinAppVersion)
	if t.MinAppVersion != "" && minErr != nil {
		v.add("targeting.min_app_version", "must be a dotted numeric version such as 8.10.0")
	}
	maxV, maxErr := ParseVersion(t.MaxAppVersion)
	if t.MaxAppVersion != "" && maxErr != nil {
		v.add("targeting.max_app_version", "must be a dotted numeric version such as 8.10.0")
	}
	if minErr == nil && maxErr == nil && minV.Compare(maxV) > 0 {
		v.add("targeting.min_app_version", "must not be greater than max_app_version")
	}
	v.codes("targeting.regions", t.Regions)
	v.codes("targeting.langs", t.Langs)
	if t.RolloutPercent < 0 || t.RolloutPercent > 100 {
		v.add("targeting.rollout_percent", "must be between 0 and 100")
	}
	if len(t.UIDs) > maxUIDs {
		v.add("targeting.uids", "must have at most "+strconv.Itoa(maxUIDs)+" uids")
	}
	for i, uid := range t.UIDs {
		if !ValidUID(uid) {
			v.add("targeting.uids["+strconv.Itoa(i)+"]", "must be "+UIDRule)
		}
	}
	t.Audiences.validate(v)
	t.validateWhere(v)
}

func (r AudienceRefs) validate(v *validator) {
	seen := make(map[int64]string, len(r.Include)+len(r.Exclude))
	for _, l := range []struct {
		name string
		ids  []int64
	}{{"include", r.Include}, {"exclude", r.Exclude}} {
		field := "targeting.audiences." + l.name
		if len(l.ids) > maxAudienceRefs {
			v.add(field, "must name at most "+strconv.Itoa(maxAudienceRefs)+" audiences")
		}
		for i, id := range l.ids {
			at := field + "[" + strconv.Itoa(i) + "]"
			switch prev, dup := seen[id]; {
			case id <= 0:
				v.add(at, "must be an audience id (a positive integer)")
			case dup && prev == l.name:
				v.add(at, "names audience "+strconv.FormatInt(id, 10)+" twice")
			case dup:
				v.add(at, "names audience "+strconv.FormatInt(id, 10)+", which include names too: a user cannot be both required and excluded")
			}
			seen[id] = l.name
		}
	}
}

// UIDRule describes a well-formed uid (ValidUID) in the words every error message uses.
const UIDRule = "1-64 characters of [A-Za-z0-9_.:-]"

// ValidUID reports whether s is a well-formed user id: 1-64 characters of [A-Za-z0-9_.:-].
// It is on the hot path of every homepage request, so it does not allocate, and it checks every
// uid of an audience upload (20 million of them), so it looks each byte up in a table.
func ValidUID(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !uidByte[s[i]] {
			return false
		}
	}
	return true
}

// uidByte[c] reports whether c may be in a uid: one load where the comparisons took up to eight.
var uidByte = func() (t [256]bool) {
	for c := range t {
		b := byte(c)
		t[c] = isAlnum(b) || b == '_' || b == '.' || b == ':' || b == '-'
	}
	return t
}()

// validCode reports whether s is a region or language code: 1-16 characters of [A-Za-z0-9_-].
// The alphabet is deliberately loose ("cn", "CN", "zh-Hans", "en_US") because matching is by
// case-insensitive equality, not by any standard's semantics.
func validCode(s string) bool { return isToken(s, maxCodeLen) }

// isToken reports whether s is 1 to n characters of [A-Za-z0-9_-].
func isToken(s string, n int) bool {
	if len(s) == 0 || len(s) > n {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isAlnum(c) && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// validator collects FieldErrors in the order the checks run.
type validator struct {
	fields []FieldError
}

func (v *validator) add(field, msg string) {
	v.fields = append(v.fields, FieldError{Field: field, Message: msg})
}

func (v *validator) err() error {
	if len(v.fields) == 0 {
		return nil // an untyped nil, never a nil *ValidationError inside an error
	}
	return &ValidationError{Fields: v.fields}
}

// text checks a length in characters (runes), which is what an operator counts, not bytes.
func (v *validator) text(field, s string, minLen, maxLen int) {
	n := utf8.RuneCountInString(s)
	switch {
	case n < minLen:
		v.add(field, "is required")
	case n > maxLen:
		v.add(field, "must be at most "+strconv.Itoa(maxLen)+" characters")
	}
}

func (v *validator) codes(field string, list []string) {
	for i, s := range list {
		if !validCode(s) {
			v.add(field+"["+strconv.Itoa(i)+"]", "must be "+CodeRule)
		}
	}
}

// url accepts "" (no link) or an absolute URL whose scheme allowed accepts (see linkProblem).
func (v *validator) url(field, s string, allowed func(string) bool, allowedList string) {
	if s == "" {
		return
	}
	if msg := linkProblem(s, allowed, allowedList); msg != "" {
		v.add(field, msg)
	}
}

// windowTime checks that t, when set, lies in [minWindowTime, maxWindowTime] once in UTC.
func (v *validator) windowTime(field string, t *time.Time) bool {
	if t == nil || !t.Before(minWindowTime) && !t.After(maxWindowTime) {
		return true
	}
	v.add(field, "must be between 1970-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z (after conversion to UTC)")
	return false
}

// duration checks a number of seconds against [0, MaxDurationSeconds], or -1 when never is set.
func (v *validator) duration(field string, sec int64, never bool) {
	if sec >= 0 && sec <= MaxDurationSeconds || never && sec == -1 {
		return
	}
	msg := "must be between 0 and " + strconv.FormatInt(MaxDurationSeconds, 10) + " (10 years)"
	if never {
		msg += ", or -1 for never again"
	}
	v.add(field, msg)
}

// ext checks that ext, when set, is a JSON object of at most maxExtBytes (compacted) nesting at
// most maxExtDepth levels.
func (v *validator) ext(field string, raw json.RawMessage) {
	ext := bytes.TrimSpace(raw)
	switch {
	case len(ext) == 0:
	case ext[0] != '{' || !json.Valid(ext):
		v.add(field, "must be a JSON object")
	case jsonDepth(ext) > maxExtDepth:
		v.add(field, "must nest objects and arrays at most "+strconv.Itoa(maxExtDepth)+" levels deep")
	case len(ext) > maxExtBytes:
		v.add(field, "must be at most "+strconv.Itoa(maxExtBytes)+" bytes of compact JSON")
	}
}

// jsonDepth returns how deeply valid JSON b nests objects and arrays (a bare object is 1).
func jsonDepth(b []byte) int {
	depth, deepest := 0, 0
	inString, escaped := false, false
	for _, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}

// validScheme follows RFC 3986: a letter, then letters, digits, "+", "-" or ".", so deep-link
// schemes such as "fb123" or "com.example.app" pass.
func validScheme(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !letter && (i == 0 || !(c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return false
		}
	}
	return len(s) > 0
}

func deref[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

// UTCPtr is t in UTC, nil for nil: how every boundary stores an optional time.
func UTCPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
