"""Speed of the HGEMM timing model, measured in one run (targets from the HGEMM issue, 2-core machine).

Usage: python benchmarks/bench_hgemm.py [--shapes 300] [--full]

Prints the median and 90th percentile host CPU time (time.process_time, so that other work on a shared
machine counts less) of the timing model for both variants, on the first random-5000 shapes (M, N, K up to
10000), two ways:
- in workload order: each shape once, in order, as `run hgemm --workload` does; truncated runs measured for
  an earlier shape with the same program are looked up (kernels.hgemm.RUN_CACHE). Target: median <= 5 ms.
- cold: the run cache cleared before each shape, best of 3 repetitions (a single shape on its own).
  Target (the tuner's issue): median <= 1 ms.
With --full, also the wall time of `ascendbench run hgemm --workload random-5000` (target: <= 60 s).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

import _checkout  # this checkout's ascendbench, not an installed one
import numpy as np

from ascendbench.commands.common import argparse_count
from ascendbench.hardware import load_profile
from ascendbench.interrupts import run_script
from ascendbench.kernels.hgemm import RUN_CACHE, GemmShape, HgemmParams, simulate_hgemm
from ascendbench.workloads import load_workload


def _cpu_ms(shape: GemmShape, params: HgemmParams, hw, repeats: int, cold: bool) -> float:
    best = float("inf")
    for _ in range(repeats):
        if cold:
            RUN_CACHE.clear()
        t0 = time.process_time()
        simulate_hgemm(shape, params, hw)
        best = min(best, time.process_time() - t0)
    return best * 1e3


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", type=argparse_count("shapes"), default=300)
    ap.add_argument("--full", action="store_true")
    args = ap.parse_args(argv)
    hw = load_profile("atlas-300t-a2")
    shapes = [GemmShape(*s) for s in load_workload("random-5000").shapes[: args.shapes]]
    ok = True
    for variant in ("proposed", "gemm-example"):
        params = HgemmParams(variant=variant)
        RUN_CACHE.clear()
        ordered = [_cpu_ms(s, params, hw, 1, cold=False) for s in shapes]
        hits = RUN_CACHE.hits / max(1, RUN_CACHE.hits + RUN_CACHE.misses)
        cold = [_cpu_ms(s, params, hw, 3, cold=True) for s in shapes]
        med = float(np.median(ordered))
        ok &= med <= 5
        print(f"timing model, {variant:12s}: in workload order median {med:6.2f} ms, p90 "
              f"{np.percentile(ordered, 90):6.2f} ms (run cache hits {hits:.0%}; target median <= 5 ms) "
              f"{'ok' if med <= 5 else 'MISSED'}")
        cold_ok = float(np.median(cold)) <= 1
        ok &= cold_ok
        print(f"timing model, {variant:12s}: cold              median {np.median(cold):6.2f} ms, p90 "
              f"{np.percentile(cold, 90):6.2f} ms (over {len(shapes)} shapes, CPU time; target median <= 1 ms) "
              f"{'ok' if cold_ok else 'MISSED'}")
    if args.full:
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "ascendbench.cli", "run", "hgemm", "--workload", "random-5000",
                               "--no-save"], capture_output=True, text=True, check=False, cwd=_checkout.ROOT)
        wall = time.perf_counter() - t0
        ok &= proc.returncode == 0 and wall <= 60
        print(f"run hgemm --workload random-5000: {wall:.1f} s (target <= 60 s) {'ok' if wall <= 60 else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(run_script(main))
