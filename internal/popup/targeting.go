package popup

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"popupsvc/internal/audience"
)

// Request is one homepage call, already validated by the HTTP layer.
type Request struct {
	UID        string
	Platform   string // ios, android or web
	AppVersion Version
	Region     string // may be ""; compared case-insensitively
	Lang       string // may be ""; a tag or an Accept-Language value (ValidLang): targeting compares PrimaryLang, case-insensitively
	// Where is the placement, the event and the attributes (the zero Where: a plain request for
	// the homepage).
	Where
}

// Platform bits for Compiled.platforms; 0 means "all platforms".
const (
	platformBitIOS uint8 = 1 << iota
	platformBitAndroid
	platformBitWeb
)

// platformBit maps a platform name to its bit, case-insensitively; 0 for an unknown platform.
func platformBit(s string) uint8 {
	switch {
	case strings.EqualFold(s, PlatformIOS):
		return platformBitIOS
	case strings.EqualFold(s, PlatformAndroid):
		return platformBitAndroid
	case strings.EqualFold(s, PlatformWeb):
		return platformBitWeb
	}
	return 0
}

// FNV-1a 64-bit parameters (http://www.isthe.com/chongo/tech/comp/fnv/).
const (
	fnvOffset64 uint64 = 14695981039346656037
	fnvPrime64  uint64 = 1099511628211
)

// RolloutBucket is the stable bucket 0..99 of (bucket seed, uid) used by rollout_percent: a user
// is in a popup's rollout of N percent when RolloutBucket(seed, uid) < N. Each popup has its own
// seed (Popup.BucketSeed), so different popups reach different slices of the users; the seed is
// fixed before the popup is first saved (a draft's preview already has it) and never changes, so
// a preview buckets users as the saved popup will, and raising N only ever adds users.
//
// The bucket is FNV-1a 64-bit over the bytes of the seed, one ':' byte and the uid bytes, taken
// mod 100 as an unsigned 64-bit integer. In Python:
//
//	h = 0xcbf29ce484222325
//	for b in f"{bucket_seed}:{uid}".encode():
//	    h = ((h ^ b) * 0x100000001b3) % 2**64
//	bucket = h % 100
//
// Known answers, for other implementations to check against (a popup saved before seeds existed
// has its decimal id as its seed, so these are also the buckets it always had):
//
//	RolloutBucket("1", "u1")                    == 40
//	RolloutBucket("7", "qa-device-1")           == 73
//	RolloutBucket("42", "user-1000")            == 90
//	RolloutBucket("123456789", "a:b.c")         == 38
//	RolloutBucket("-5", "x")                    == 65
//	RolloutBucket("3f9a0c2b7d1e4a65", "user-1") == 75
//	RolloutBucket("spring-sale_2026", "vip-3")  == 34
//
// It does not allocate.
func RolloutBucket(seed, uid string) int {
	return bucketOf(rolloutState(seed), uid)
}

// rolloutState is the FNV-1a state after "<seed>:". CompileWith stores it, so matching a request
// hashes only the uid.
func rolloutState(seed string) uint64 {
	return (bucketHash(fnvOffset64, seed) ^ ':') * fnvPrime64
}

func bucketOf(seed uint64, uid string) int {
	return int(bucketHash(seed, uid) % 100)
}

// bucketHash continues FNV-1a state h over the bytes of s.
func bucketHash(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * fnvPrime64
	}
	return h
}

// CodeRule describes a well-formed region or language code (validCode) in the words every error
// message uses.
const CodeRule = "1-16 characters of [A-Za-z0-9_-]"

// ValidRequestCode reports whether s may be a request's region or language: absent ("") or a code
// as popups list them (CodeRule).
func ValidRequestCode(s string) bool { return s == "" || validCode(s) }

// CodeKey is a region or language code as the matcher compares it: lower-cased (ASCII) and
// zero-padded to 16 bytes. ok is false for "" and for anything no popup can list.
func CodeKey(s string) (k [maxCodeLen]byte, ok bool) {
	c := toCode(s)
	return c, c != code{}
}

// code is a region or language code, lower-cased and zero-padded: codes are at most 16 bytes of
// [a-z0-9_-], so two of them compare as two machine words, with no pointer to follow.
type code [maxCodeLen]byte

// toCode lower-cases s (ASCII only: configured codes are ASCII) into a code. Anything that cannot
// equal a configured code ("", too long, containing NUL) becomes the zero code, which matches no list.
func toCode(s string) code {
	var c code
	if len(s) > len(c) {
		return code{}
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		switch {
		case b == 0:
			return code{}
		case b >= 'A' && b <= 'Z':
			b += 'a' - 'A'
		}
		c[i] = b
	}
	return c
}

// codeBit is the one bit of a 16-bit signature that a code sets. A popup keeps the OR of its
// codes' bits next to its other hot fields: a request whose bit is not in it cannot match, and
// most non-matching popups are rejected without reading the list itself.
func codeBit(c code) uint16 {
	h := fnvOffset64
	for _, b := range c {
		h = (h ^ uint64(b)) * fnvPrime64
	}
	return 1 << (h >> 60)
}

// uidHash is FNV-1a 64 of a uid: the allow-list is searched by it, so a request hashes its uid
// once instead of once per popup as a map lookup would.
func uidHash(uid string) uint64 {
	return bucketHash(fnvOffset64, uid)
}

// Compiled is a popup prepared for fast matching: versions parsed, platforms as a bitmask,
// regions and languages as lower-case codes, the uid allow-list sorted by hash. It is immutable
// once built, so one Compiled may serve any number of concurrent requests, and it may be copied
// (a snapshot may lay its Compiled values out in one array in selection order).
type Compiled struct {
	// Select reads these for every candidate. They come first and fit in 64 bytes, so rejecting a
	// popup that is inactive, out of its window, or for another platform or version touches one
	// cache line; with 10,000 configs that, not arithmetic, is what a scan costs.
	startSec, endSec       int64 // the window [start, end) in unix seconds; math.MinInt64/MaxInt64 when open
	startNsec, endNsec     int32
	minVersion, maxVersion Version // Version{} / all ones when open, so no flags are needed
	regionSig, langSig     uint16  // OR of codeBit over regions / langs; 0 = all
	platforms              uint8   // platformBit* set; 0 = all
	active                 bool
	rollout                uint8 // 0..100
	whereBits              uint8 // where* flags: most popups show on the homepage's plain requests, without rules

	regions, langs []code    // empty = all
	rolloutState   uint64    // FNV-1a state after "<bucket seed>:"
	allow          []allowed // the uid allow-list, sorted by hash
	assigner       *Assigner // the experiment's assignment while it is running; nil = none (Arm)
	// include and exclude are the sets of Targeting.Audiences, by position, as BindAudiences
	// found them; a nil entry is an audience this instance does not hold (fail-closed).
	include, exclude []*audience.Set
	failClosed       *atomic.Uint64 // counts the checks answered fail-closed; nil = uncounted
	where            compiledWhere  // placements, trigger and rules

	Popup Popup
}

// CompileWith validates p, links checked against the allow-list links, and prepares it for
// matching. The error is a *ValidationError, so a snapshot builder can skip (and report) a bad
// stored row instead of serving it half-understood. The Popup kept in the result is normalized as
// Input.BuildWith does (non-nil slices, ext "{}").
func CompileWith(p Popup, links LinkSchemes) (*Compiled, error) {
	p.normalize()
	if err := p.ValidateWith(links); err != nil {
		return nil, err
	}
	c := &Compiled{
		startSec:     math.MinInt64,
		endSec:       math.MaxInt64,
		maxVersion:   Version{math.MaxUint32, math.MaxUint32, math.MaxUint32, math.MaxUint32},
		active:       p.Status == StatusActive,
		rollout:      uint8(p.Targeting.RolloutPercent),
		rolloutState: rolloutState(p.RolloutSeed()),
		Popup:        p,
	}
	if p.StartAt != nil {
		c.startSec, c.startNsec = p.StartAt.Unix(), int32(p.StartAt.Nanosecond())
	}
	if p.EndAt != nil {
		c.endSec, c.endNsec = p.EndAt.Unix(), int32(p.EndAt.Nanosecond())
	}
	for _, pl := range p.Targeting.Platforms {
		c.platforms |= platformBit(pl)
	}
	// ValidateWith has accepted both versions, so a parse error here only means "not set".
	if v, err := ParseVersion(p.Targeting.MinAppVersion); err == nil {
		c.minVersion = v
	}
	if v, err := ParseVersion(p.Targeting.MaxAppVersion); err == nil {
		c.maxVersion = v
	}
	c.regions, c.regionSig = toCodes(p.Targeting.Regions)
	c.langs, c.langSig = toCodes(p.Targeting.Langs)
	c.allow = make([]allowed, len(p.Targeting.UIDs))
	for i, uid := range p.Targeting.UIDs {
		c.allow[i] = allowed{hash: uidHash(uid), uid: uid}
	}
	slices.SortFunc(c.allow, func(a, b allowed) int { return cmp.Compare(a.hash, b.hash) })
	if p.Experiment.Assigning() {
		a := NewAssigner(p.Experiment)
		c.assigner = &a
	}
	w, err := compileWhere(&p.Targeting)
	if err != nil { // ValidateWith accepted the rules: a compile error is a bug, not a bad row
		return nil, &ValidationError{Fields: []FieldError{{Field: "targeting", Message: err.Error()}}}
	}
	c.where, c.whereBits = w, w.bits()
	if n := len(p.Targeting.Audiences.Include); n > 0 {
		c.include = make([]*audience.Set, n)
	}
	if n := len(p.Targeting.Audiences.Exclude); n > 0 {
		c.exclude = make([]*audience.Set, n)
	}
	return c, nil
}

// BindAudiences looks up the sets of the audiences c targets in sets; one sets does not hold
// stays unbound (fail-closed). It changes c, so it belongs to building c, before c is shared.
func (c *Compiled) BindAudiences(sets *audience.Sets) {
	for i, id := range c.Popup.Targeting.Audiences.Include {
		c.include[i] = sets.Get(id)
	}
	for i, id := range c.Popup.Targeting.Audiences.Exclude {
		c.exclude[i] = sets.Get(id)
	}
	if sets != nil {
		c.failClosed = sets.FailClosed
	}
}

// AudiencesBound reports whether c holds every audience it targets.
func (c *Compiled) AudiencesBound() bool {
	return !slices.Contains(c.include, nil) && !slices.Contains(c.exclude, nil)
}

// audienceReason is the audience check: ReasonNone when uid is in an included audience (or none
// is included) and in no excluded one; else the reason and the audience it is about. An
// audience not held answers fail-closed: not a member of an include, a member of an exclude,
// and the check is counted.
func (c *Compiled) audienceReason(uid string) (Reason, int64) {
	r, id := c.audienceVerdict(uid)
	if r == ReasonAudienceNotLoaded && c.failClosed != nil {
		c.failClosed.Add(1)
	}
	return r, id
}

// audienceVerdict is audienceReason without the count (Explain names the audience of a reason
// it already has).
func (c *Compiled) audienceVerdict(uid string) (Reason, int64) {
	refs := &c.Popup.Targeting.Audiences
	for i, s := range c.exclude {
		switch {
		case s == nil:
			return ReasonAudienceNotLoaded, refs.Exclude[i]
		case s.Contains(uid):
			return ReasonInExcludedAudience, refs.Exclude[i]
		}
	}
	if len(c.include) == 0 {
		return ReasonNone, 0
	}
	var unloaded int64
	for i, s := range c.include {
		switch {
		case s == nil:
			if unloaded == 0 {
				unloaded = refs.Include[i]
			}
		case s.Contains(uid):
			return ReasonNone, 0
		}
	}
	if unloaded != 0 {
		return ReasonAudienceNotLoaded, unloaded
	}
	return ReasonNotInAudience, refs.Include[0]
}

func toCodes(list []string) ([]code, uint16) {
	out := make([]code, len(list))
	var sig uint16
	for i, s := range list {
		out[i] = toCode(s)
		sig |= codeBit(out[i])
	}
	return out, sig
}

// allowed is one uid of an allow-list with its uidHash.
type allowed struct {
	hash uint64
	uid  string
}

// InWindow reports whether now is inside the popup's schedule, the half-open [start_at, end_at):
// live from the instant it starts, gone at the instant it ends. A nil bound is open.
func (c *Compiled) InWindow(now time.Time) bool {
	return c.windowReason(now.Unix(), int32(now.Nanosecond())) == ReasonNone
}

func (c *Compiled) windowReason(sec int64, nsec int32) Reason {
	switch {
	case sec < c.startSec || sec == c.startSec && nsec < c.startNsec:
		return ReasonNotStarted
	case sec > c.endSec || sec == c.endSec && nsec >= c.endNsec:
		return ReasonEnded
	}
	return ReasonNone
}

// query is a Request prepared once for matching against many popups.
type query struct {
	uid                string
	uidHash            uint64
	version            Version
	region, lang       code
	regionBit, langBit uint16
	platform           uint8
	homePlain          bool   // a request for DefaultPlacement carrying no event
	placement          string // never "": DefaultPlacement when the request names none
	where              *Where
}

func newQuery(r *Request) query {
	q := query{
		uid:       r.UID,
		uidHash:   uidHash(r.UID),
		version:   r.AppVersion,
		region:    toCode(r.Region),
		lang:      toCode(PrimaryLang(r.Lang)),
		platform:  platformBit(r.Platform),
		placement: r.PlacementOr(),
		where:     &r.Where,
	}
	q.homePlain = q.placement == DefaultPlacement && r.Event == ""
	q.regionBit, q.langBit = codeBit(q.region), codeBit(q.lang)
	return q
}

// Match checks targeting only (not status, window or display rules). It returns ReasonNone when
// r matches, else the first failing check of placement, trigger, platform, app version, region,
// lang, rollout, rules, audiences.
// Regions and languages compare case-insensitively (ASCII), and a request without a region or
// language does not match a popup that lists some. A uid on the allow-list skips the rollout
// check but nothing else: QA devices still have to be on the right platform, version, region and
// language, so they see what real users would.
func (c *Compiled) Match(r Request) Reason {
	q := newQuery(&r)
	return c.match(&q)
}

func (c *Compiled) match(q *query) Reason {
	// A homepage popup without a trigger, asked for by a plain homepage request, needs no look at
	// its placements: the flags in its first cache line say so.
	if c.whereBits&^whereRules != whereHomeOnly || !q.homePlain {
		if r := c.where.whereReason(q); r != ReasonNone {
			return r
		}
	}
	switch {
	case c.platforms != 0 && c.platforms&q.platform == 0:
		return ReasonPlatform
	case q.version.Compare(c.minVersion) < 0 || q.version.Compare(c.maxVersion) > 0:
		return ReasonAppVersion
	case c.regionSig != 0 && (c.regionSig&q.regionBit == 0 || !slices.Contains(c.regions, q.region)):
		return ReasonRegion
	case c.langSig != 0 && (c.langSig&q.langBit == 0 || !slices.Contains(c.langs, q.lang)):
		return ReasonLang
	case !c.inRollout(q):
		return ReasonRollout
	case c.whereBits&whereRules != 0 && !c.where.rules.Match(&q.where.Attrs):
		return ReasonRules
	case c.targetsAudiences():
		r, _ := c.audienceReason(q.uid)
		return r
	}
	return ReasonNone
}

// targetsAudiences reports whether c names any audience (include or exclude).
func (c *Compiled) targetsAudiences() bool { return c.include != nil || c.exclude != nil }

// inRollout hashes before it looks at the allow-list: the hash is arithmetic, while the list
// is memory to read, and a listed uid that also falls in the rollout gets the same answer.
func (c *Compiled) inRollout(q *query) bool {
	if c.rollout >= 100 || bucketOf(c.rolloutState, q.uid) < int(c.rollout) {
		return true
	}
	// The hash only narrows the search; the uid itself decides, so a crafted collision gains nothing.
	i, _ := slices.BinarySearchFunc(c.allow, q.uidHash, func(a allowed, h uint64) int { return cmp.Compare(a.hash, h) })
	for ; i < len(c.allow) && c.allow[i].hash == q.uidHash; i++ {
		if c.allow[i].uid == q.uid {
			return true
		}
	}
	return false
}
