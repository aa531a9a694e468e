"""Reference computation for internal/experiment/stats, run by reference_test.go (test-only).

Reads a JSON list of cases on stdin, writes a JSON list of results on stdout. Every number is
computed here from the published formulas with scipy's distribution functions and root finders,
independently of the Go algebra: the Wilson bounds with norm.ppf, the z-test p-value with
norm.sf, the sample-ratio p-value with scipy.stats.chisquare, Fieller's lift interval and the
mSPRT interval by root-finding the defining inequality (brentq) rather than by the closed forms
the Go code uses, the mSPRT likelihood ratio by Johari et al.'s formula.

Run it with the project's venv (scripts/venv.sh): .venv/bin/python reference.py < cases.json
"""

import json
import math
import sys

from scipy import optimize, stats


def wilson(n, x, z):
    if n == 0:
        return 0.0, 1.0
    p = x / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z / denom * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def expand(f, start, step, sign):
    """The first point start + sign*step*2^k where f > 0 (f(start) < 0)."""
    x = start + sign * step
    while f(x) <= 0:
        step *= 2
        x = start + sign * step
    return x


def fieller(pt, pc, vt, vc, z):
    """The ratio rho with (pt - rho*pc)^2 <= z^2 (vt + rho^2 vc), minus 1, by root finding."""
    if pc * pc - z * z * vc <= 0:
        return None
    f = lambda rho: (pt - rho * pc) ** 2 - z * z * (vt + rho * rho * vc)
    r = pt / pc  # f(r) = -z^2(...) <= 0
    if f(r) == 0:
        return r - 1, r - 1
    lo = optimize.brentq(f, expand(f, r, 1.0, -1), r, xtol=1e-15, rtol=1e-15)
    hi = optimize.brentq(f, r, expand(f, r, 1.0, +1), xtol=1e-15, rtol=1e-15)
    return lo - 1, hi - 1


def msprt_lambda(d, theta0, v, tau2):
    """Johari et al.'s two-sample mixture likelihood ratio,
    sqrt(2s^2/(2s^2+n tau^2)) exp(n^2 tau^2 (Ybar-Xbar-theta0)^2 / (4 s^2 (2s^2 + n tau^2))),
    written with V = 2 s^2/n, the variance of the difference of means (n = 1, 2 s^2 = V)."""
    two_s2, n = v, 1.0
    return math.sqrt(two_s2 / (two_s2 + n * tau2)) * math.exp(
        n * n * tau2 * (d - theta0) ** 2 / (2 * two_s2 * (two_s2 + n * tau2)))


def msprt(d, v, tau2, alpha, m):
    lam0 = msprt_lambda(d, 0.0, v, tau2)
    p = min(1.0, m / lam0)
    # The interval {theta : Lambda(theta) < m/alpha}, found by root finding in log space.
    g = lambda theta: math.log(msprt_lambda(d, theta, v, tau2)) - math.log(m / alpha)
    step = math.sqrt(v)
    lo = optimize.brentq(g, expand(g, d, step, -1), d, xtol=1e-15, rtol=1e-15)
    hi = optimize.brentq(g, d, expand(g, d, step, +1), xtol=1e-15, rtol=1e-15)
    return p, lo, hi


def analyze(case):
    arms, control = case["arms"], case["control"]
    alpha, tau2 = case["alpha"], case["tau2"]
    z_arm = stats.norm.ppf(1 - alpha / 2)
    out = {"arms": [], "comparisons": []}
    for a in arms:
        n, x = a["exposed"], a["clicked"]
        lo, hi = wilson(n, x, z_arm)
        out["arms"].append({"ctr": x / n if n else 0.0, "lower": lo, "upper": hi})
    m = len(arms) - 1
    if m > 0:
        z = stats.norm.ppf(1 - alpha / (2 * m))
        c = arms[control]
        pc = c["clicked"] / c["exposed"]
        vc = pc * (1 - pc) / c["exposed"]
        for i, t in enumerate(arms):
            if i == control:
                continue
            pt = t["clicked"] / t["exposed"]
            vt = pt * (1 - pt) / t["exposed"]
            d, v = pt - pc, vt + vc
            zs = d / math.sqrt(v)
            p = 2 * stats.norm.sf(abs(zs))
            seq_p, seq_lo, seq_hi = msprt(d, v, tau2, alpha, m)
            cmp = {
                "arm": i, "difference": d, "z": zs, "p": p, "p_adjusted": min(1.0, m * p),
                "diff_lower": d - z * math.sqrt(v), "diff_upper": d + z * math.sqrt(v),
                "lift": d / pc if pc > 0 else None,
                "seq_p": seq_p, "seq_lower": seq_lo, "seq_upper": seq_hi,
            }
            lift = fieller(pt, pc, vt, vc, z)
            cmp["lift_lower"], cmp["lift_upper"] = lift if lift else (None, None)
            out["comparisons"].append(cmp)
    exposed = [a["exposed"] for a in arms]
    total = sum(exposed)
    if m == 0 or total == 0:
        out["srm"] = {"chi2": 0.0, "df": m, "p": 1.0}
    else:
        res = stats.chisquare(exposed, [total * a["weight"] for a in arms])
        out["srm"] = {"chi2": float(res.statistic), "df": m, "p": float(res.pvalue)}
    return out


def main():
    cases = json.load(sys.stdin)
    json.dump([analyze(c) for c in cases], sys.stdout)


if __name__ == "__main__":
    main()
