"""Reference for internal/experiment/stats's mean value per user (AnalyzeValues), run by
values_test.go (test-only).

Reads a JSON object {"alpha": a, "control": c, "arms": [[value of each user], ...]} on stdin and
writes, from the users' values themselves, each arm's mean with its normal interval, and each
other arm's Welch comparison with the control: numpy for the means and variances (ddof=1),
scipy.stats.ttest_ind(equal_var=False) for the Welch statistic, scipy.stats.norm for the
quantiles and p-values, Bonferroni over the comparisons.
"""

import json
import math
import sys

import numpy as np
from scipy import stats


def main():
    case = json.load(sys.stdin)
    alpha, control, arms = case["alpha"], case["control"], [np.array(a, dtype=float) for a in case["arms"]]
    m = len(arms) - 1
    z_arm = stats.norm.ppf(1 - alpha / 2)
    z_fam = stats.norm.ppf(1 - alpha / (2 * m))
    out = {"arms": [], "comparisons": []}
    for a in arms:
        mean, se = a.mean(), math.sqrt(a.var(ddof=1) / len(a))
        out["arms"].append({"mean": mean, "lower": mean - z_arm * se, "upper": mean + z_arm * se})
    c = arms[control]
    for i, t in enumerate(arms):
        if i == control:
            continue
        d = t.mean() - c.mean()
        welch = stats.ttest_ind(t, c, equal_var=False)
        se = d / welch.statistic
        p = 2 * stats.norm.sf(abs(welch.statistic))
        out["comparisons"].append({"arm": i, "difference": d, "lower": d - z_fam * se, "upper": d + z_fam * se,
                                   "p": p, "p_adjusted": min(1.0, m * p)})
    json.dump(out, sys.stdout)


main()
