"""Which read rate would reproduce Table 5's GemmExample times (G-9b GE), and what it does to the paper's other
GemmExample rows (G-7c, G-7d).

Usage: python benchmarks/gemm_example_rates.py [--random 300] [--factors 1,0.5,0.35,0.25,0.2,0.15]

The model's GemmExample (CATLASS's basic matmul) on the OPT FFN shapes (N = 28672, K = 7168, 512-byte aligned
rows) is 2.6x (M = 8) and 5.8x (M = 512) faster than the HGEMM paper measured. This script scales, in turn,
(a) both per-core read rates (`gm_read_bytes_per_cycle`, `l2_read_bytes_per_cycle`: MTE2's GM -> L1 loads,
ND2NZ included) and (b) the chip-wide HBM rate (`hbm_efficiency`) of the Atlas 300T A2 profile by each factor,
and prints GemmExample's OPT FFN times beside its mean and best TFLOPS over the first `--random` shapes of
random-5000 (G-7c, G-7d), as `ascendbench validate` evaluates them. It also prints the rate at which the
proposed kernel streams the same B in G-9a M = 8 (paper), the same chip's HBM serving the same matrix.
Nothing is fitted or written. About 10 s on 2 cores with the defaults.
"""

from __future__ import annotations

import argparse

import _checkout  # noqa: F401  (this checkout's ascendbench)
import numpy as np

from ascendbench.commands.common import argparse_count
from ascendbench.hardware import load_profile
from ascendbench.interrupts import run_script
from ascendbench.reference import hgemm_claims
from ascendbench.reference.claims import paper_value
from ascendbench.workloads import load_workload

PAPER_ROWS = ("G-9b GE M=8", "G-9b GE M=512", "G-7c", "G-7d", "G-9a M=8")


def gemm_example_rows(hw, shapes) -> tuple[float, float, float, float]:
    """GemmExample's OPT FFN time at M = 8 and 512 (us), mean and best TFLOPS over `shapes` (G-7c, G-7d)."""
    m8, m512 = (hgemm_claims.time_us(hw, (m, *hgemm_claims.OPT_FFN), variant="gemm-example") for m in (8, 512))
    tflops = np.array([hgemm_claims.random_tflops(hw, s[:3], variant="gemm-example") for s in shapes])
    return m8, m512, float(tflops.mean()), float(tflops.max())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--random", type=argparse_count("random"), default=300,
                    help="shapes of random-5000 for G-7c and G-7d (default 300)")
    ap.add_argument("--factors", default="1,0.5,0.35,0.25,0.2,0.15", help="comma-separated scale factors")
    args = ap.parse_args(argv)
    hw = load_profile("atlas-300t-a2")
    shapes = load_workload("random-5000").shapes[: args.random]
    paper = {row: paper_value(row) for row in PAPER_ROWS}
    b_bytes = hgemm_claims.OPT_FFN[0] * hgemm_claims.OPT_FFN[1] * 2
    print(f"paper: GE M=8 {paper['G-9b GE M=8']:.0f} us, GE M=512 {paper['G-9b GE M=512']:.0f} us, "
          f"G-7c {paper['G-7c']:.2f} TFLOPS, G-7d {paper['G-7d']:.1f} TFLOPS over random shapes")
    print(f"paper: the proposed kernel reads the same B ({b_bytes / 1e6:.0f} MB) in G-9a M=8's "
          f"{paper['G-9a M=8']:.1f} us: at least {b_bytes / paper['G-9a M=8'] / 1e3:.0f} GB/s from HBM")
    print(f"{'scaled':<28} {'factor':>6} {'GE M=8 us':>10} {'GE M=512 us':>12} {'mean TFLOPS (G-7c)':>19} "
          f"{'best TFLOPS (G-7d)':>19}")
    for what, keys in (("per-core read rates", ("gm_read_bytes_per_cycle", "l2_read_bytes_per_cycle")),
                       ("HBM rate (hbm_efficiency)", ("hbm_efficiency",))):
        for factor in (float(f) for f in args.factors.split(",")):
            scaled = hw.replace(**{key: getattr(hw, key) * factor for key in keys})
            m8, m512, mean, best = gemm_example_rows(scaled, shapes)
            print(f"{what:<28} {factor:>6.2f} {m8:>10.0f} {m512:>12.0f} {mean:>19.1f} {best:>19.1f}", flush=True)
    return 0


if __name__ == "__main__":
    run_script(main)
