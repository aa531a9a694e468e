package popup

import (
	"slices"
	"strconv"

	"popupsvc/internal/popup/rules"
)

// Where and when a popup may show, and for which attributes (docs/CONTRACT.md §2, "Placements,
// triggers and rules"):
//
//   - a request names a placement (DefaultPlacement when it names none) and a popup lists the
//     placements it may show in: it is a candidate only in those;
//   - a request may carry an event that just happened with its properties; a popup with a Trigger
//     shows only on a request carrying its event whose properties meet the trigger's conditions,
//     and a popup without one only on requests carrying no event. So an event request answers
//     "did this event trigger something", and an app asking on a screen's open never gets a popup
//     meant for a purchase;
//   - the popup's Rules test the request's attributes.
//
// The team's pacing (daily cap, min gap), the holdout and every popup's own display rules apply
// across placements alike: one day counter per user, whichever placement showed the popup.

// DefaultPlacement is the placement of a request that names none, and of a popup that lists none:
// the homepage, where every popup showed before placements existed.
const DefaultPlacement = "home"

// PlacementRule describes a well-formed placement in the words every error message uses.
const PlacementRule = "1-64 characters of [a-z0-9_-]"

// EventRule describes a well-formed event name.
const EventRule = "1-64 characters of [A-Za-z0-9_.:-]"

// maxPlacements bounds a popup's placements.
const maxPlacements = 20

// ValidPlacement reports whether s is a placement: PlacementRule. It does not allocate.
func ValidPlacement(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// ValidEvent reports whether s is an event name: EventRule (a uid's alphabet). It does not
// allocate.
func ValidEvent(s string) bool { return ValidUID(s) }

// Trigger is the event a popup waits for and the conditions its properties must meet (all of
// them; none: any occurrence of the event).
type Trigger struct {
	Event      string
	Conditions []rules.Condition
}

// normalizeWhere gives the where-fields their one form: the default placements (none listed, or
// DefaultPlacement alone) as nil, so that a popup sent back as it was read is no change; no rules
// and no trigger conditions as nil.
func (t *Targeting) normalizeWhere() {
	if len(t.Placements) == 0 || len(t.Placements) == 1 && t.Placements[0] == DefaultPlacement {
		t.Placements = nil
	}
	if len(t.Rules) == 0 {
		t.Rules = nil
	}
	if t.Trigger != nil && len(t.Trigger.Conditions) == 0 {
		tr := *t.Trigger
		tr.Conditions = nil
		t.Trigger = &tr
	}
}

func (t Targeting) validateWhere(v *validator) {
	if len(t.Placements) > maxPlacements {
		v.add("targeting.placements", "must list at most "+strconv.Itoa(maxPlacements)+" placements")
	}
	for i, pl := range t.Placements {
		at := "targeting.placements[" + strconv.Itoa(i) + "]"
		switch {
		case !ValidPlacement(pl):
			v.add(at, "must be "+PlacementRule)
		case slices.Contains(t.Placements[:i], pl):
			v.add(at, "names placement "+strconv.Quote(pl)+" twice")
		}
	}
	if tr := t.Trigger; tr != nil {
		if !ValidEvent(tr.Event) {
			v.add("targeting.trigger.event", "must be "+EventRule)
		}
		for _, p := range rules.ValidateConditions(nil, "targeting.trigger.conditions", tr.Conditions) {
			v.add(p.Path, p.Message)
		}
	}
	for _, p := range rules.ValidateRules("targeting.rules", t.Rules) {
		v.add(p.Path, p.Message)
	}
}

// PlacementsOr is t's placements, [DefaultPlacement] when it lists none.
func (t *Targeting) PlacementsOr() []string {
	if len(t.Placements) == 0 {
		return []string{DefaultPlacement}
	}
	return t.Placements
}

// Where is the request side: the placement asked for, the event that happened with its
// properties, and the attributes the app describes the user with. The zero Where is a plain
// request for DefaultPlacement.
type Where struct {
	Placement string // "" = DefaultPlacement
	Event     string // "" = none
	Props     rules.Attrs
	Attrs     rules.Attrs
}

// PlacementOr is w's placement, DefaultPlacement when it names none.
func (w *Where) PlacementOr() string {
	if w.Placement == "" {
		return DefaultPlacement
	}
	return w.Placement
}

// compiledWhere is a popup's placements, trigger and rules prepared for matching.
type compiledWhere struct {
	placements []string
	event      string     // the trigger's event; "" = no trigger
	props      *rules.Set // the trigger's conditions; nil = none
	rules      *rules.Set // nil = none
}

// The flags of Compiled.whereBits.
const (
	whereHomeOnly uint8 = 1 << iota // the placements are DefaultPlacement alone
	whereTrigger                    // the popup has a trigger
	whereRules                      // the popup has rules
)

func (w *compiledWhere) bits() uint8 {
	var b uint8
	if len(w.placements) == 1 && w.placements[0] == DefaultPlacement {
		b |= whereHomeOnly
	}
	if w.event != "" {
		b |= whereTrigger
	}
	if w.rules != nil {
		b |= whereRules
	}
	return b
}

func compileWhere(t *Targeting) (compiledWhere, error) {
	w := compiledWhere{placements: t.PlacementsOr()}
	var err error
	if tr := t.Trigger; tr != nil {
		w.event = tr.Event
		if w.props, err = rules.CompileConditions(tr.Conditions); err != nil {
			return compiledWhere{}, err
		}
	}
	if w.rules, err = rules.Compile(t.Rules); err != nil {
		return compiledWhere{}, err
	}
	return w, nil
}

// whereReason is the placement and trigger check: ReasonPlacement when the popup does not show in
// the request's placement, ReasonTrigger when the request's event is not the one the popup waits
// for (or carries one and the popup waits for none), or its properties fail the trigger's
// conditions.
func (w *compiledWhere) whereReason(q *query) Reason {
	if !slices.Contains(w.placements, q.placement) {
		return ReasonPlacement
	}
	if q.where.Event != w.event || w.props != nil && !w.props.Match(&q.where.Props) {
		return ReasonTrigger
	}
	return ReasonNone
}

// TargetsPlacement reports whether c may show in placement ("" = DefaultPlacement).
func (c *Compiled) TargetsPlacement(placement string) bool {
	if placement == "" {
		placement = DefaultPlacement
	}
	return slices.Contains(c.where.placements, placement)
}

// TriggerEvent is the event c waits for; "" when it has no trigger.
func (c *Compiled) TriggerEvent() string { return c.where.event }

// HasRules reports whether c has attribute rules.
func (c *Compiled) HasRules() bool { return c.where.rules != nil }

// RuleKeys are the attribute keys c's rules read, sorted, each once.
func (c *Compiled) RuleKeys() []string { return c.where.rules.Keys() }

// WhereVerdict is, for explain, how a popup's trigger and rules fared for a request: the
// trigger's outcome (nil when the popup has none or the request carries another event) and each
// rule's (nil when it has none).
type WhereVerdict struct {
	Trigger *rules.Outcome
	Rules   []rules.Outcome
}

func (c *Compiled) whereVerdict(q *query) WhereVerdict {
	var v WhereVerdict
	if c.where.event != "" && c.where.event == q.where.Event && c.where.props != nil {
		o := c.where.props.Explain(&q.where.Props)[0]
		v.Trigger = &o
	}
	v.Rules = c.where.rules.Explain(&q.where.Attrs)
	return v
}
