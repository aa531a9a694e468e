// Package snapshot is the in-process, immutable view of the popup configs that the hot path
// reads without locks: compiled for matching, sorted for selection, JSON pre-encoded.
package snapshot

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sync/atomic"
	"time"

	"popupsvc/internal/audience"
	"popupsvc/internal/event"
	"popupsvc/internal/popup"
)

// Entry is one popup of a snapshot.
type Entry struct {
	*popup.Compiled
	// JSON is the popup as the public API shows it, encoded once when the snapshot is built.
	JSON []byte
	// Locales are the popup's own content in each of its languages (Localized).
	Locales Locales
	// Variants are, for a popup with an experiment, each variant's public JSON (the popup's id,
	// the variant's content), by variant index; nil without an experiment.
	Variants [][]byte
	// VariantLocales are each variant's languages, by variant index, as Variants.
	VariantLocales []Locales
	// ArmRefs are, for a popup with an experiment, the one-element Event.Arms of each arm (by arm
	// index, the control last) in the current phase, shared by every event that names the arm;
	// nil without an experiment.
	ArmRefs [][]event.ArmRef
}

// Shown is the public JSON of what arm shows (Compiled.Arm): the variant's content for a
// variant, the popup's own otherwise (outside the experiment, or -1); in its default language.
func (e *Entry) Shown(arm int) []byte {
	if arm >= 0 && arm < len(e.Variants) {
		return e.Variants[arm]
	}
	return e.JSON
}

// ShownIn is what arm shows (as Shown) in the best language for a request's lang (a tag or an
// Accept-Language value; popup.LocaleTable.Choose), the locale chosen (a translation's tag, or
// popup.DefaultLocale for the creative's own content) and how it was chosen. It does not
// allocate, and a creative without translations costs one length check.
func (e *Entry) ShownIn(arm int, lang string) (body []byte, locale string, how popup.LocaleMatch) {
	body, ls := e.JSON, &e.Locales
	if arm >= 0 && arm < len(e.Variants) {
		body, ls = e.Variants[arm], &e.VariantLocales[arm]
	}
	if ls.table.Len() > 0 {
		if i, m := ls.table.Choose(lang); i >= 0 {
			return ls.bodies[i], ls.tags[i], m
		}
	}
	return body, popup.DefaultLocale, popup.MatchDefault
}

// Locales are one creative's translations prepared for the answer's choice when the snapshot is
// built: the choice's lookup table, and by translation its tag and its public JSON. Empty
// without translations.
type Locales struct {
	table  popup.LocaleTable
	tags   []string
	bodies [][]byte
}

// Tags are the locales, in the creative's order (by tag).
func (l *Locales) Tags() []string { return l.tags }

// encodeLocales pre-encodes the public JSON of popup id showing c in each of c's languages.
func encodeLocales(id int64, c *popup.Creative) (Locales, error) {
	n := len(c.Translations)
	if n == 0 {
		return Locales{}, nil
	}
	l := Locales{tags: make([]string, n), bodies: make([][]byte, n)}
	for i := range c.Translations {
		t := &c.Translations[i]
		l.tags[i] = t.Locale
		body, err := json.Marshal(toPublic(id, c.Localized(t)))
		if err != nil {
			return Locales{}, fmt.Errorf("translation %s: %w", t.Locale, err)
		}
		l.bodies[i] = body
	}
	l.table = popup.NewLocaleTable(l.tags)
	return l, nil
}

// Snapshot is one immutable config version with the audience sets it was built on. Never modify
// it after BuildWith (but for Gen, which Holder.Store sets as it publishes it, and Pacing and the
// holdout, which its builder sets before publishing it).
type Snapshot struct {
	Version int64
	// Pacing is the team's pacing across campaigns in this config version (a settings change
	// makes a new version), read by every decision with no I/O of its own.
	Pacing popup.Pacing
	// Holdout is the team's running holdout phase in this config version (the zero value for
	// none), HoldoutCheck its membership test, and HoldoutRefs the one-element Event.Arms that
	// count a user in the phase's groups (SetHoldout; docs/CONTRACT.md §15).
	Holdout      popup.Holdout
	HoldoutCheck popup.HoldoutCheck
	HoldoutRefs  HoldoutRefs
	// Audiences are the audience sets the popups were bound to (nil: none held).
	Audiences *audience.Sets
	// Gen numbers the snapshots a Holder published, in order: a new config version and new
	// audience sets under the same version each make a new Gen, so a remembered answer carries
	// the Gen it was decided under (decide.LocalAnswers).
	Gen uint64
	// Config numbers the distinct configs a Holder published (Holder.Store sets it with Gen): a
	// new config version whose popups, pacing and holdout are the current snapshot's keeps its
	// Config, as new audience sets do; any other gets the next. A new member list of an audience
	// that popups use is such a version: it bumps the version only so that every instance hears
	// of it. A remembered answer carries the Config it was decided under (decide.LocalAnswers).
	Config  uint64
	Ordered []*popup.Compiled // active popups in selection order (priority desc, id asc)
	entries map[int64]*Entry  // every non-archived popup, for actions and for the answer's JSON
	places  map[string]*placeIndex
	home    *placeIndex // places[popup.DefaultPlacement], the placement most requests name
	// plainAudiences are, by placement, the audiences that the active popups a plain request for
	// it could be shown target (Memberships).
	plainAudiences map[string][]int64
	BuiltAt        time.Time
	Problems       []error // popups that failed to compile (kept out; logged by the refresher)
	// CapExempt says whether any active popup is exempt from the pacing (ExemptFromCaps): when
	// none is, nothing can show to a user the pacing holds, and a decision need not walk the
	// candidates to find that out (decide's plan).
	CapExempt bool
}

// publicPopup is the popup as GET /api/v1/popup shows it (docs/CONTRACT.md §3).
type publicPopup struct {
	ID       int64           `json:"id"`
	Title    string          `json:"title"`
	Content  string          `json:"content"`
	ImageURL string          `json:"image_url"`
	ImageAlt string          `json:"image_alt,omitempty"` // absent when the popup has none
	LinkURL  string          `json:"link_url"`
	Buttons  []publicButton  `json:"buttons"`
	Ext      json.RawMessage `json:"ext"`
}

// publicButton is a button as GET /api/v1/popup shows it.
type publicButton struct {
	Text    string `json:"text"`
	LinkURL string `json:"link_url"`
}

// toPublic is popup id showing creative c as GET /api/v1/popup shows it; buttons is [] when
// there are none, never null.
func toPublic(id int64, c popup.Creative) publicPopup {
	buttons := make([]publicButton, len(c.Buttons))
	for i, b := range c.Buttons {
		buttons[i] = publicButton{Text: b.Text, LinkURL: b.LinkURL}
	}
	return publicPopup{ID: id, Title: c.Title, Content: c.Content, ImageURL: c.ImageURL, ImageAlt: c.ImageAlt,
		LinkURL: c.LinkURL, Buttons: buttons, Ext: c.Ext}
}

// encodeEntry pre-encodes the public JSON of c and, while its experiment runs, of its variants.
func encodeEntry(c *popup.Compiled) (*Entry, error) {
	cp := &c.Popup // CompileWith normalised it: buttons [] and ext {} when absent, a variant's too
	body, err := json.Marshal(toPublic(cp.ID, cp.Creative))
	if err != nil {
		return nil, err
	}
	e := &Entry{Compiled: c, JSON: body}
	if e.Locales, err = encodeLocales(cp.ID, &cp.Creative); err != nil {
		return nil, err
	}
	if x := cp.Experiment; x.Assigning() {
		// (only a running experiment assigns arms: the others' variants are never served)
		e.ArmRefs = make([][]event.ArmRef, x.ArmCount())
		for i := range e.ArmRefs {
			e.ArmRefs[i] = []event.ArmRef{{PopupID: cp.ID, Salt: x.Salt, Arm: x.ArmKey(i)}}
		}
		e.Variants = make([][]byte, len(cp.Experiment.Variants))
		e.VariantLocales = make([]Locales, len(cp.Experiment.Variants))
		for i := range cp.Experiment.Variants {
			v := &cp.Experiment.Variants[i]
			if e.Variants[i], err = json.Marshal(toPublic(cp.ID, v.Creative)); err != nil {
				return nil, fmt.Errorf("variant %s: %w", v.Key, err)
			}
			if e.VariantLocales[i], err = encodeLocales(cp.ID, &v.Creative); err != nil {
				return nil, fmt.Errorf("variant %s: %w", v.Key, err)
			}
		}
	}
	return e, nil
}

// BuildWith compiles popups into a snapshot of version, their audiences bound to sets (nil: none
// held, every audience check fail-closed). A popup that does not compile, a stored link whose
// scheme links does not allow included, is left out and reported in Problems rather than served
// or taking the whole config down.
func BuildWith(version int64, popups []popup.Popup, now time.Time, links popup.LinkSchemes, sets *audience.Sets) *Snapshot {
	s := &Snapshot{Version: version, Audiences: sets, entries: make(map[int64]*Entry, len(popups)), BuiltAt: now}
	for _, p := range popups {
		if p.Status == popup.StatusArchived {
			continue
		}
		c, err := popup.CompileWith(p, links)
		if err != nil {
			s.Problems = append(s.Problems, fmt.Errorf("popup %d: %w", p.ID, err))
			continue
		}
		c.BindAudiences(sets)
		e, err := encodeEntry(c)
		if err != nil {
			s.Problems = append(s.Problems, fmt.Errorf("popup %d: encode: %w", p.ID, err))
			continue
		}
		s.entries[p.ID] = e
		if p.Status == popup.StatusActive {
			s.Ordered = append(s.Ordered, c)
			s.CapExempt = s.CapExempt || p.ExemptFromCaps
		}
	}
	popup.SortForSelection(s.Ordered)
	s.places = buildPlaces(s.Ordered, now)
	s.home = s.places[popup.DefaultPlacement]
	s.plainAudiences = plainAudiences(s.Ordered)
	return s
}

// plainAudiences files the audiences each active popup without a trigger targets under every
// placement it lists, sorted, each once. Unlike the candidate index it keeps the popups that
// have ended: the lists depend on the config version alone, so two snapshots of one version
// (on other audience sets, built at other times) number a placement's audiences alike.
func plainAudiences(ordered []*popup.Compiled) map[string][]int64 {
	out := map[string][]int64{}
	for _, c := range ordered {
		ids := c.Popup.Targeting.Audiences.IDs()
		if len(ids) == 0 || c.TriggerEvent() != "" {
			continue
		}
		for _, pl := range c.Popup.Targeting.PlacementsOr() {
			out[pl] = append(out[pl], ids...)
		}
	}
	for pl, ids := range out {
		slices.Sort(ids)
		out[pl] = slices.Compact(ids)
	}
	return out
}

// MaxMembershipAudiences is how many audiences Memberships can describe: two bits each, in 62
// bits.
const MaxMembershipAudiences = 31

// Memberships describes what the audience checks of a plain request for placement ("": the
// default) by uid can answer: for each audience the placement's popups target (in the order
// of plainAudiences), whether the snapshot holds its set and whether uid is a member. Under one
// config version, two snapshots with equal Memberships for a request answer every audience
// check of its candidates alike, whatever else their sets hold. ok is false for a placement
// whose popups target more than MaxMembershipAudiences audiences.
func (s *Snapshot) Memberships(placement, uid string) (m uint64, ok bool) {
	if placement == "" {
		placement = popup.DefaultPlacement
	}
	ids := s.plainAudiences[placement]
	if len(ids) > MaxMembershipAudiences {
		return 0, false
	}
	for i, id := range ids {
		set := s.Audiences.Get(id)
		if set == nil {
			continue // not held: both bits clear
		}
		m |= 1 << (2 * i)
		if set.Contains(uid) {
			m |= 2 << (2 * i)
		}
	}
	return m, true
}

// HoldoutRefs are a holdout phase's arm references, by group, shared by every event that names
// one: the experiment tables count the holdout as the experiment of popup.HoldoutPopupID.
type HoldoutRefs struct {
	Held, Others []event.ArmRef
}

// SetHoldout makes h the snapshot's holdout, with its membership test and arm references; the
// builder calls it before publishing the snapshot.
func (s *Snapshot) SetHoldout(h popup.Holdout) {
	s.Holdout, s.HoldoutCheck, s.HoldoutRefs = h, h.Check(), HoldoutRefs{}
	if h.Running() {
		key := h.PhaseKey()
		s.HoldoutRefs.Held = []event.ArmRef{{PopupID: popup.HoldoutPopupID, Salt: key, Arm: string(popup.HoldoutHeld)}}
		s.HoldoutRefs.Others = []event.ArmRef{{PopupID: popup.HoldoutPopupID, Salt: key, Arm: string(popup.HoldoutOthers)}}
	}
}

// Candidates returns the active popups that can match r, in selection order: those of its
// placement, for its event (or for plain requests when it carries none), on its platform from its
// region. That is every popup Select could choose for r, and usually far fewer than Ordered; none
// when no popup lists the placement.
func (s *Snapshot) Candidates(r *popup.Request) []*popup.Compiled {
	x := s.home
	if r.Placement != "" && r.Placement != popup.DefaultPlacement {
		x = s.places[r.Placement]
	}
	if x == nil {
		return nil
	}
	if r.Event == "" { // the common case, without lookup's call
		return x.plain.candidates(r.Platform, r.Region)
	}
	return x.events[r.Event].candidates(r.Platform, r.Region)
}

// RuleKeys are the attribute keys that the rules of the popups a plain request for placement ("":
// the default) could be shown read, sorted, each once; nil when none has rules.
func (s *Snapshot) RuleKeys(placement string) []string {
	x := s.home
	if placement != "" && placement != popup.DefaultPlacement {
		x = s.places[placement]
	}
	if x == nil {
		return nil
	}
	return x.ruleKeys
}

// Placements are the placements the active popups list, sorted.
func (s *Snapshot) Placements() []string {
	out := make([]string, 0, len(s.places))
	for pl := range s.places {
		out = append(out, pl)
	}
	slices.Sort(out)
	return out
}

// Entry returns the popup with id, or nil when the snapshot does not hold it.
func (s *Snapshot) Entry(id int64) *Entry { return s.entries[id] }

// Unbound returns the active popups targeting an audience the snapshot does not hold: they
// answer fail-closed until the audience is loaded.
func (s *Snapshot) Unbound() []*popup.Compiled {
	var out []*popup.Compiled
	for _, c := range s.Ordered {
		if !c.AudiencesBound() {
			out = append(out, c)
		}
	}
	return out
}

// AudienceIDs returns the audiences that the non-archived popups of ps target, ascending, each
// once.
func AudienceIDs(ps []popup.Popup) []int64 {
	var ids []int64
	for _, p := range ps {
		if p.Status != popup.StatusArchived {
			ids = append(ids, p.Targeting.Audiences.IDs()...)
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// Holder publishes the current snapshot to every reader with one atomic pointer.
type Holder struct{ p atomic.Pointer[Snapshot] }

// Load returns the current snapshot, nil before the first Store.
func (h *Holder) Load() *Snapshot { return h.p.Load() }

// Store publishes s if it is newer than the current one (a late, older load never wins) and
// reports whether it did. Newer is a later config version, or the same version on newer
// audience sets; s gets the next Gen.
func (h *Holder) Store(s *Snapshot) bool {
	for {
		cur := h.p.Load()
		if cur != nil && (cur.Version > s.Version || cur.Version == s.Version && audienceGen(cur) > audienceGen(s)) {
			return false
		}
		s.Gen, s.Config = 1, 1
		if cur != nil {
			s.Gen, s.Config = cur.Gen+1, cur.Config
			if !sameConfig(cur, s) {
				s.Config++
			}
		}
		if h.p.CompareAndSwap(cur, s) {
			return true
		}
	}
}

// sameConfig reports whether a and b decide alike on the same audience sets: one config version,
// or the same popups (every field, times compared as instants), pacing and holdout. It may say
// no for two that are alike (a time of another location nested deeper), never yes for two that
// are not.
func sameConfig(a, b *Snapshot) bool {
	if a.Version == b.Version {
		return true
	}
	if a.Pacing != b.Pacing || !sameHoldout(a.Holdout, b.Holdout) || len(a.entries) != len(b.entries) || len(a.Ordered) != len(b.Ordered) {
		return false
	}
	for id, ea := range a.entries {
		eb, ok := b.entries[id]
		if !ok || !samePopup(ea.Popup, eb.Popup) {
			return false
		}
	}
	return true
}

func sameHoldout(a, b popup.Holdout) bool {
	if !a.StartedAt.Equal(b.StartedAt) || !a.EndedAt.Equal(b.EndedAt) {
		return false
	}
	a.StartedAt, a.EndedAt, b.StartedAt, b.EndedAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	return a == b
}

func samePopup(a, b popup.Popup) bool {
	if !sameInstant(a.StartAt, b.StartAt) || !sameInstant(a.EndAt, b.EndAt) || !a.CreatedAt.Equal(b.CreatedAt) || !a.UpdatedAt.Equal(b.UpdatedAt) {
		return false
	}
	a.StartAt, a.EndAt, a.CreatedAt, a.UpdatedAt = nil, nil, time.Time{}, time.Time{}
	b.StartAt, b.EndAt, b.CreatedAt, b.UpdatedAt = nil, nil, time.Time{}, time.Time{}
	return reflect.DeepEqual(a, b)
}

func sameInstant(a, b *time.Time) bool {
	return a == nil && b == nil || a != nil && b != nil && a.Equal(*b)
}

func audienceGen(s *Snapshot) uint64 {
	if s.Audiences == nil {
		return 0
	}
	return s.Audiences.Gen
}
