"""Evaluators of the scan paper's operator claims S-10, S-11, S-12, S-17 (paper values: claims.toml).

Usage: python -m ascendbench.reference.operator_claims [--hardware NAME] [--json]

Simulated values come only from the timing model. Sizes follow
the paper's sweeps: n = i * 20 * s^2 for s = 128 (327,680 ... 99,942,400). Compress bandwidth counts values and
mask read once and the selected values written once.

The sort claims (S-11, S-12) compare times as the profiling script takes them: the kernel inside the host
window of its wrapper (sim/host.py: run_radix_sort for the MCScan radix sort, torch.sort as an eager op for the
baseline). S-10 and S-17 still compare kernel times.
"""

from __future__ import annotations

import sys

from ascendbench.interrupts import run_script
from ascendbench.kernels.radix_sort import simulate_radix_sort
from ascendbench.kernels.split import simulate_compress
from ascendbench.kernels.topk import simulate_topk
from ascendbench.reference import claims_main
from ascendbench.reference.claims import Outcome, evaluator, module_rows
from ascendbench.sim.host import measured_window

HW = "ascend-910b4"
CLAIM_IDS = ("S-10", "S-11", "S-12", "S-17")
STEP = 20 * 128 * 128  # 327,680
SWEEP = [i * STEP for i in (1, 2, 4, 8, 16, 32, 61, 122, 183, 244, 305)]


def compress_sweep(hw) -> list[tuple[int, float, float]]:
    """(n, compress bandwidth GB/s, scalar masked_select time / compress time) over SWEEP, fp16, half the mask
    true."""
    out = []
    for n in SWEEP:
        fast = simulate_compress(n, "fp16", hw)
        slow = simulate_compress(n, "fp16", hw, variant="scalar")
        out.append((n, (n * 3 + (n // 2) * 2) / fast.time_s / 1e9, slow.time_s / fast.time_s))
    return out


@evaluator("S-10", HW)
def s_10(hw, ctx) -> dict[str, Outcome]:
    sweep = compress_sweep(hw)
    best_n, best, _ = max(sweep, key=lambda r: r[1])
    worst = min(r[2] for r in sweep)
    return {"S-10": Outcome(best, detail=f"at n={best_n:,}"),
            "S-10b": Outcome(worst, worst > 1, f"{len(sweep)} sizes {SWEEP[0]:,} ... {SWEEP[-1]:,}")}


def sort_time_s(hw, n: int, **options) -> float:
    """Seconds of one fp16 sort call as timed: run_radix_sort's host window (torch.sort's for the vector-only
    baseline, variant="vector") around the kernel."""
    wrapper = "torch_op" if options.get("variant") == "vector" else "run_radix_sort"
    return measured_window(hw, wrapper, simulate_radix_sort(n, "fp16", hw, **options).time_s).window_s


def sort_speedups(hw, sizes) -> dict[int, float]:
    """fp16 radix sort with indices: time of the vector-only baseline / time of the MCScan radix sort, per n."""
    return {n: sort_time_s(hw, n, variant="vector") / sort_time_s(hw, n) for n in sizes}


@evaluator("S-11", HW)
def s_11(hw, ctx) -> Outcome:
    ratios = sort_speedups(hw, [n for n in SWEEP if n > 525_000][:8])
    return Outcome([min(ratios.values()), max(ratios.values())], detail=f"n in {min(ratios):,}..{max(ratios):,}")


S12_N = 61 * STEP


@evaluator("S-12", HW)
def s_12(hw, ctx) -> dict[str, Outcome]:
    # the paper's B.5 estimate: fewer passes, keys still read and written as 16-bit
    t16 = sort_time_s(hw, S12_N)
    return {f"S-12{'a' if p == 8 else 'b'}": Outcome(t16 / sort_time_s(hw, S12_N, passes=p), detail=f"fp16, n={S12_N:,}")
            for p in (8, 4)}


@evaluator("S-17", HW)
def s_17(hw, ctx) -> Outcome:
    wins = []
    for n in (STEP, 16 * STEP, 61 * STEP):
        for k in (16, 256, 2048, 4096):
            fast = simulate_topk(n, k, "fp16", hw).time_s
            base = simulate_topk(n, k, "fp16", hw, variant="vector").time_s
            wins.append(base / fast)
    return Outcome(max(wins), max(wins) <= 1.0, "n in 327,680 ... 19,988,480, k in 16 ... 4096")


def evaluate(hw) -> list[dict]:
    """One row per claim row (see claims.py)."""
    return module_rows(CLAIM_IDS, hw)


def main(argv=None) -> int:
    return claims_main(argv, "ascendbench.reference.operator_claims", __doc__.splitlines()[0], "ascend-910b4", evaluate, 6)


if __name__ == "__main__":
    sys.exit(run_script(main))
