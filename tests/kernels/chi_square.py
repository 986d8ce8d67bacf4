"""Chi-square goodness of fit for the sampler tests, without scipy.

The survival function is the regularized upper incomplete gamma Q(dof/2, x/2), computed with the series for
P(a, x) when x < a + 1 and Lentz's continued fraction for Q(a, x) otherwise (Numerical Recipes §6.2,
`gammq`); test_chi_square_helper checks it against the closed forms for 1 and 2 degrees of freedom.
"""

from __future__ import annotations

import math

import numpy as np

ALPHA = 1e-3  # false-alarm rate of every goodness-of-fit test: a correct sampler fails 1 seed in 1000


def chi2_sf(x: float, dof: int) -> float:
    """P(X > x) for X ~ chi-square with `dof` degrees of freedom."""
    if x <= 0:
        return 1.0
    a, y = dof / 2.0, x / 2.0
    log_prefix = -y + a * math.log(y) - math.lgamma(a)
    if y < a + 1.0:
        term = total = 1.0 / a
        k = a
        for _ in range(10_000):
            k += 1.0
            term *= y / k
            total += term
            if abs(term) < abs(total) * 1e-15:
                break
        return max(0.0, 1.0 - total * math.exp(log_prefix))
    tiny = 1e-300
    b = y + 1.0 - a
    c = 1.0 / tiny
    d = 1.0 / b
    h = d
    for i in range(1, 10_000):
        an = -i * (i - a)
        b += 2.0
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return math.exp(log_prefix) * h


def goodness_of_fit(observed: np.ndarray, probs: np.ndarray, min_expected: float = 5.0) -> tuple[float, int, float]:
    """Pearson's statistic of `observed` counts against category probabilities `probs` (summing to 1).
    Categories with probability 0 must have no observations (asserted); categories with an expected count
    below `min_expected` are pooled into one bin. Returns (statistic, degrees of freedom, p-value)."""
    observed = np.asarray(observed, dtype=np.float64)
    probs = np.asarray(probs, dtype=np.float64)
    assert observed[probs == 0].sum() == 0, "a zero-probability category was observed"
    total = observed.sum()
    expected = probs * total
    live = probs > 0
    big = live & (expected >= min_expected)
    obs_bins = list(observed[big])
    exp_bins = list(expected[big])
    small = live & ~big
    if small.any():
        obs_bins.append(observed[small].sum())
        exp_bins.append(expected[small].sum())
    o, e = np.array(obs_bins), np.array(exp_bins)
    stat = float(((o - e) ** 2 / e).sum())
    dof = len(o) - 1
    return stat, dof, chi2_sf(stat, dof)
