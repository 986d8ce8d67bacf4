"""Evaluators of the scan paper's claims S-13, S-14 and S-15 (paper values and tolerances: claims.toml).

Usage: python -m ascendbench.reference.row_scan_claims [--hardware NAME] [--json]

The simulated values come only from the timing
model. Bandwidth = (input bytes read once + output bytes written once) / time.

Times are compared as the paper measured them: the kernel inside the host window of the wrapper the
profiling script calls (sim/host.py): run_scan_batch for both batched scans (run_seg_sum_single_cube, the
public single-core ScanUL1, takes the same steps: torch_seg_ops.h 291-319), torch.cumsum (an eager op) for
the vector baseline, run_scan_multi_core for S-15's MCScan.
"""

from __future__ import annotations

import sys

from ascendbench.interrupts import run_script
from ascendbench.kernels.batched_scan import BatchedScanParams, simulate_batched
from ascendbench.reference import claims_main
from ascendbench.reference.claims import Outcome, evaluator, module_rows
from ascendbench.reference.scan_claims import window
from ascendbench.sim.host import measured_window, scan_wrapper

HW = "ascend-910b4"
CLAIM_IDS = ("S-13", "S-14", "S-15")
ROW_LENGTH = 65536  # "input length is 65K" (Figure 6.7)
BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)  # the batch sweep (the figure's exact points are not given)
CROSS_BATCHES = (2, 4, 8, 12, 16, 18, 20, 24, 32, 48, 64, 128)
CROSS_LENGTHS = (512, 1024, 2048, 4096, 8192, 16384, 32768, 65536)
CROSSOVER = (18, 4096)  # S-14: batched ScanU vs ScanUL1 cross over at batch 18 and length 4K (B.1, Fig B.2)
INT8_SIZES = tuple(i * 20 * 128 * 128 for i in (1, 2, 5, 10, 20, 50, 100, 305))  # n = i * 20 * s^2, as swept


def batched_time_s(hw, algorithm: str, batch: int, length: int, s: int) -> float:
    """Seconds of one batched scan call as the profiling script times it (kernel + host window)."""
    kernel = simulate_batched(batch, length, BatchedScanParams(algorithm=algorithm, s=s), hw).sim.time_s
    return measured_window(hw, "torch_op" if algorithm == "vector" else scan_wrapper("batched"), kernel).window_s


def batched_bandwidth_gbps(hw, algorithm: str, batch: int, length: int, s: int) -> float:
    return batch * length * (2 + 4) / batched_time_s(hw, algorithm, batch, length, s) / 1e9


def shape_s(length: int) -> int:
    """The tile side for a row length when "both algorithms have the same tiling strategy based on the input
    shapes" (B.1): the smallest s with s^2 >= length, at most 128."""
    return next((s for s in (16, 32, 64) if s * s >= length), 128)


def crossover_grid(hw) -> dict[tuple[int, int], float]:
    """time(ScanUL1) / time(ScanU) of the batched scans per (batch, length), s = shape_s(length) (Figure B.2)."""
    grid = {}
    for b in CROSS_BATCHES:
        for n in CROSS_LENGTHS:
            s = shape_s(n)
            grid[(b, n)] = batched_time_s(hw, "scanul1", b, n, s) / batched_time_s(hw, "scanu", b, n, s)
    return grid


def best_bandwidths(hw) -> tuple[dict[int, float], float]:
    """Best bandwidth (GB/s) over BATCHES of batched ScanU on rows of 65K per s, and of the vector-only
    baseline (Figure 6.7)."""
    best = {s: max(batched_bandwidth_gbps(hw, "scanu", b, ROW_LENGTH, s) for b in BATCHES) for s in (16, 32, 64, 128)}
    base = max(batched_bandwidth_gbps(hw, "vector", b, ROW_LENGTH, 128) for b in BATCHES)
    return best, base


@evaluator("S-13", HW)
def s_13(hw, ctx) -> dict[str, Outcome]:
    best, base = best_bandwidths(hw)
    return {
        "S-13 s=64": Outcome(best[64], detail=f"batch {BATCHES[0]} ... {BATCHES[-1]}"),
        "S-13 s=128": Outcome(best[128], detail=f"batch {BATCHES[0]} ... {BATCHES[-1]}"),
        "S-13 poor": Outcome(f"{best[16]:.0f}, {best[32]:.0f} < {best[64]:.0f}", max(best[16], best[32]) < best[64]),
        "S-13 base": Outcome(best[16] / base, detail=f"baseline best {base:.0f} GB/s"),
    }


@evaluator("S-14", HW)
def s_14(hw, ctx) -> Outcome:
    grid = crossover_grid(hw)
    # ScanU must win where batch > 18 and length < 4K, ScanUL1 where batch < 18 and length > 4K; the crossover
    # may sit anywhere within 2x of 18 and 4K, so only cells beyond that band are judged.
    u_cells = [(b, n) for (b, n) in grid if b > 36 and n < 2048]
    ul1_cells = [(b, n) for (b, n) in grid if b < 9 and n > 8192]
    u_wins = sum(grid[c] > 1 for c in u_cells)
    ul1_wins = sum(grid[c] < 1 for c in ul1_cells)
    anywhere = sum(v > 1 for v in grid.values())
    return Outcome(f"ScanU wins {u_wins}/{len(u_cells)} cells (batch > 36, length < 2K); ScanUL1 {ul1_wins}/"
                   f"{len(ul1_cells)} (batch < 9, length > 8K)",
                   u_wins == len(u_cells) and ul1_wins == len(ul1_cells),
                   f"ScanU wins {anywhere}/{len(grid)} cells overall")


def int8_gains(hw, sizes=INT8_SIZES) -> list[float]:
    """Gelem/s of int8 MCScan / Gelem/s of fp16 MCScan at each n (Figure B.3)."""
    return [window("mcscan", n, hw).window_s / window("mcscan", n, hw, dtype="int8").window_s for n in sizes]


@evaluator("S-15", HW)
def s_15(hw, ctx) -> Outcome:
    gains = int8_gains(hw)
    return Outcome(max(gains), 1.0 <= max(gains) < 1.5, f"at n={INT8_SIZES[-1]:,}: {gains[-1]:.3f}x")


def evaluate(hw) -> list[dict]:
    """One row per claim row (see claims.py)."""
    return module_rows(CLAIM_IDS, hw)


def main(argv=None) -> int:
    return claims_main(argv, "ascendbench.reference.row_scan_claims", __doc__.splitlines()[0], "ascend-910b4", evaluate, 10)


if __name__ == "__main__":
    sys.exit(run_script(main))
