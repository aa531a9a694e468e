package stats

import (
	"fmt"
	"math"
	"time"
)

// Defaults of Options; the package doc says why each.
const (
	DefaultAlpha          = 0.05
	DefaultSRMAlpha       = 0.001
	DefaultMixingVariance = 1e-4
	DefaultMinExposed     = 1000
	DefaultMinClicks      = 30
)

// weightTolerance is how far the weights may sum from 1: percentages divided by 100 do not add
// up to exactly 1 in floating point (0.34+0.33+0.33 = 1.0000000000000002).
const weightTolerance = 1e-6

// Arm is one arm's configuration and counts.
type Arm struct {
	Weight  float64 // configured share of the experiment's users, in (0, 1]
	Exposed int64   // unique users exposed
	Clicked int64   // unique users among them who clicked at least once
}

// Options tunes the analysis; a zero field takes its Default.
type Options struct {
	Alpha          float64 // family-wise error rate of the comparisons, and 1 − coverage of the intervals
	SRMAlpha       float64 // the sample-ratio check alarms at P < SRMAlpha
	MixingVariance float64 // τ² of the mSPRT's normal mixture, in squared absolute click-through rate
	MinExposed     int64   // users every arm needs before a winner is called
	MinClicks      int64   // clicking users, and non-clicking users, every arm needs before a winner is called
}

// Input is an experiment at one look.
type Input struct {
	Arms []Arm
	// Control is the index in Arms of the arm the others are compared with: the control group, or
	// the baseline variant when the experiment has none.
	Control int
	// Now and PlannedEnd decide whether the fixed-horizon intervals may call a winner: only at or
	// after a PlannedEnd that is set.
	Now        time.Time
	PlannedEnd time.Time
	Options    Options
}

// Interval is a closed interval [Lower, Upper].
type Interval struct {
	Lower, Upper float64
}

// Excludes reports whether v lies outside the interval.
func (iv Interval) Excludes(v float64) bool { return v < iv.Lower || v > iv.Upper }

// ArmResult is one arm's click-through rate.
type ArmResult struct {
	CTR float64  // Clicked/Exposed; 0 when nobody was exposed
	CI  Interval // Wilson score interval at 1−Alpha (not corrected: it describes one arm)
}

// Comparison is one arm against the control.
type Comparison struct {
	Arm int // index in Input.Arms
	// Estimable is false when either arm has no users: every number below is then uninformative
	// (P = 1, intervals zero).
	Estimable  bool
	Difference float64  // p_t − p_c, absolute
	DiffCI     Interval // fixed-horizon, Bonferroni-corrected
	Z          float64  // (p_t − p_c)/√V, unpooled
	P          float64  // two-sided p-value of Z, one comparison
	PAdjusted  float64  // min(1, m·P), Bonferroni over the m comparisons
	// Lift is (p_t − p_c)/p_c when LiftDefined (p_c > 0).
	Lift        float64
	LiftDefined bool
	// LiftCI is Fieller's interval of the lift, Bonferroni-corrected, when LiftBounded.
	LiftCI      Interval
	LiftBounded bool
	Sequential  Sequential
}

// Sequential is the always-valid (mSPRT) inference on the difference at this look.
type Sequential struct {
	P  float64  // min(1, m/Λ(0)), valid at any number of looks
	CI Interval // {θ : Λ(θ) < m/α}
}

// SampleRatio is the sample-ratio-mismatch check.
type SampleRatio struct {
	ChiSquare float64
	DF        int
	P         float64 // upper tail of χ²(DF); 1 with one arm or no users
	SRM       bool    // P < SRMAlpha
}

// Reason says how the verdict was reached.
type Reason string

// The reasons of a Verdict.
const (
	ReasonSequential   Reason = "sequential"    // a winner: its sequential interval excludes 0
	ReasonFixedHorizon Reason = "fixed_horizon" // a winner: past the planned end, its corrected interval excludes 0
	ReasonSingleArm    Reason = "single_arm"    // nothing to compare
	ReasonSRM          Reason = "srm"           // the sample-ratio check failed: nothing is trusted
	ReasonMinSample    Reason = "min_sample"    // some arm has fewer users or clicks than the minimum
	ReasonNoDifference Reason = "no_difference" // no comparison is significant yet
)

// Verdict is the decision at this look.
type Verdict struct {
	Winner int // index in Input.Arms of the winning arm; -1 for none
	Reason Reason
}

// Result is the analysis of one look.
type Result struct {
	Arms        []ArmResult  // in the order of Input.Arms
	Comparisons []Comparison // one per arm other than the control, in the order of Input.Arms
	SampleRatio SampleRatio
	Verdict     Verdict
}

// InputError names the field of the Input that is invalid.
type InputError struct {
	Field   string // e.g. "arms[2].clicked"
	Problem string
}

func (e *InputError) Error() string { return e.Field + ": " + e.Problem }

func inputErr(field, format string, args ...any) error {
	return &InputError{Field: field, Problem: fmt.Sprintf(format, args...)}
}

func (o Options) withDefaults() Options {
	if o.Alpha == 0 {
		o.Alpha = DefaultAlpha
	}
	if o.SRMAlpha == 0 {
		o.SRMAlpha = DefaultSRMAlpha
	}
	if o.MixingVariance == 0 {
		o.MixingVariance = DefaultMixingVariance
	}
	if o.MinExposed == 0 {
		o.MinExposed = DefaultMinExposed
	}
	if o.MinClicks == 0 {
		o.MinClicks = DefaultMinClicks
	}
	return o
}

func validate(in Input, o Options) error {
	if len(in.Arms) == 0 {
		return inputErr("arms", "at least one arm is required")
	}
	if in.Control < 0 || in.Control >= len(in.Arms) {
		return inputErr("control", "index %d is not an arm (0..%d)", in.Control, len(in.Arms)-1)
	}
	sum := 0.0
	for i, a := range in.Arms {
		if math.IsNaN(a.Weight) || a.Weight <= 0 || a.Weight > 1 {
			return inputErr(fmt.Sprintf("arms[%d].weight", i), "%v is not in (0, 1]", a.Weight)
		}
		sum += a.Weight
		if a.Exposed < 0 {
			return inputErr(fmt.Sprintf("arms[%d].exposed", i), "%d is negative", a.Exposed)
		}
		if a.Clicked < 0 {
			return inputErr(fmt.Sprintf("arms[%d].clicked", i), "%d is negative", a.Clicked)
		}
		if a.Clicked > a.Exposed {
			return inputErr(fmt.Sprintf("arms[%d].clicked", i), "%d exceeds exposed %d", a.Clicked, a.Exposed)
		}
	}
	if math.Abs(sum-1) > weightTolerance {
		return inputErr("arms.weight", "weights sum to %v, not 1", sum)
	}
	if !(o.Alpha > 0 && o.Alpha < 1) {
		return inputErr("options.alpha", "%v is not in (0, 1)", o.Alpha)
	}
	if !(o.SRMAlpha > 0 && o.SRMAlpha < 1) {
		return inputErr("options.srm_alpha", "%v is not in (0, 1)", o.SRMAlpha)
	}
	if !(o.MixingVariance > 0) || math.IsInf(o.MixingVariance, 1) {
		return inputErr("options.mixing_variance", "%v is not positive and finite", o.MixingVariance)
	}
	if o.MinExposed < 0 {
		return inputErr("options.min_exposed", "%d is negative", o.MinExposed)
	}
	if o.MinClicks < 0 {
		return inputErr("options.min_clicks", "%d is negative", o.MinClicks)
	}
	return nil
}

// Analyze computes the results of one look at an experiment. The only error is an *InputError.
func Analyze(in Input) (Result, error) {
	o := in.Options.withDefaults()
	if err := validate(in, o); err != nil {
		return Result{}, err
	}
	res := Result{Arms: make([]ArmResult, len(in.Arms))}
	zArm := normQuantile(1 - o.Alpha/2)
	for i, a := range in.Arms {
		res.Arms[i] = ArmResult{CTR: rate(a), CI: wilson(a.Exposed, a.Clicked, zArm)}
	}
	m := len(in.Arms) - 1
	if m > 0 {
		zFamily := normQuantile(1 - o.Alpha/(2*float64(m)))
		c := in.Arms[in.Control]
		for i, t := range in.Arms {
			if i == in.Control {
				continue
			}
			cmp := compare(t, c, zFamily, m, o)
			cmp.Arm = i
			res.Comparisons = append(res.Comparisons, cmp)
		}
	}
	res.SampleRatio = sampleRatio(in.Arms, o.SRMAlpha)
	ended := !in.PlannedEnd.IsZero() && !in.Now.Before(in.PlannedEnd)
	res.Verdict = verdict(in, o, res, ended)
	return res, nil
}

func rate(a Arm) float64 {
	if a.Exposed == 0 {
		return 0
	}
	return float64(a.Clicked) / float64(a.Exposed)
}

// bernoulliVar is the variance of an arm's rate, p(1−p)/n, with the sample p plugged in.
func bernoulliVar(a Arm) float64 {
	p := rate(a)
	return p * (1 - p) / float64(a.Exposed)
}

// wilson is the Wilson score interval of x successes in n trials with quantile z.
func wilson(n, x int64, z float64) Interval {
	if n == 0 {
		return Interval{Lower: 0, Upper: 1}
	}
	nf := float64(n)
	p := float64(x) / nf
	z2 := z * z
	denom := 1 + z2/nf
	centre := (p + z2/(2*nf)) / denom
	half := z / denom * math.Sqrt(p*(1-p)/nf+z2/(4*nf*nf))
	// At x = 0 or x = n one bound is exactly 0 or 1 in exact arithmetic; keep it so in floating point.
	lo, hi := math.Max(0, centre-half), math.Min(1, centre+half)
	if x == 0 {
		lo = 0
	}
	if x == n {
		hi = 1
	}
	return Interval{Lower: lo, Upper: hi}
}

func compare(t, c Arm, z float64, m int, o Options) Comparison {
	if t.Exposed == 0 || c.Exposed == 0 {
		return Comparison{P: 1, PAdjusted: 1, Sequential: Sequential{P: 1}}
	}
	pt, pc := rate(t), rate(c)
	vt, vc := bernoulliVar(t), bernoulliVar(c)
	v := vt + vc
	d := pt - pc
	cmp := Comparison{Estimable: true, Difference: d}
	if pc > 0 {
		cmp.Lift = d / pc
		cmp.LiftDefined = true
	}
	if v == 0 {
		// Both arms at 0% or 100%: the difference is known without sampling error (0 or ±1).
		cmp.DiffCI = Interval{Lower: d, Upper: d}
		cmp.P, cmp.PAdjusted, cmp.Sequential.P = 1, 1, 1
		if d != 0 {
			cmp.P, cmp.PAdjusted, cmp.Sequential.P = 0, 0, 0
			cmp.Z = math.Copysign(math.MaxFloat64, d)
		}
		cmp.Sequential.CI = cmp.DiffCI
		cmp.LiftCI, cmp.LiftBounded = fieller(pt, pc, vt, vc, z)
		return cmp
	}
	se := math.Sqrt(v)
	cmp.Z = d / se
	cmp.P = 2 * normSF(math.Abs(cmp.Z))
	cmp.PAdjusted = math.Min(1, float64(m)*cmp.P)
	cmp.DiffCI = Interval{Lower: d - z*se, Upper: d + z*se}
	cmp.LiftCI, cmp.LiftBounded = fieller(pt, pc, vt, vc, z)
	cmp.Sequential = msprt(d, v, o.MixingVariance, o.Alpha/float64(m), m)
	return cmp
}

// fieller is Fieller's interval for pt/pc − 1: the ρ−1 with (pt − ρ·pc)² ≤ z²(vt + ρ²·vc).
// It is bounded only when pc² > z²·vc.
func fieller(pt, pc, vt, vc, z float64) (Interval, bool) {
	z2 := z * z
	a := pc*pc - z2*vc
	if a <= 0 {
		return Interval{}, false
	}
	// a·ρ² − 2·pt·pc·ρ + (pt² − z²·vt) ≤ 0; its discriminant/4 is z²(pc²·vt + pt²·vc − z²·vt·vc),
	// positive whenever a > 0.
	disc := z2 * (pc*pc*vt + pt*pt*vc - z2*vt*vc)
	root := math.Sqrt(math.Max(0, disc))
	lo := (pt*pc - root) / a
	hi := (pt*pc + root) / a
	return Interval{Lower: lo - 1, Upper: hi - 1}, true
}

// msprt is the mixture SPRT at one look for the difference d with variance v, mixing variance
// tau2, each comparison at level alphaEach = α/m.
func msprt(d, v, tau2, alphaEach float64, m int) Sequential {
	// ln Λ(0) = ½·ln(V/(V+τ²)) + τ²d²/(2V(V+τ²)), kept in logs: Λ overflows for large samples.
	logLambda := 0.5*math.Log(v/(v+tau2)) + tau2*d*d/(2*v*(v+tau2))
	p := math.Min(1, math.Exp(math.Log(float64(m))-logLambda))
	half := math.Sqrt(v * (v + tau2) / tau2 * (2*math.Log(1/alphaEach) + math.Log((v+tau2)/v)))
	return Sequential{P: p, CI: Interval{Lower: d - half, Upper: d + half}}
}

func sampleRatio(arms []Arm, alpha float64) SampleRatio {
	sr := SampleRatio{DF: len(arms) - 1, P: 1}
	var total int64
	for _, a := range arms {
		total += a.Exposed
	}
	if sr.DF == 0 || total == 0 {
		return sr
	}
	n := float64(total)
	for _, a := range arms {
		e := n * a.Weight
		diff := float64(a.Exposed) - e
		sr.ChiSquare += diff * diff / e
	}
	sr.P = chiSquareSF(sr.ChiSquare, sr.DF)
	sr.SRM = sr.P < alpha
	return sr
}

func verdict(in Input, o Options, res Result, ended bool) Verdict {
	none := func(r Reason) Verdict { return Verdict{Winner: -1, Reason: r} }
	if len(in.Arms) < 2 {
		return none(ReasonSingleArm)
	}
	if res.SampleRatio.SRM {
		return none(ReasonSRM)
	}
	for _, a := range in.Arms {
		if a.Exposed < o.MinExposed || a.Clicked < o.MinClicks || a.Exposed-a.Clicked < o.MinClicks {
			return none(ReasonMinSample)
		}
	}
	// With a planned end, the two routes to a winner share α (a union bound): the sequential
	// test at α/2 at every look, the fixed-horizon test at α/2 once the end has passed, so that
	// stopping at the first winner calls a false one at most α of the time. Without a planned end
	// the sequential test has all of α. (Each p-value is Bonferroni-adjusted over the arms, and
	// below a level exactly when the interval at that level excludes 0.)
	seqAlpha, fixedAlpha := o.Alpha, 0.0
	if !in.PlannedEnd.IsZero() {
		seqAlpha, fixedAlpha = o.Alpha/2, o.Alpha/2
	}
	significant := func(c Comparison) (seq, fixed bool) {
		return c.Sequential.P < seqAlpha, ended && c.PAdjusted < fixedAlpha
	}
	best, bestReason := -1, ReasonNoDifference
	allWorse := true
	for _, c := range res.Comparisons {
		seq, fixed := significant(c)
		significant := seq || fixed
		if !(significant && c.Difference < 0) {
			allWorse = false
		}
		if !significant || c.Difference <= 0 {
			continue
		}
		if best == -1 || res.Arms[c.Arm].CTR > res.Arms[best].CTR {
			best, bestReason = c.Arm, ReasonFixedHorizon
			if seq {
				bestReason = ReasonSequential
			}
		}
	}
	if best >= 0 {
		return Verdict{Winner: best, Reason: bestReason}
	}
	if allWorse {
		// Every other arm is significantly worse: the control wins. The reason is the weakest
		// of the comparisons' (fixed horizon if any needed the end date).
		r := ReasonSequential
		for _, c := range res.Comparisons {
			if seq, _ := significant(c); !seq {
				r = ReasonFixedHorizon
			}
		}
		return Verdict{Winner: in.Control, Reason: r}
	}
	return none(ReasonNoDifference)
}
