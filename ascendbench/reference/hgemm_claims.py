"""Evaluate the HGEMM paper's claims G-1 ... G-11 with the simulator and print paper vs simulated.

Usage: python -m ascendbench.reference.hgemm_claims [--random N] [--json]

--random N evaluates G-7 on the first N shapes of the seeded random-5000 workload (default: all 5000; a
full run takes a few minutes on 2 cores). Simulated values come only from the timing model and the selector.
TFLOPS = 2 M N K / time / 1e12. alpha = beta = 0.5 (the paper draws them in [-1, 1]; C is read).
"""

from __future__ import annotations

import itertools
import sys

import numpy as np

from ascendbench.kernels.hgemm import GemmShape, HgemmParams, resolve_tiling, simulate_hgemm
from ascendbench.kernels.hgemm_tiling import TABLE_1, TABLE_2, acc_loop, aicore_num, select_tiling
from ascendbench.reference import claims_main
from ascendbench.sim.engine import BufferCapacityError
from ascendbench.workloads import load_workload

PAPER_OPT_PROPOSED_US = {8: 550.90, 16: 511.33, 32: 503.34, 64: 502.37, 128: 502.40, 256: 532.67, 512: 862.50}
PAPER_OPT_GEMM_EXAMPLE_US = {8: 1292.42, 16: 1333.13, 32: 1417.23, 64: 1333.62, 128: 1489.37, 256: 2852.70,
                             512: 5617.02}


def tflops(hw, shape: tuple, **options) -> float:
    g = GemmShape(*shape)
    return g.flops / simulate_hgemm(g, HgemmParams(alpha=0.5, beta=0.5, **options), hw)[0].time_s / 1e12


def time_us(hw, shape: tuple, **options) -> float:
    return simulate_hgemm(GemmShape(*shape), HgemmParams(alpha=0.5, beta=0.5, **options), hw)[0].time_s * 1e6


# §4.2.2-§4.2.3 measured Figs 4-6 "with all optimization strategies disabled": block-wise pipelining (double
# buffering, §4.3.1), ShuffleK and SplitK off; padding off too.
OFF = {"shuffle_k": False, "padding": False, "double_buffer": False}


def candidates(hw, shape: tuple) -> list[tuple[float, tuple[int, int, int]]]:
    """TFLOPS of every Table 1 x Table 2 tiling that fits (optimisations off, as for Fig 6)."""
    out = []
    for k0, mn_max in TABLE_2.values():
        for index_mn, (m0, n0) in TABLE_1.items():
            if index_mn <= mn_max:
                try:
                    out.append((tflops(hw, shape, m0=m0, n0=n0, k0=k0, **OFF), (m0, n0, k0)))
                except BufferCapacityError:
                    pass
    return sorted(out)


def evaluate(hw, random_count: int = 5000) -> list[dict]:
    rows = []

    def row(cid, kind, statement, paper, sim, ok, tolerance):
        rows.append({"id": cid, "kind": kind, "claim": statement, "paper": paper, "simulated": sim,
                     "tolerance": tolerance, "holds": bool(ok)})

    d = select_tiling(2048, 128, 2048, 1, hw.ai_cores)
    row("G-1", "exact", "selector 2048x128x2048 -> M0xN0xK0", "128x128x256", d.tile, d.tile == "128x128x256", "exact")
    g2 = (aicore_num(256, 4096, 128, 512, 8), acc_loop(512, 64))
    row("G-2", "exact", "aicore_num, acc_loop of 256x4096x512, tile 128x512x64, 8 batches", "128, 8",
        f"{g2[0]}, {g2[1]}", g2 == (128, 8), "exact")
    d3 = select_tiling(10000, 10000, 10000, 1, hw.ai_cores)
    row("G-3", "exact", "no K0 admits a tiling -> fallback", "256x128x128", f"{d3.tile} ({d3.source})",
        d3.tile == "256x128x128" and d3.source == "fallback", "exact")

    small = {s: [tflops(hw, (s, s, s), m0=m0, n0=n0, k0=8, **OFF) for m0, n0 in TABLE_1.values()]
             for s in (128, 256, 1024, 2048)}
    spread_small = max(max(v) / min(v) for s, v in small.items() if s <= 256)
    gap_large = min(max(v[2:]) / max(v[:2]) for s, v in small.items() if s > 256)
    row("G-4", "shape", "K0=8: for M=N=K > 256 M0/N0 of 16, 32 much slower; <= 256 tiling barely matters",
        "ordering", f"large: best/small-tile >= {gap_large:.1f}x; small: spread {spread_small:.1f}x",
        gap_large >= 2 and gap_large > spread_small, "larger tiles >= 2x faster above 256, less spread below")

    curve = [tflops(hw, (2048, 2048, 2048), m0=32, n0=32, k0=k0, **OFF)
             for k0 in (8, 16, 32, 64, 128, 256, 512)]
    monotone = all(b >= a * 0.99 for a, b in itertools.pairwise(curve)) and curve[-1] > curve[0]
    row("G-5", "shape", "M0=N0=32, M=N=K=2048: TFLOPS rise with K0 8 -> 512", "monotone",
        " ".join(f"{v:.0f}" for v in curve), monotone, "non-decreasing (1%), rising overall")

    ratios = []
    for shape in load_workload("fig6").shapes:
        cands = candidates(hw, shape[:3])
        chosen = resolve_tiling(GemmShape(*shape[:3]), HgemmParams(), hw)
        sel = tflops(hw, shape[:3], **OFF)
        ratios.append(sel / cands[-1][0])
        _ = chosen
    row("G-6", "shape", "fig6 shapes: the selector's tiling is the best candidate", "within 5% of best",
        " ".join(f"{r:.3f}" for r in ratios), min(ratios) >= 0.95, "selector >= 0.95 x best")

    shapes = load_workload("random-5000").shapes[:random_count]
    proposed = np.array([tflops(hw, s[:3]) for s in shapes])
    example = np.array([tflops(hw, s[:3], variant="gemm-example") for s in shapes])
    for cid, what, paper, sim in (
        ("G-7a", "random: proposed avg TFLOPS", 182.62, proposed.mean()),
        ("G-7b", "random: proposed max TFLOPS", 259.19, proposed.max()),
        ("G-7c", "random: gemm-example avg TFLOPS", 51.25, example.mean()),
        ("G-7d", "random: gemm-example max TFLOPS", 69.10, example.max()),
        ("G-7e", "random: avg speed-up over gemm-example", 3.56, float(np.mean(proposed / example))),
    ):
        row(cid, "validation", what + f" ({len(shapes)} shapes)", paper, float(sim), abs(sim / paper - 1) <= 0.25,
            "±25%")

    hpl = np.array([tflops(hw, s[:3]) for s in load_workload("hpl-mxp").shapes])
    row("G-8a", "calibration", "HPL-MxP max TFLOPS (not fitted: see README)", 255.57, float(hpl.max()),
        abs(hpl.max() / 255.57 - 1) <= 0.15, "±15%")
    row("G-8b", "calibration", "HPL-MxP avg TFLOPS (not fitted)", 187.35, float(hpl.mean()),
        abs(hpl.mean() / 187.35 - 1) <= 0.15, "±15%")
    for m in (8, 512):
        t = time_us(hw, (m, 28672, 7168))
        row(f"G-9a M={m}", "calibration", f"OPT FFN M={m} time (us, fitted)", PAPER_OPT_PROPOSED_US[m], t,
            abs(t / PAPER_OPT_PROPOSED_US[m] - 1) <= 0.15, "±15%")
    for m in (16, 32, 64, 128, 256):
        t = time_us(hw, (m, 28672, 7168))
        row(f"G-9b M={m}", "validation", f"OPT FFN M={m} time (us)", PAPER_OPT_PROPOSED_US[m], t,
            abs(t / PAPER_OPT_PROPOSED_US[m] - 1) <= 0.25, "±25%")
    for m in (8, 512):
        t = time_us(hw, (m, 28672, 7168), variant="gemm-example")
        row(f"G-9b GE M={m}", "validation", f"OPT FFN M={m} gemm-example time (us)", PAPER_OPT_GEMM_EXAMPLE_US[m], t,
            abs(t / PAPER_OPT_GEMM_EXAMPLE_US[m] - 1) <= 0.25, "±25%")

    near = [s for base in (2048, 4096) for s in range(base - 8, base + 9)]
    on = np.array([tflops(hw, (s, s, s)) for s in near])
    off = np.array([tflops(hw, (s, s, s), padding=False) for s in near])
    cv_on, cv_off = on.std() / on.mean(), off.std() / off.mean()
    row("G-10", "shape", "padding lowers the spread of TFLOPS across aligned and non-aligned shapes",
        "cv(padding) < cv(none)", f"cv {cv_on:.3f} vs {cv_off:.3f}", cv_on < cv_off, "ordering")

    # ShuffleK: the serialised same-range bytes drop and the time does not grow; SplitK: faster when the
    # blocks of C leave cores idle (the selector's tiles for 512x256x2048; 128x128x256 tiles on thin shapes).
    def run(shape, **options):
        g = GemmShape(*shape)
        sim = simulate_hgemm(g, HgemmParams(alpha=0.5, beta=0.5, **options), hw)[0]
        return g.flops / sim.time_s / 1e12, sim.counters.get("bytes_serialised", 0.0)

    shuffle = [(run(s), run(s, shuffle_k=False)) for s in ((4096, 4096, 4096), (1024, 1024, 1024))]
    tile = {"m0": 128, "n0": 128, "k0": 256}
    splitk = [(run((512, 256, 2048), split_k=4)[0], run((512, 256, 2048))[0]),
              (run((256, 256, 8192), split_k=4, **tile)[0], run((256, 256, 8192), **tile)[0])]
    ok = all(on[1] < off[1] and on[0] >= off[0] * 0.999 for on, off in shuffle) and all(a > b for a, b in splitk)
    row("G-11", "shape", "ShuffleK removes serialised same-512-byte reads; SplitK faster for small matrices",
        "ordering", "serialised MB " + ", ".join(f"{on[1] / 1e6:.1f} vs {off[1] / 1e6:.1f}" for on, off in shuffle)
        + "; SplitK=4 TFLOPS " + ", ".join(f"{a:.0f} > {b:.0f}" for a, b in splitk), ok, "ordering")
    return rows


def main(argv=None) -> int:
    def extra(ap):
        ap.add_argument("--random", dest="random_count", type=int, default=5000, help="shapes of random-5000 for G-7")

    return claims_main(argv, __doc__.splitlines()[0], "atlas-300t-a2", evaluate, 13, extra)


if __name__ == "__main__":
    sys.exit(main())
