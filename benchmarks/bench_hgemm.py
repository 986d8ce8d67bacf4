"""Speed of the HGEMM timing model, measured in one run (targets from the HGEMM issue, 2-core machine).

Usage: python benchmarks/bench_hgemm.py [--shapes 300] [--full]

Prints the median and 90th percentile host time of the timing model (both variants) for random shapes with
M, N, K up to 10000 (target: median <= 5 ms), and with --full the wall time of
`ascendbench run hgemm --workload random-5000` (target: <= 60 s).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

import _checkout  # this checkout's ascendbench, not an installed one
import numpy as np

from ascendbench.hardware import load_profile
from ascendbench.kernels.hgemm import GemmShape, HgemmParams, simulate_hgemm
from ascendbench.workloads import load_workload


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", type=int, default=300)
    ap.add_argument("--full", action="store_true")
    args = ap.parse_args(argv)
    hw = load_profile("atlas-300t-a2")
    shapes = load_workload("random-5000").shapes[: args.shapes]
    ok = True
    for variant in ("proposed", "gemm-example"):
        params = HgemmParams(variant=variant)
        times = []
        for s in shapes:
            t0 = time.perf_counter()
            simulate_hgemm(GemmShape(*s), params, hw)
            times.append(time.perf_counter() - t0)
        med, p90 = np.median(times) * 1e3, np.percentile(times, 90) * 1e3
        ok &= med <= 5
        print(f"timing model, {variant:12s}: median {med:6.2f} ms, p90 {p90:6.2f} ms over {len(shapes)} shapes "
              f"(target median <= 5 ms) {'ok' if med <= 5 else 'MISSED'}")
    if args.full:
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "ascendbench.cli", "run", "hgemm", "--workload", "random-5000",
                               "--no-save"], capture_output=True, text=True, check=False, cwd=_checkout.ROOT)
        wall = time.perf_counter() - t0
        ok &= proc.returncode == 0 and wall <= 60
        print(f"run hgemm --workload random-5000: {wall:.1f} s (target <= 60 s) {'ok' if wall <= 60 else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
