"""Evaluators of the scan paper's sampling claims S-16 (top-p) and S-18 (weighted sampling); paper values:
claims.toml.

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

from ascendbench.interrupts import run_script
from ascendbench.kernels.base import ParamError
from ascendbench.kernels.sampling import MULTINOMIAL_MAX_CATEGORIES, simulate_weighted_sample, weighted_sample
from ascendbench.kernels.topp import simulate_top_p
from ascendbench.reference import claims_main
from ascendbench.reference.claims import Outcome, evaluator, module_rows, paper_value

HW = "ascend-910b4"
CLAIM_IDS = ("S-16", "S-18")
VOCABS = (2**15, 2**17, 2**19, 2**21, 2**23, 2**24)  # the sweep of Fig. 6.8 (n <= 16M), one row


def top_p_times(hw, vocabs=VOCABS) -> tuple[list, list]:
    """Simulated top-p runs (radix + MCScan, and the sort + vector cumsum baseline) per vocabulary size."""
    return ([simulate_top_p(n, hw, variant="radix") for n in vocabs],
            [simulate_top_p(n, hw, variant="baseline") for n in vocabs])


@evaluator("S-16", HW)
def s_16(hw, ctx) -> dict[str, Outcome]:
    fast, base = top_p_times(hw)
    growth_fast = fast[-1].sim.time_s / fast[0].sim.time_s
    growth_base = base[-1].sim.time_s / base[0].sim.time_s
    speedups = [b.sim.time_s / f.sim.time_s for f, b in zip(fast, base)]
    scans = {f.scans_per_row for f in fast} | {b.scans_per_row for b in base}
    expected = paper_value("S-16b")
    matmuls_ok = all(f.row.counters["matmuls"] == expected * math.ceil(n / 128**2) for f, n in zip(fast, VOCABS))
    return {
        "S-16a": Outcome(f"radix {growth_fast:.0f}x, base {growth_base:.0f}x",
                         growth_fast < growth_base and all(x > 1 for x in speedups),
                         "speed-ups " + ", ".join(f"{x:.1f}x" for x in speedups)),
        "S-16b": Outcome(", ".join(map(str, sorted(scans))), scans == {expected} and matmuls_ok,
                         "counter 'scans'; matmuls = 17 MCScans' tiles"),
    }


@evaluator("S-18", HW)
def s_18(hw, ctx) -> Outcome:
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
    return Outcome(f"scan {'yes' if scan_ok and functional_ok else 'no'}, baseline {'no' if refused else 'yes'}",
                   scan_ok and functional_ok and refused,
                   "simulated at 2^25, functional at 2^24 + 4; baseline asked for 2^24 + 1")


def evaluate(hw) -> list[dict]:
    """One row per claim row (see claims.py)."""
    return module_rows(CLAIM_IDS, hw)


def main(argv=None) -> int:
    return claims_main(argv, "ascendbench.reference.sampling_claims", __doc__.splitlines()[0], "ascend-910b4", evaluate, 5)


if __name__ == "__main__":
    sys.exit(run_script(main))
