package stats

import "math"

// Power is the chance an estimate of the sample needed (Needed) gives the fixed-horizon test of
// finding the difference seen so far, if it is the true one.
const Power = 0.8

// Need is how many users an experiment still needs before its verdict could name the arm that
// leads now (docs/EXPERIMENTS.md, "How long until a decision").
type Need struct {
	Leader int // index in Input.Arms of the arm furthest from the control so far
	// PerArm is the users each of the leader and the control needs: the fixed-horizon sample
	// size of the difference seen, at the Bonferroni-corrected α and Power, but at least the
	// minimum sample (MinExposed users, MinClicks clicking and non-clicking users).
	PerArm int64
	// More is the users the whole experiment still needs for both arms to reach PerArm, the
	// arms filling in the proportion of their weights: max over the two arms of PerArm/weight,
	// less the users exposed so far over every arm; 0 when both are there.
	More int64
}

// Needed estimates how many more users the experiment of in needs before its verdict could name
// the arm that leads now, the one of the estimable comparisons whose difference from the control
// is largest in size. False when there is nothing to estimate: the verdict names a winner
// already, the sample ratio is off (nothing is to be trusted), there is no comparison, or no
// arm differs from the control at all so far (the sample needed is then unbounded).
//
//	n = (z(1 − α/(2m)) + z(Power))² · (p_t(1 − p_t) + p_c(1 − p_c)) / (p_t − p_c)²
//
// with m the number of comparisons: the two-sided fixed-horizon test of the difference, which
// the sequential test needs somewhat more than, so it is an estimate of the order, not a promise.
func Needed(in Input, res Result) (Need, bool) {
	o := in.Options.withDefaults()
	if res.Verdict.Winner >= 0 || res.SampleRatio.SRM || len(res.Comparisons) == 0 {
		return Need{}, false
	}
	lead := -1
	for k, c := range res.Comparisons {
		if c.Estimable && c.Difference != 0 && (lead < 0 || math.Abs(c.Difference) > math.Abs(res.Comparisons[lead].Difference)) {
			lead = k
		}
	}
	if lead < 0 {
		return Need{}, false
	}
	c := res.Comparisons[lead]
	pt, pc := res.Arms[c.Arm].CTR, res.Arms[in.Control].CTR
	m := float64(len(res.Comparisons))
	z := normQuantile(1-o.Alpha/(2*m)) + normQuantile(Power)
	n := z * z * (pt*(1-pt) + pc*(1-pc)) / (c.Difference * c.Difference)
	n = math.Max(n, float64(o.MinExposed))
	// MinClicks clicking and non-clicking users in each arm, at the rates seen
	for _, p := range []float64{pt, pc} {
		if p > 0 && p < 1 {
			n = math.Max(n, float64(o.MinClicks)/math.Min(p, 1-p))
		}
	}
	need := Need{Leader: c.Arm, PerArm: int64(math.Ceil(n))}
	var total, seen float64
	for _, i := range []int{c.Arm, in.Control} {
		total = math.Max(total, n/in.Arms[i].Weight)
	}
	for _, a := range in.Arms {
		seen += float64(a.Exposed)
	}
	need.More = int64(math.Ceil(math.Max(0, total-seen)))
	return need, true
}
