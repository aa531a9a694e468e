package stats

import "math"

// normQuantile is Φ⁻¹(p), the standard normal quantile. Go's Erfinv is Wichura's AS241 (PPND16),
// accurate to about 1e-16 relative.
func normQuantile(p float64) float64 {
	return math.Sqrt2 * math.Erfinv(2*p-1)
}

// normSF is Φ̄(z) = 1 − Φ(z), computed through erfc so the far tail keeps its precision.
func normSF(z float64) float64 {
	return 0.5 * math.Erfc(z/math.Sqrt2)
}

// chiSquareSF is the upper tail of the chi-squared distribution with df degrees of freedom at x:
// Q(df/2, x/2), the regularized upper incomplete gamma function.
func chiSquareSF(x float64, df int) float64 {
	if x <= 0 {
		return 1
	}
	return gammaQ(float64(df)/2, x/2)
}

// gammaQ is the regularized upper incomplete gamma function Q(a, x) for a > 0, x > 0: the power
// series of P(a, x) below x < a+1, the continued fraction of Q(a, x) (modified Lentz) above, as
// in Numerical Recipes §6.2. Both converge to machine precision in a few dozen terms for the
// small a (half the number of arms) used here.
func gammaQ(a, x float64) float64 {
	lg, _ := math.Lgamma(a)
	prefix := math.Exp(-x + a*math.Log(x) - lg)
	const eps = 1e-16
	const maxIter = 10000
	if x < a+1 {
		ap, del, sum := a, 1/a, 1/a
		for i := 0; i < maxIter; i++ {
			ap++
			del *= x / ap
			sum += del
			if math.Abs(del) < math.Abs(sum)*eps {
				break
			}
		}
		return math.Max(0, 1-sum*prefix)
	}
	const tiny = 1e-300
	b := x + 1 - a
	c := 1 / tiny
	d := 1 / b
	h := d
	for i := 1; i <= maxIter; i++ {
		an := -float64(i) * (float64(i) - a)
		b += 2
		d = an*d + b
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = b + an/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		del := d * c
		h *= del
		if math.Abs(del-1) < eps {
			break
		}
	}
	return prefix * h
}
