package stats

import "math"

// The mean value per exposed user of a goal whose conversions carry a value (docs/CONTRACT.md
// §14): every exposed user's value is the sum of their attributed conversions' values (0 for a
// user who did not convert), so an arm's mean and variance come from its exposed users, the sum
// of the values and the sum of their squares. Two arms are compared by Welch's unequal-variance
// difference of means with the normal quantile (the samples are thousands of users), Bonferroni
// corrected over the comparisons like the rates.

// ValueArm is one arm's value sums.
type ValueArm struct {
	Exposed   int64   // users exposed
	Sum       float64 // Σ of the users' values
	SquareSum float64 // Σ of the squares of the users' values
}

// Mean is the arm's mean value per exposed user (0 without users).
func (a ValueArm) Mean() float64 {
	if a.Exposed == 0 {
		return 0
	}
	return a.Sum / float64(a.Exposed)
}

// variance is the sample variance of the users' values (n−1 in the denominator), 0 below two
// users or when rounding makes it negative.
func (a ValueArm) variance() float64 {
	if a.Exposed < 2 {
		return 0
	}
	n := float64(a.Exposed)
	m := a.Sum / n
	return math.Max(0, (a.SquareSum-n*m*m)/(n-1))
}

// ValueResult is one arm's mean value with its interval at 1−α.
type ValueResult struct {
	Mean float64
	CI   Interval
}

// ValueComparison is one arm's mean value against the baseline's.
type ValueComparison struct {
	Arm        int
	Estimable  bool // false when either arm has fewer than two users
	Difference float64
	DiffCI     Interval // Welch, Bonferroni-corrected over m comparisons
	P          float64
	PAdjusted  float64
}

// AnalyzeValues gives each arm's mean value per user and compares every arm with arms[control],
// at family-wise error rate alpha (default DefaultAlpha).
func AnalyzeValues(arms []ValueArm, control int, alpha float64) ([]ValueResult, []ValueComparison) {
	if alpha <= 0 || alpha >= 1 {
		alpha = DefaultAlpha
	}
	zArm := normQuantile(1 - alpha/2)
	out := make([]ValueResult, len(arms))
	for i, a := range arms {
		se := 0.0
		if a.Exposed > 0 {
			se = math.Sqrt(a.variance() / float64(a.Exposed))
		}
		m := a.Mean()
		out[i] = ValueResult{Mean: m, CI: Interval{Lower: m - zArm*se, Upper: m + zArm*se}}
	}
	m := len(arms) - 1
	if m < 1 {
		return out, nil
	}
	z := normQuantile(1 - alpha/(2*float64(m)))
	c := arms[control]
	var cmps []ValueComparison
	for i, t := range arms {
		if i == control {
			continue
		}
		cmp := ValueComparison{Arm: i, P: 1, PAdjusted: 1}
		if t.Exposed >= 2 && c.Exposed >= 2 {
			cmp.Estimable = true
			cmp.Difference = t.Mean() - c.Mean()
			se := math.Sqrt(t.variance()/float64(t.Exposed) + c.variance()/float64(c.Exposed))
			cmp.DiffCI = Interval{Lower: cmp.Difference - z*se, Upper: cmp.Difference + z*se}
			switch {
			case se > 0:
				cmp.P = 2 * normSF(math.Abs(cmp.Difference/se))
			case cmp.Difference != 0:
				cmp.P = 0
			}
			cmp.PAdjusted = math.Min(1, float64(m)*cmp.P)
		}
		cmps = append(cmps, cmp)
	}
	return out, cmps
}
