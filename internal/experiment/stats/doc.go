// Package stats computes the results of an experiment from per-arm counts: the click-through
// rate of each arm with its confidence interval, the difference and lift of each arm against the
// control with fixed-horizon and always-valid (sequential) intervals corrected for several arms,
// the sample-ratio-mismatch check, and the verdict. It is pure: no I/O, no clock (the caller
// passes now), no state kept between calls.
//
// # Inputs
//
// Per arm: the configured weight w_i (the weights sum to 1), the unique users exposed n_i and the
// users among them who clicked at least once x_i. The unit of analysis is the user, so the
// click-through rate p_i = x_i/n_i is a proportion and each user is one Bernoulli trial; counting
// impressions instead would make repeat viewers correlated trials and the intervals too narrow.
//
// # Click-through rate: Wilson score interval
//
// With z = Φ⁻¹(1−α/2) (1.959964 for α = 0.05):
//
//	centre = (p + z²/2n) / (1 + z²/n)
//	half   = z/(1 + z²/n) · √(p(1−p)/n + z²/4n²)
//
// Wilson rather than the textbook Wald interval p ± z√(p(1−p)/n): click-through rates are small
// (1–10%) and early samples are small, where Wald's coverage falls well below 95% and its interval
// collapses to a point at 0 or n clicks and can leave [0, 1]; Wilson keeps close to nominal
// coverage there, never leaves [0, 1], and is still a closed form (Brown, Cai and DasGupta,
// "Interval Estimation for a Binomial Proportion", Statistical Science 16(2), 2001). An arm with
// no users gets CTR 0 and the uninformative interval [0, 1].
//
// # Against the control: difference, lift, p-value, Bonferroni
//
// Each of the m = arms−1 other arms t is compared with the control c. With V = p_t(1−p_t)/n_t +
// p_c(1−p_c)/n_c and d = p_t − p_c, the statistic is z = d/√V (the two-proportion z-test with the
// unpooled variance), the p-value 2·Φ̄(|z|), and the fixed-horizon interval of the difference
// d ± z*·√V with z* = Φ⁻¹(1 − α/2m). The unpooled variance is the one the interval uses, so the
// p-value is exactly the one the interval inverts: PAdjusted < α if and only if the interval
// excludes 0, and the page never shows a "significant" p-value beside an interval that straddles
// zero. (The pooled variance of the textbook test differs from it by little once both arms have
// the minimum sample below.)
//
// The lift (p_t − p_c)/p_c gets Fieller's interval for the ratio ρ = p_t/p_c, minus 1: the set
// of ρ with (p_t − ρ·p_c)² ≤ z*²·(V_t + ρ²·V_c), V_i = p_i(1−p_i)/n_i. At ρ = 1 that inequality
// is the z-test above, so the lift interval excludes 0 exactly when the difference interval does
// (a delta-method interval for the lift would not agree at the edge). When the control's own rate
// is not distinguishable from 0 (p_c² ≤ z*²·V_c) the set is unbounded and LiftBounded is false.
//
// Several arms: Bonferroni, every comparison at α/m, so the family of m intervals covers jointly
// with probability ≥ 1−α and PAdjusted = min(1, m·p). Holm–Bonferroni rejects at least as often
// but gives no confidence intervals that agree with its decisions (its compatible intervals are
// the Bonferroni ones for every comparison it does not reject), and the results page shows
// intervals; with at most 8 comparisons Bonferroni's cost is small (z* = 2.24 for two, 2.73 for
// eight, against 1.96 for one).
//
// # Sample-ratio mismatch
//
// Pearson's chi-squared goodness of fit of the unique users per arm against the weights:
// χ² = Σ (n_i − N·w_i)²/(N·w_i), N = Σ n_i, with arms−1 degrees of freedom; P is its upper tail
// Q((arms−1)/2, χ²/2) (the regularized upper incomplete gamma function), and SRM is P < 0.001,
// the threshold peers alarm at: a mismatch means users are lost or moved between arms in a way
// that depends on the arm, and every other number is then suspect.
//
// # Always-valid inference: the mSPRT
//
// A p-value read every day and acted on at the first p < 0.05 gives far more than 5% false
// winners (about 20% with 14 daily looks; see docs/EXPERIMENTS.md). The mixture sequential
// probability ratio test of Johari, Koomen, Pekelis and Walsh ("Always Valid Inference:
// Continuous Monitoring of A/B Tests", Operations Research 70(3), 2022; arXiv:1512.04922) mixes
// the likelihood ratio of the difference over a normal prior θ ~ N(0, τ²). For the estimate d with
// variance V (as above, the Bernoulli variances plugged in) the mixture likelihood ratio against
// θ0 is
//
//	Λ(θ0) = √(V/(V+τ²)) · exp( τ²·(d−θ0)² / (2V(V+τ²)) )
//
// which is the paper's two-sample formula √(2σ²/(2σ²+nτ²))·exp(n²τ²(Ȳ−X̄−θ0)²/(4σ²(2σ²+nτ²)))
// with V = 2σ²/n, written for unequal arms. Since Λ is a nonnegative martingale under θ0, by
// Ville's inequality the probability that it ever exceeds 1/α is at most α, whenever and however
// often it is looked at. The always-valid p-value of a look is min(1, m/Λ(0)) (Bonferroni over
// the m comparisons again) and the confidence interval is the set of θ0 with Λ(θ0) < m/α:
//
//	d ± √( V(V+τ²)/τ² · (2·ln(m/α) + ln((V+τ²)/V)) )
//
// The guarantee covers every look at once, so a winner may be called at the first look whose
// interval excludes 0. (The paper's p-value is the running minimum over looks, and the
// confidence sequence the running intersection; a caller that keeps history may take those, it
// changes no decision of the first-crossing rule.)
//
// τ² (Options.MixingVariance, in squared absolute click-through rate) decides where the test is
// most powerful, never whether it is valid. The interval is narrowest when V ≈ τ²/8.2 (for
// α = 0.05, r = τ²/V solves r = 2·ln(1/α) + ln(1+r)); the default τ² = 1e-4, a prior effect of
// about one percentage point, puts that at about 7,800 users per arm for a 5% click-through rate
// and 1,600 for 1%: the size of a popup experiment that runs for a couple of weeks.
//
// # Verdict
//
// A winner is called only when every arm has at least MinExposed users (default 1,000) and at
// least MinClicks users who clicked and as many who did not (default 30), there is no SRM, and
// the sequential interval excludes 0, or the planned end has passed and the fixed-horizon
// corrected interval excludes 0. With a planned end the two routes share α (each at α/2, a union
// bound), so that stopping at the first winner stays at α; without one the sequential test has α. The minimum sample keeps the normal approximations honest (30
// events: the binomial's skewness 1/√30 ≈ 0.18) and keeps the plug-in variance of the mSPRT from
// resting on the handful of users of the first hours. The winner is the arm with the highest rate
// among those significantly better than the control, or the control when every other arm is
// significantly worse.
package stats
