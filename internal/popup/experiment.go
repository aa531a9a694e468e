package popup

import (
	"encoding/json"
	"slices"
	"strconv"
	"time"
)

// ExperimentStatus is where an experiment is in its life (docs/CONTRACT.md §10).
type ExperimentStatus string

// The statuses of an experiment.
const (
	// ExperimentDraft: configured, assigning nobody; every user sees the popup's own content.
	ExperimentDraft ExperimentStatus = "draft"
	// ExperimentRunning: users in coverage are assigned an arm and see (or, in the control, do not
	// see) its content while the popup itself is running.
	ExperimentRunning ExperimentStatus = "running"
	// ExperimentStopped: assigning nobody again; the results are kept and it may run again in the
	// same phase (users keep their arms).
	ExperimentStopped ExperimentStatus = "stopped"
	// ExperimentConcluded: a variant's content was shipped as the popup's own; read-only.
	ExperimentConcluded ExperimentStatus = "concluded"
)

// Valid reports whether s is one of the four statuses.
func (s ExperimentStatus) Valid() bool {
	switch s {
	case ExperimentDraft, ExperimentRunning, ExperimentStopped, ExperimentConcluded:
		return true
	}
	return false
}

// ControlMode is what a user in the control arm gets instead of the popup.
type ControlMode string

// The control modes.
const (
	// ControlNone: nothing; the answer is no popup (the default).
	ControlNone ControlMode = "none"
	// ControlFallThrough: the next popup the user is eligible for, as if this one did not apply.
	ControlFallThrough ControlMode = "fall_through"
)

// Limits and names of experiments.
const (
	// ControlArm is the control's arm key; no variant may use it.
	ControlArm = "control"
	// MaxVariants bounds the content variants of one experiment (the control comes on top).
	MaxVariants = 8
	// ExperimentBuckets is how many assignment buckets there are: weights and coverage are whole
	// percents, so each percent is 100 buckets.
	ExperimentBuckets = 10000
	// ArmKeyRule describes a well-formed variant key in the words every error message uses.
	ArmKeyRule   = "1-16 characters of [a-z0-9_-]"
	maxArmKeyLen = 16
)

// Creative is the content a user is shown: a popup's own, or one variant's.
type Creative struct {
	Title    string
	Content  string
	ImageURL string
	// ImageAlt is the image's text alternative: what a screen reader says for it, and the
	// accessible name of a popup that is only an image (docs/CONTRACT.md §2).
	ImageAlt string
	LinkURL  string
	Buttons  []Button
	Ext      json.RawMessage // a JSON object; "{}" when empty
	// Translations are the content in other languages, sorted by locale; nil = none.
	Translations []Translation
}

// Variant is one content arm of an experiment.
type Variant struct {
	Key    string // names the arm in answers, events and results; ArmKeyRule, never "control"
	Weight int    // percent of the users in coverage, 1-100
	Creative
}

// Control is an experiment's control arm.
type Control struct {
	Weight int // percent of the users in coverage, 1-99
	Mode   ControlMode
}

// Experiment is an A/B test of content variants (and optionally a control) on one popup. The
// arms are the variants in order, then the control; their weights sum to 100.
type Experiment struct {
	Status          ExperimentStatus
	CoveragePercent int // percent of the popup's users who are in the experiment; the rest see the popup's own content
	Variants        []Variant
	Control         *Control   // nil = no control arm
	PlannedEndAt    *time.Time // when the operator means to read the result; nil = none planned
	// PrimaryGoal is the key of the goal (docs/CONTRACT.md §14) whose conversion rate decides the
	// verdict instead of the click-through rate; "" = the click-through rate. Which users count
	// does not depend on it, so a change moves nobody.
	PrimaryGoal string

	// Server-managed.
	// Phase counts the experiment's assignments, from 1. Each phase has its own Salt, so a new
	// phase assigns every user afresh and its results are separate from the earlier ones.
	Phase int
	// Salt keys the current phase's assignment (CoverageBucket, ArmBucket): 16 hex characters
	// drawn when the phase begins.
	Salt             string
	PhaseStartedAt   *time.Time // when the current phase first ran; nil until it has
	ConcludedVariant string     // the variant shipped by Conclude
}

// ArmCount is the number of arms: the variants and the control.
func (e *Experiment) ArmCount() int {
	n := len(e.Variants)
	if e.Control != nil {
		n++
	}
	return n
}

// ArmKey is the key of arm i (variants first, then the control).
func (e *Experiment) ArmKey(i int) string {
	if i < len(e.Variants) {
		return e.Variants[i].Key
	}
	return ControlArm
}

// ArmWeight is the weight in percent of arm i.
func (e *Experiment) ArmWeight(i int) int {
	if i < len(e.Variants) {
		return e.Variants[i].Weight
	}
	return e.Control.Weight
}

// ArmIndex is the index of the arm named key, or -1.
func (e *Experiment) ArmIndex(key string) int {
	for i := range e.ArmCount() {
		if e.ArmKey(i) == key {
			return i
		}
	}
	return -1
}

// IsControl reports whether arm i is the control.
func (e *Experiment) IsControl(i int) bool { return e.Control != nil && i == len(e.Variants) }

// Assigning reports whether the experiment assigns users now (it is running).
func (e *Experiment) Assigning() bool { return e != nil && e.Status == ExperimentRunning }

// Equal reports whether two creatives show the same thing (ext compared as compacted bytes).
func (c Creative) Equal(o Creative) bool {
	return c.Title == o.Title && c.Content == o.Content && c.ImageURL == o.ImageURL && c.ImageAlt == o.ImageAlt && c.LinkURL == o.LinkURL &&
		slices.Equal(c.Buttons, o.Buttons) && string(c.Ext) == string(o.Ext) && translationsEqual(c.Translations, o.Translations)
}

// --- assignment ---------------------------------------------------------------------------------

// CoverageBucket is the bucket 0..9999 that decides whether uid is in an experiment's coverage in
// the phase keyed by salt: in when CoverageBucket < 100 × coverage_percent. ArmBucket decides the
// arm. Both are
//
//	fmix64(FNV-1a 64("<salt>:<tag>:<uid>")) mod 10000
//
// with tag "c" for coverage and "a" for the arm, and fmix64 MurmurHash3's 64-bit finaliser. The
// finaliser matters: FNV-1a's low bits barely mix (its lowest bit is the parity of the input's
// lowest bits), and an experiment's buckets must not correlate with the rollout bucket (plain
// FNV-1a of "<bucket_seed>:<uid>" mod 100) or with each other: a 10% rollout must not skew a
// 3-way split. The salt changes with every phase; coverage and arm use separate tags so that
// raising coverage only adds users and moves nobody between arms. In Python:
//
//	def fmix64(h):
//	    h ^= h >> 33; h = (h * 0xff51afd7ed558ccd) % 2**64
//	    h ^= h >> 33; h = (h * 0xc4ceb9fe1a85ec53) % 2**64
//	    return h ^ (h >> 33)
//	def bucket(salt, tag, uid):
//	    h = 0xcbf29ce484222325
//	    for b in f"{salt}:{tag}:{uid}".encode():
//	        h = ((h ^ b) * 0x100000001b3) % 2**64
//	    return fmix64(h) % 10000
//
// Known answers are in experiment_test.go (TestExperimentBucketsKnownAnswers). It does not allocate.
func CoverageBucket(salt, uid string) int { return expBucket(expState(salt, 'c'), uid) }

// ArmBucket is the bucket 0..9999 that picks uid's arm in the phase keyed by salt (see
// CoverageBucket): arms take consecutive ranges of 100 × weight buckets, variants in order, then
// the control.
func ArmBucket(salt, uid string) int { return expBucket(expState(salt, 'a'), uid) }

// expState is the FNV-1a state after "<salt>:<tag>:".
func expState(salt string, tag byte) uint64 {
	h := bucketHash(fnvOffset64, salt)
	h = (h ^ ':') * fnvPrime64
	h = (h ^ uint64(tag)) * fnvPrime64
	return (h ^ ':') * fnvPrime64
}

func expBucket(state uint64, uid string) int {
	return int(fmix64(bucketHash(state, uid)) % ExperimentBuckets)
}

// fmix64 is MurmurHash3's 64-bit finaliser: every input bit affects every output bit.
func fmix64(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	return h ^ h>>33
}

// Assigner is an experiment's assignment prepared for the hot path: the hash states of the phase's
// salt and the arms' bucket bounds. It is immutable and copyable; the zero value assigns nobody.
type Assigner struct {
	coverState, armState uint64
	coverLimit           int                  // buckets below it are in coverage
	bounds               [MaxVariants + 1]int // arm i takes buckets [bounds[i-1], bounds[i])
	arms                 int
}

// NewAssigner prepares e's current phase for Assign. An experiment that is not running gives an
// Assigner that assigns nobody.
func NewAssigner(e *Experiment) Assigner {
	if !e.Assigning() {
		return Assigner{}
	}
	a := Assigner{
		coverState: expState(e.Salt, 'c'),
		armState:   expState(e.Salt, 'a'),
		coverLimit: e.CoveragePercent * (ExperimentBuckets / 100),
		arms:       e.ArmCount(),
	}
	sum := 0
	for i := range a.arms {
		sum += e.ArmWeight(i) * (ExperimentBuckets / 100)
		a.bounds[i] = sum
	}
	return a
}

// Assign returns uid's arm index (variants first, then the control), or -1 when uid is not in the
// experiment (outside coverage, or the experiment is not running). It does not allocate.
func (a *Assigner) Assign(uid string) int {
	if a.arms == 0 || a.coverLimit == 0 || expBucket(a.coverState, uid) >= a.coverLimit {
		return -1
	}
	b := expBucket(a.armState, uid)
	for i := range a.arms {
		if b < a.bounds[i] {
			return i
		}
	}
	return -1 // weights summing to under 100 (never, after ValidateWith)
}

// --- validation ---------------------------------------------------------------------------------

// ValidArmKey reports whether s is a well-formed variant key: 1-16 characters of [a-z0-9_-].
func ValidArmKey(s string) bool { return validKey(s, maxArmKeyLen) }

// validKey reports whether s is 1 to max characters of [a-z0-9_-] (an arm's or a goal's key).
func validKey(s string, max int) bool {
	if len(s) == 0 || len(s) > max {
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

// validate checks the experiment's own fields, reporting under "experiment.…".
func (e *Experiment) validate(v *validator, links LinkSchemes) {
	if !e.Status.Valid() {
		v.add("experiment.status", "must be one of draft, running, stopped, concluded")
	}
	if e.CoveragePercent < 0 || e.CoveragePercent > 100 {
		v.add("experiment.coverage_percent", "must be between 0 and 100")
	}
	switch n := len(e.Variants); {
	case n == 0:
		v.add("experiment.variants", "must have at least one variant")
	case n > MaxVariants:
		v.add("experiment.variants", "must have at most "+strconv.Itoa(MaxVariants)+" variants")
	case e.ArmCount() < 2:
		v.add("experiment.variants", "must have two arms at least: a second variant or a control")
	}
	sum := 0
	seen := make(map[string]bool, len(e.Variants))
	for i, va := range e.Variants {
		prefix := "experiment.variants[" + strconv.Itoa(i) + "]"
		switch {
		case va.Key == ControlArm:
			v.add(prefix+".key", `must not be "control", the control arm's key`)
		case !ValidArmKey(va.Key):
			v.add(prefix+".key", "must be "+ArmKeyRule)
		case seen[va.Key]:
			v.add(prefix+".key", "must differ from every other variant's key")
		}
		seen[va.Key] = true
		if va.Weight < 1 || va.Weight > 100 {
			v.add(prefix+".weight", "must be between 1 and 100 (percent)")
		}
		sum += va.Weight
		va.Creative.validate(v, prefix+".", links)
	}
	if c := e.Control; c != nil {
		if c.Weight < 1 || c.Weight > 99 {
			v.add("experiment.control.weight", "must be between 1 and 99 (percent)")
		}
		if c.Mode != ControlNone && c.Mode != ControlFallThrough {
			v.add("experiment.control.mode", "must be none or fall_through")
		}
		sum += c.Weight
	}
	if sum != 100 && len(e.Variants) > 0 {
		v.add("experiment.variants", "weights (the variants' and the control's) must sum to 100, not "+strconv.Itoa(sum))
	}
	v.windowTime("experiment.planned_end_at", e.PlannedEndAt)
	if e.PrimaryGoal != "" && !ValidGoalKey(e.PrimaryGoal) {
		v.add("experiment.primary_goal", "must be a goal's key ("+GoalKeyRule+") or null")
	}
	if e.ConcludedVariant != "" && e.Status == ExperimentConcluded && !seen[e.ConcludedVariant] {
		v.add("experiment.concluded_variant", "must be one of the variants' keys")
	}
}

// normalize gives every variant's creative its canonical shape (as Popup.normalize does).
func (e *Experiment) normalize() {
	e.Variants = slices.Clone(e.Variants)
	for i := range e.Variants {
		e.Variants[i].Creative.normalize()
	}
}

// --- phases and transitions ---------------------------------------------------------------------

// Errors of the experiment's phase and transition rules, each naming the experiment field.
var (
	ErrExperimentMissing   = experimentError(CodeExperimentMissing, "the popup has no experiment")
	ErrExperimentConcluded = experimentError(CodeExperimentConcluded, "the experiment is concluded: it cannot change; remove it (experiment null) to start another")
	ErrExperimentState     = experimentError(CodeExperimentState, "the experiment is not in a state that allows this")
	ErrExperimentRunning   = experimentError(CodeExperimentRunning, "the experiment is running: stop it before removing it")
	ErrExperimentShipped   = experimentError(CodeExperimentShipped, "the popup shows the variant its concluded experiment shipped: "+
		"a write that changes its content ends the experiment; send end_experiment=true to remove the experiment with this write")
	// ErrUnknownVariant is a conclusion naming a variant the experiment does not have.
	ErrUnknownVariant error = &Error{code: CodeValidationFailed, msg: "no variant has this key",
		field: "variant", fieldMsg: "must be the key of one of the experiment's variants", answer: fieldSlot + " no variant has this key"}
)

// experimentError is an error of an experiment rule: its answer is the experiment's path, then msg.
func experimentError(code Code, msg string) error {
	return &Error{code: code, msg: msg, field: "experiment", answer: fieldSlot + ": " + msg}
}

// Reassigns reports whether replacing stored's arms by next's would move users between arms
// (or change what an arm shows): a different set or order of arms, other weights, another
// creative in a variant, or another control mode. Coverage and the planned end never do.
func Reassigns(stored, next *Experiment) bool {
	if stored.ArmCount() != next.ArmCount() || (stored.Control == nil) != (next.Control == nil) {
		return true
	}
	if stored.Control != nil && *stored.Control != *next.Control {
		return true
	}
	for i, va := range stored.Variants {
		nv := next.Variants[i]
		if va.Key != nv.Key || va.Weight != nv.Weight || !va.Creative.Equal(nv.Creative) {
			return true
		}
	}
	return false
}

// KeepExperiment applies the phase rules to next, the experiment a write gives a popup whose
// stored experiment is stored (nil for none), at now. The server-managed fields come from stored;
// a write cannot set them. It returns whether the write moves users between arms within the
// phase (acceptReassignment set and the arms changed), which the audit log records.
//
//   - A new experiment (no stored one) is a draft at phase 1 with a fresh salt, whatever was sent.
//   - A running experiment cannot be removed (ErrExperimentRunning): stop it first.
//   - A concluded experiment is read-only: any other experiment sent is ErrExperimentConcluded
//     (remove it first to start another).
//   - Status is changed only by the transitions (Start, Stop, Conclude): the stored one is kept.
//   - A change that Reassigns users starts a new phase with a new salt (beginning now if the
//     experiment runs, else when it next starts) unless acceptReassignment, which keeps the phase
//     and is reported. A phase that never ran (PhaseStartedAt nil) assigned nobody and is kept,
//     whatever changes.
func KeepExperiment(next, stored *Experiment, acceptReassignment bool, now time.Time) (reassigned bool, err error) {
	switch {
	case next == nil && stored != nil && stored.Status == ExperimentRunning:
		return false, ErrExperimentRunning
	case next == nil:
		return false, nil
	case stored == nil:
		next.Status, next.Phase, next.Salt, next.PhaseStartedAt, next.ConcludedVariant = ExperimentDraft, 1, NewBucketSeed(), nil, ""
		return false, nil
	case stored.Status == ExperimentConcluded:
		if experimentsEqual(next, stored) {
			*next = *stored
			return false, nil
		}
		return false, ErrExperimentConcluded
	}
	next.Status, next.Phase, next.Salt, next.PhaseStartedAt, next.ConcludedVariant =
		stored.Status, stored.Phase, stored.Salt, stored.PhaseStartedAt, stored.ConcludedVariant
	if !Reassigns(stored, next) || stored.PhaseStartedAt == nil {
		// Nothing that moves users, or a phase that never ran: nobody was assigned, so the
		// phase and its salt stay (a draft's edits would otherwise leave empty phases behind).
		return false, nil
	}
	if acceptReassignment {
		return true, nil
	}
	next.Phase++
	next.Salt = NewBucketSeed()
	next.PhaseStartedAt = nil
	if next.Status == ExperimentRunning {
		// A running experiment's new phase begins now.
		t := now.UTC()
		next.PhaseStartedAt = &t
	}
	return false, nil
}

// KeepShipped applies the shipped-content rule to next, what a write (a PUT, a rollback, an
// import) makes of stored (docs/CONTRACT.md §10): while stored's experiment is concluded, the
// popup's own content is the shipped variant's, so a write that changes that content would leave
// the experiment saying one variant shipped while the app serves another content. Such a write is
// refused (ErrExperimentShipped) unless it ends the experiment: it removes it itself (experiment
// null), or endExperiment asks for the removal with this write. Reports whether it removed it.
func KeepShipped(next, stored *Popup, endExperiment bool) (ended bool, err error) {
	if stored == nil || stored.Experiment == nil || stored.Experiment.Status != ExperimentConcluded ||
		next.Experiment == nil || next.Creative.Equal(stored.Creative) {
		return false, nil
	}
	if !endExperiment {
		return false, ErrExperimentShipped
	}
	next.Experiment = nil
	return true, nil
}

// experimentsEqual compares the operator-set fields of two experiments.
func experimentsEqual(a, b *Experiment) bool {
	return a.CoveragePercent == b.CoveragePercent && !Reassigns(a, b) && timesEqual(a.PlannedEndAt, b.PlannedEndAt) &&
		a.PrimaryGoal == b.PrimaryGoal
}

func timesEqual(a, b *time.Time) bool {
	return a == nil && b == nil || a != nil && b != nil && a.Equal(*b)
}

// in checks that e exists and is in one of the statuses a transition starts from.
func (e *Experiment) in(from ...ExperimentStatus) error {
	switch {
	case e == nil:
		return ErrExperimentMissing
	case slices.Contains(from, e.Status):
		return nil
	case e.Status == ExperimentConcluded:
		return ErrExperimentConcluded
	}
	return ErrExperimentState
}

// Start makes e run at now: from draft, or again from stopped in the same phase.
func (e *Experiment) Start(now time.Time) error {
	if err := e.in(ExperimentDraft, ExperimentStopped); err != nil {
		return err
	}
	e.Status = ExperimentRunning
	if e.PhaseStartedAt == nil {
		t := now.UTC()
		e.PhaseStartedAt = &t
	}
	return nil
}

// Stop stops a running e: nobody is assigned until it starts again.
func (e *Experiment) Stop() error {
	if err := e.in(ExperimentRunning); err != nil {
		return err
	}
	e.Status = ExperimentStopped
	return nil
}

// Conclude ships the variant named key: its creative becomes p's own content and p's experiment
// is concluded (read-only, its results kept). The experiment must be running or stopped.
func (p *Popup) Conclude(key string) error {
	e := p.Experiment
	if err := e.in(ExperimentRunning, ExperimentStopped); err != nil {
		return err
	}
	i := e.ArmIndex(key)
	if i < 0 || e.IsControl(i) {
		return ErrUnknownVariant
	}
	p.Creative = e.Variants[i].Creative
	e.Status = ExperimentConcluded
	e.ConcludedVariant = key
	return nil
}

// Moves counts what keeping the assignment of a phase does when its arms change (a PUT with
// accept_reassignment): of the users the phase counted, each in the arm of its first exposure,
// those whom next, under the phase's salt, assigns another arm or leaves out of the experiment
// (a lower coverage). Add every counted user once; Users and Moved are the totals.
type Moves struct {
	a            Assigner
	next         Experiment
	Users, Moved int64
}

// NewMoves counts the moves of next's arms under salt, the phase's.
func NewMoves(next *Experiment, salt string) *Moves {
	m := &Moves{next: *next}
	m.next.Status, m.next.Salt = ExperimentRunning, salt
	m.a = NewAssigner(&m.next)
	return m
}

// Add counts a user the phase counted in arm.
func (m *Moves) Add(uid, arm string) {
	m.Users++
	if i := m.a.Assign(uid); i < 0 || m.next.ArmKey(i) != arm {
		m.Moved++
	}
}
