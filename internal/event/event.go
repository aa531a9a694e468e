// Package event is the display event (impression, click, close, exposure), and the conversion
// that rides the same queue, and their wire encoding on the Redis queue, shared by popup-api
// (producer) and popup-worker (consumer).
package event

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"popupsvc/internal/jsonx"
	"popupsvc/internal/popup"
)

// Action is what the user did.
type Action string

// The actions of docs/CONTRACT.md §6 and §10.
const (
	Impression Action = "impression"
	Click      Action = "click"
	Close      Action = "close"
	// Exposure is a control user's would-be impression: the popup was not shown, but the user's
	// state of it advanced as an impression's would (the same display rules), and the control arm
	// counts the user as exposed.
	Exposure Action = "exposure"
	// Holdout is a held-out user's would-be impression (docs/CONTRACT.md §15): the team's holdout
	// kept the popup from the user, nothing was shown and no popup's state changed; it counts the
	// user as exposed in the holdout's phase (its one arm reference, of popup.HoldoutPopupID).
	// PopupID is the popup the user would have been shown.
	Holdout Action = "holdout"
	// Conversion is a user reaching a goal (docs/CONTRACT.md §14): no popup, no state; Goal and
	// Value say which goal and what it was worth. It is queued with the user's display events so
	// that it has their guarantees (durable, de-duplicated by (uid, event id), drained in order).
	Conversion Action = "conversion"
)

// Valid reports whether a is one of the actions.
func (a Action) Valid() bool {
	return a == Impression || a == Click || a == Close || a == Exposure || a == Conversion || a == Holdout
}

// Event is one action together with the user's resulting state of that popup. Carrying the
// result (not a delta) makes the worker's upsert a max-merge: replays and reordering are harmless.
type Event struct {
	ID         string    // event_id: unique; the client's key for actions, the decision_id for impressions
	UID        string    //
	PopupID    int64     //
	Action     Action    //
	At         time.Time // when it happened (millisecond precision on the wire)
	DecisionID string    // the impression a click or close refers to, when the client sent it
	// The user's state of this popup after the event.
	NextShowAt  time.Time
	Impressions int
	// DayCount is, for an impression, the user's impressions of every popup on the UTC day of At,
	// this one included: the daily cap's count, kept in the state rows so that a user's state
	// comes back from MySQL in one statement. 0 = not carried (clicks, closes, exposures, and
	// impressions queued before it existed).
	DayCount int
	// Button is, for a click, which of the popup's buttons was clicked; the zero value is
	// "unspecified" (the client did not say, as older clients do not).
	Button ButtonRef
	// Locale is, for an impression, the language the answer showed (docs/CONTRACT.md §13): a
	// translation's tag or popup.DefaultLocale. "" = not carried (clicks, closes, exposures, and
	// impressions queued before it existed): the worker attributes a click to its impression's
	// locale itself (docs/CONTRACT.md §8).
	Locale string
	// Arms are the experiment arms the event counts for (docs/CONTRACT.md §10), at most
	// MaxArmRefs: for an impression or exposure the arm the user was assigned; for a click or
	// close the user's arm in this popup's experiment and, for a click on a popup that controls
	// fell through to, those controls. None for a popup without a running experiment. The
	// holdout's group (§15) is an arm of popup.HoldoutPopupID: a holdout event's only one, and
	// the others' group on the first impression or exposure of a user's UTC day in the phase.
	Arms []ArmRef
	// Goal and Value are a conversion's: the goal's key and the value reported (0 for none).
	Goal  string
	Value float64
}

// ArmRef names one experiment arm: the popup whose experiment it is, the phase's salt and the arm
// key (a variant's key or "control").
type ArmRef struct {
	PopupID int64
	Salt    string
	Arm     string
}

// MaxRecordEvents is the most events a decision records in one step (the user store's Record
// takes as many): up to three control exposures that fell through and the impression they fell
// through to, or four exposures.
const MaxRecordEvents = 4

// MaxArmRefs bounds Event.Arms: the popup's own experiment and the controls that fell through
// to it (at most MaxRecordEvents-1 precede a popup).
const MaxArmRefs = MaxRecordEvents

// ButtonRef names a clicked button: 0 is "unspecified", n is the button at 0-based index n-1.
// The zero value of an Event is therefore an unspecified click, never button 0 by mistake.
type ButtonRef uint8

// MaxButton bounds a button index on the wire (a popup has at most 10 buttons; the queue takes
// any index a ButtonRef can hold).
const MaxButton = 254

// ButtonAt names the button at 0-based index i (0 <= i <= MaxButton).
func ButtonAt(i int) ButtonRef { return ButtonRef(i + 1) }

// Index returns the 0-based button index and true, or false for "unspecified".
func (b ButtonRef) Index() (int, bool) { return int(b) - 1, b != 0 }

// MaxIDLen bounds event and decision ids (the action_log columns are VARCHAR(64)).
const MaxIDLen = 64

// ErrDecode marks an undecodable event (it belongs in the dead-letter list).
var ErrDecode = errors.New("undecodable event")

// wire is the JSON shape on the queue; short names keep the queue small.
type wire struct {
	V  int       `json:"v"`
	ID string    `json:"id"`
	U  string    `json:"u"`
	P  int64     `json:"p"`
	A  string    `json:"a"`
	T  int64     `json:"t"`
	D  string    `json:"d,omitempty"`
	N  int64     `json:"n"`
	I  int       `json:"i"`
	C  int       `json:"c,omitempty"`
	B  int       `json:"b"` // the clicked button's 0-based index; absent (older events) = unspecified
	L  string    `json:"l,omitempty"`
	X  []wireArm `json:"x,omitempty"`
	G  string    `json:"g,omitempty"` // a conversion's goal
	W  float64   `json:"w,omitempty"` // a conversion's value
}

// wireArm is an ArmRef on the queue.
type wireArm struct {
	P int64  `json:"p"`
	S string `json:"s"`
	A string `json:"a"`
}

// Append appends e's wire form to dst. It builds the JSON by hand (ids and uids are validated
// ASCII, escaped anyway) so that the hot path does not reflect.
func Append(dst []byte, e *Event) []byte {
	dst = append(dst, `{"v":1,"id":`...)
	dst = appendString(dst, e.ID)
	dst = append(dst, `,"u":`...)
	dst = appendString(dst, e.UID)
	dst = append(dst, `,"p":`...)
	dst = strconv.AppendInt(dst, e.PopupID, 10)
	dst = append(dst, `,"a":"`...)
	dst = append(dst, e.Action...)
	dst = append(dst, `","t":`...)
	dst = strconv.AppendInt(dst, e.At.UnixMilli(), 10)
	if e.DecisionID != "" {
		dst = append(dst, `,"d":`...)
		dst = appendString(dst, e.DecisionID)
	}
	dst = append(dst, `,"n":`...)
	dst = strconv.AppendInt(dst, unixMilli(e.NextShowAt), 10)
	dst = append(dst, `,"i":`...)
	dst = strconv.AppendInt(dst, int64(e.Impressions), 10)
	if e.DayCount > 0 {
		dst = append(dst, `,"c":`...)
		dst = strconv.AppendInt(dst, int64(e.DayCount), 10)
	}
	if i, ok := e.Button.Index(); ok {
		dst = append(dst, `,"b":`...)
		dst = strconv.AppendInt(dst, int64(i), 10)
	}
	if e.Locale != "" {
		dst = append(dst, `,"l":`...)
		dst = appendString(dst, e.Locale)
	}
	for i, a := range e.Arms {
		if i == 0 {
			dst = append(dst, `,"x":[`...)
		} else {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"p":`...)
		dst = strconv.AppendInt(dst, a.PopupID, 10)
		dst = append(dst, `,"s":`...)
		dst = appendString(dst, a.Salt)
		dst = append(dst, `,"a":`...)
		dst = appendString(dst, a.Arm)
		dst = append(dst, '}')
		if i == len(e.Arms)-1 {
			dst = append(dst, ']')
		}
	}
	if e.Goal != "" {
		dst = append(dst, `,"g":`...)
		dst = appendString(dst, e.Goal)
	}
	if e.Value != 0 {
		dst = append(dst, `,"w":`...)
		dst = strconv.AppendFloat(dst, e.Value, 'g', -1, 64)
	}
	return append(dst, '}')
}

// Decode parses one queued event and checks it is fit to write.
func Decode(b []byte) (Event, error) {
	w := wire{B: -1} // a field absent from the input keeps its value: -1 = no button
	if err := jsonx.Unmarshal(b, &w); err != nil {
		return Event{}, fmt.Errorf("%w: %v", ErrDecode, err)
	}
	e := Event{ID: w.ID, UID: w.U, PopupID: w.P, Action: Action(w.A), At: fromMilli(w.T),
		DecisionID: w.D, NextShowAt: fromMilli(w.N), Impressions: w.I, DayCount: w.C, Locale: w.L, Goal: w.G, Value: w.W}
	switch {
	case w.V != 1:
		return Event{}, fmt.Errorf("%w: unknown version %d", ErrDecode, w.V)
	case e.ID == "" || len(e.ID) > MaxIDLen || !utf8.ValidString(e.ID):
		return Event{}, fmt.Errorf("%w: bad id", ErrDecode)
	case e.UID == "" || len(e.UID) > 64 || !utf8.ValidString(e.UID):
		// (invalid UTF-8: Append would write U+FFFD for it, so the event would not be the one read;
		// the API only ever queues validated uids and ids)
		return Event{}, fmt.Errorf("%w: bad uid", ErrDecode)
	case len(e.DecisionID) > MaxIDLen || !utf8.ValidString(e.DecisionID):
		return Event{}, fmt.Errorf("%w: bad decision id", ErrDecode)
	case e.Action == Conversion && (e.PopupID != 0 || !popup.ValidGoalKey(e.Goal) || len(w.X) > 0 || w.B >= 0 ||
		math.IsNaN(e.Value) || math.Abs(e.Value) > popup.MaxConversionValue):
		return Event{}, fmt.Errorf("%w: bad conversion", ErrDecode)
	case e.Action != Conversion && (e.PopupID <= 0 || e.Goal != "" || e.Value != 0):
		return Event{}, fmt.Errorf("%w: bad popup id", ErrDecode)
	case !e.Action.Valid():
		return Event{}, fmt.Errorf("%w: bad action %q", ErrDecode, w.A)
	case w.T <= 0 || w.N < 0 || w.I < 0 || w.C < 0:
		return Event{}, fmt.Errorf("%w: bad time or count", ErrDecode)
	case w.B < -1 || w.B > MaxButton || (w.B >= 0 && e.Action != Click):
		return Event{}, fmt.Errorf("%w: bad button", ErrDecode)
	case w.L != "" && (e.Action != Impression || !ValidLocale(w.L)):
		return Event{}, fmt.Errorf("%w: bad locale", ErrDecode)
	case len(w.X) > MaxArmRefs || e.Action == Exposure && len(w.X) == 0 ||
		e.Action == Holdout && (len(w.X) != 1 || w.X[0].P != popup.HoldoutPopupID || w.X[0].A != string(popup.HoldoutHeld)):
		return Event{}, fmt.Errorf("%w: bad experiment arms", ErrDecode)
	}
	for _, x := range w.X {
		// (a salt is drawn like a bucket seed, a holdout phase's key too; an arm is a variant's
		// key or "control", or for the holdout, popup 0, its group)
		if x.P < 0 || !popup.ValidBucketSeed(x.S) || !popup.ValidArmKey(x.A) ||
			x.P == popup.HoldoutPopupID && x.A != string(popup.HoldoutHeld) && x.A != string(popup.HoldoutOthers) {
			return Event{}, fmt.Errorf("%w: bad experiment arm", ErrDecode)
		}
		e.Arms = append(e.Arms, ArmRef{PopupID: x.P, Salt: x.S, Arm: x.A})
	}
	if w.B >= 0 {
		e.Button = ButtonAt(w.B)
	}
	return e, nil
}

// ValidLocale reports whether l can name an impression's language: popup.DefaultLocale, or a
// translation's tag in its canonical case (what the answer names).
func ValidLocale(l string) bool {
	if l == popup.DefaultLocale {
		return true
	}
	c, ok := popup.CanonicalLocale(l)
	return ok && c == l
}

func unixMilli(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func fromMilli(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

const hex = "0123456789abcdef"

// appendString appends s as a JSON string.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			dst = append(dst, c)
			i++
			continue
		}
		if c < utf8.RuneSelf {
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, `\ufffd`...)
		} else {
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return append(dst, '"')
}
