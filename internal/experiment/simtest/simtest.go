// Package simtest is test-only: what the simulations of experiments share, in the stats
// package's own tests and in the tests that run experiments through the real assignment and the
// real service (the bound a 5% rule's false winners are judged by).
package simtest

import "math"

// BinomialUpper returns the smallest k with P(X > k) ≤ tail for X ~ Binomial(n, p): a rule whose
// true rate is p exceeds k in n trials with probability at most tail, so a count above k says the
// rule's rate is very likely above p.
func BinomialUpper(n int, p, tail float64) int {
	cdf := 0.0
	lg, _ := math.Lgamma(float64(n + 1))
	for k := 0; k <= n; k++ {
		lk, _ := math.Lgamma(float64(k + 1))
		lnk, _ := math.Lgamma(float64(n - k + 1))
		cdf += math.Exp(lg - lk - lnk + float64(k)*math.Log(p) + float64(n-k)*math.Log1p(-p))
		if 1-cdf <= tail {
			return k
		}
	}
	return n
}
