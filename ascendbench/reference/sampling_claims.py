"""Evaluate the scan paper's sampling claims S-16 (top-p) and S-18 (weighted sampling) and print paper vs
simulated.

Usage: python -m ascendbench.reference.sampling_claims [--hardware NAME] [--json]

S-16 (§5.5, §6.5 Fig. 6.8): top-p with radix sort + MCScan scales better with the vocabulary size than the
sort + vector cumsum baseline (one row, vocabularies 2^15 ... 2^24 as the figure's n <= 16M), and runs 17 scans
per fp16 row (16 radix passes + 1 cumsum), counted by the simulated operator. S-18 (B.3): weighted sampling
supports more than 2^24 categories; the baseline multinomial does not. The simulated values come only from the
timing model and the functional sampler.
"""

from __future__ import annotations

import math
import sys

import numpy as np

from ascendbench.kernels.base import ParamError
from ascendbench.kernels.sampling import MULTINOMIAL_MAX_CATEGORIES, simulate_weighted_sample, weighted_sample
from ascendbench.kernels.topp import simulate_top_p
from ascendbench.reference import claims_main

VOCABS = (2**15, 2**17, 2**19, 2**21, 2**23, 2**24)  # the sweep of Fig. 6.8 (n <= 16M), one row


def evaluate(hw) -> list[dict]:
    """One row per claim: id, kind, paper value, simulated value, tolerance, verdict."""
    rows = []

    def row(cid, kind, statement, paper, sim, ok, tolerance):
        rows.append({"id": cid, "kind": kind, "claim": statement, "paper": paper, "simulated": sim,
                     "tolerance": tolerance, "holds": bool(ok)})

    fast = [simulate_top_p(n, hw, variant="radix") for n in VOCABS]
    base = [simulate_top_p(n, hw, variant="baseline") for n in VOCABS]
    growth_fast = fast[-1].sim.time_s / fast[0].sim.time_s
    growth_base = base[-1].sim.time_s / base[0].sim.time_s
    speedups = [b.sim.time_s / f.sim.time_s for f, b in zip(fast, base)]
    row("S-16a", "shape", f"top-p time growth from vocab 2^15 to 2^24: radix + MCScan below the baseline "
        f"(speed-ups {', '.join(f'{x:.1f}x' for x in speedups)})", "radix grows less",
        f"radix {growth_fast:.0f}x, base {growth_base:.0f}x",
        growth_fast < growth_base and all(x > 1 for x in speedups), "ordering")
    scans = {f.scans_per_row for f in fast} | {b.scans_per_row for b in base}
    matmuls_ok = all(f.row.counters["matmuls"] == 17 * math.ceil(n / 128**2) for f, n in zip(fast, VOCABS))
    row("S-16b", "exact", "scans per fp16 row: 16 radix passes + 1 cumsum (counter 'scans'; matmuls = 17 int8/fp16 "
        "MCScans' tiles)", 17, ", ".join(map(str, sorted(scans))), scans == {17} and matmuls_ok, "exact")

    big = MULTINOMIAL_MAX_CATEGORIES + 1
    try:
        simulate_weighted_sample(big, 1, hw, variant="baseline")
        refused = False
    except ParamError:
        refused = True
    scan_ok = simulate_weighted_sample(2 * MULTINOMIAL_MAX_CATEGORIES, 1, hw, variant="scan").sim.time_s > 0
    weights = np.zeros(big + 3, dtype=np.float16)
    weights[[0, big + 2]] = 1  # categories on both sides of 2^24
    draws = weighted_sample(weights, 2000, seed=0)
    functional_ok = set(np.unique(draws).tolist()) == {0, big + 2}
    row("S-18", "exact", "weighted sampling beyond 2^24 categories: the scan sampler runs (simulated at 2^25, "
        "functional at 2^24 + 4), the baseline multinomial refuses 2^24 + 1", "scan yes, baseline no",
        f"scan {'yes' if scan_ok and functional_ok else 'no'}, baseline {'no' if refused else 'yes'}",
        scan_ok and functional_ok and refused, "exact")
    return rows


def main(argv=None) -> int:
    return claims_main(argv, __doc__.splitlines()[0], "ascend-910b4", evaluate, 5)


if __name__ == "__main__":
    sys.exit(main())
