"""Evaluators of the scan paper's claims S-W1 and S-1 ... S-9 (paper values and tolerances: claims.toml).

Usage: python -m ascendbench.reference.scan_claims [--hardware NAME] [--json]
(or `ascendbench validate --only S-1,S-2,...`). The simulated values come only from the timing model.
Bandwidth = (input bytes read once + output bytes written once) / time.

Times are compared as the paper measured them: the simulated kernel inside the host window of the wrapper the
profiling script calls (sim/host.py: head + kernel + tail); phase ratios (S-9) are kernel phases.
"""

from __future__ import annotations

import sys

from ascendbench.interrupts import run_script
from ascendbench.kernels import SCAN_KERNELS, ScanParams, expected_matmuls
from ascendbench.reference import claims_main
from ascendbench.reference.claims import Outcome, evaluator, module_rows
from ascendbench.sim.host import measured_window, scan_wrapper

HW = "ascend-910b4"
CLAIM_IDS = ("S-W1", "S-1", "S-2", "S-3", "S-4", "S-5", "S-6", "S-7", "S-8", "S-9")
# Large sizes as the paper swept them: n = i * 20 * s^2 (no padding pass).
N_SINGLE = 100 * 20 * 128 * 128  # 32,768,000
N_MULTI = 305 * 20 * 128 * 128  # 99,942,400, the largest point of the paper's sweep


def simulate(kernel: str, n: int, hw, **params):
    return SCAN_KERNELS[kernel].simulate(n, ScanParams(**params), hw)


def time_s(kernel: str, n: int, hw, **params) -> float:
    """Seconds as the profiling script times one call: the kernel inside its wrapper's host window."""
    return window(kernel, n, hw, **params).window_s


def window(kernel: str, n: int, hw, **params):
    """The MeasuredWindow of one call of `kernel` on n elements (kernel time and host steps separately)."""
    return measured_window(hw, scan_wrapper(kernel, params.get("chunk")), simulate(kernel, n, hw, **params).time_s)


def bandwidth_gbps(kernel: str, n: int, hw, **params) -> float:
    p = ScanParams(**params)
    return n * (p.in_bytes + p.out_bytes) / time_s(kernel, n, hw, **params) / 1e9


def _sim(ctx, hw, kernel: str, n: int, **params):
    """One simulation per (kernel, n, parameters) in a validate run, shared by every claim that needs it."""
    key = ("scan sim", hw.name, kernel, n, tuple(sorted(ScanParams(**params).to_dict().items())))
    return ctx.memo(key, lambda: simulate(kernel, n, hw, **params))


def _window(ctx, hw, kernel: str, n: int, **params):
    return measured_window(hw, scan_wrapper(kernel, params.get("chunk")), _sim(ctx, hw, kernel, n, **params).time_s)


def _time(ctx, hw, kernel: str, n: int, **params) -> float:
    return _window(ctx, hw, kernel, n, **params).window_s


@evaluator("S-W1", HW)
def s_w1(hw, ctx) -> Outcome:
    """Matmul counters of ScanU, ScanUL1, MCScan equal the closed forms for s = 16..128 and awkward n."""
    ok = all(
        simulate(k, n, hw, s=s).counters.get("matmuls", 0) == expected_matmuls(k, n, s)
        for k in ("scanu", "scanul1", "mcscan") for s in (16, 32, 64, 128) for n in (1, s * s, s * s + 1, 10**6 + 7)
    )
    return Outcome("equal" if ok else "differs", ok, "48 cases: 3 kernels x s 16..128 x 4 sizes")


@evaluator("S-1", HW)
def s_1(hw, ctx) -> Outcome:
    return Outcome(_time(ctx, hw, "vec-cumsum", N_SINGLE) / _time(ctx, hw, "scanu", N_SINGLE), detail=f"n={N_SINGLE:,}")


@evaluator("S-2", HW)
def s_2(hw, ctx) -> Outcome:
    return Outcome(_time(ctx, hw, "vec-cumsum", N_SINGLE) / _time(ctx, hw, "scanul1", N_SINGLE),
                   detail=f"n={N_SINGLE:,}")


@evaluator("S-3", HW)
def s_3(hw, ctx) -> Outcome:
    return Outcome(_time(ctx, hw, "scanu", N_SINGLE) / _time(ctx, hw, "scanul1", N_SINGLE), detail=f"n={N_SINGLE:,}")


def _mcscan_bandwidths(ctx, hw) -> dict[int, float]:
    """MCScan bandwidth (GB/s, as timed) at n = 99,942,400 for s = 32, 64, 128."""
    return {s: N_MULTI * 6 / _time(ctx, hw, "mcscan", N_MULTI, s=s) / 1e9 for s in (32, 64, 128)}


@evaluator("S-4", HW)
def s_4(hw, ctx) -> Outcome:
    bw = _mcscan_bandwidths(ctx, hw)
    w = _window(ctx, hw, "mcscan", N_MULTI)
    return Outcome(bw[128] / hw.hbm_bandwidth_gbps,
                   detail=(f"{bw[128]:.0f} GB/s at n={N_MULTI:,} as timed (kernel {w.kernel_s * 1e6:.1f} us, "
                           f"host window {w.host_s * 1e6:.1f} us)"))


@evaluator("S-5", HW)
def s_5(hw, ctx) -> Outcome:
    bw = _mcscan_bandwidths(ctx, hw)
    return Outcome(f"{bw[128]:.0f} > {bw[64]:.0f} > {bw[32]:.0f}", bw[128] > bw[64] > bw[32])


@evaluator("S-6", HW)
def s_6(hw, ctx) -> Outcome:
    return Outcome(_time(ctx, hw, "scanu", N_MULTI) / _time(ctx, hw, "mcscan", N_MULTI), detail=f"n={N_MULTI:,}")


@evaluator("S-7", HW)
def s_7(hw, ctx) -> Outcome:
    split, whole = _window(ctx, hw, "mcscan", N_MULTI), _window(ctx, hw, "mcscan", N_MULTI, chunk=0)
    return Outcome(whole.window_s / split.window_s - 1,
                   detail=(f"n={N_MULTI:,}; kernel {split.kernel_s * 1e6:.1f} us split, {whole.kernel_s * 1e6:.1f} us "
                           f"not; host window {split.host_s * 1e6:.1f} and {whole.host_s * 1e6:.1f} us"))


@evaluator("S-8", HW)
def s_8(hw, ctx) -> dict[str, Outcome]:
    mc, ul1 = _time(ctx, hw, "mcscan", N_MULTI), _time(ctx, hw, "mcscan-ul1", N_MULTI)
    # the paper's reference is torch.clone of the fp16 input: 2 bytes read and 2 written per element
    clone = _time(ctx, hw, "memcpy", N_MULTI, out_dtype="fp16")
    ul1_bw, clone_bw = N_MULTI * 6 / ul1 / 1e9, N_MULTI * 4 / clone / 1e9
    return {"S-8a": Outcome(mc / ul1, detail=f"n={N_MULTI:,}"),
            "S-8b": Outcome(ul1_bw / clone_bw, detail=f"{ul1_bw:.0f} GB/s against an fp16 clone at {clone_bw:.0f} GB/s")}


@evaluator("S-9", HW)
def s_9(hw, ctx) -> Outcome:
    mc, ul1 = _sim(ctx, hw, "mcscan", N_MULTI), _sim(ctx, hw, "mcscan-ul1", N_MULTI)
    p1 = ul1.phases["phase I"] / mc.phases["phase I"]
    p2 = ul1.phases["phase II"] / mc.phases["phase II"]
    return Outcome(f"I {p1:.2f}x, II {p2:.2f}x", 1 < p1 < 1.5 and p2 < 0.75, "MCScanUL1 / MCScan phase times")


def evaluate(hw) -> list[dict]:
    """One row per claim row: id, kind, paper value, simulated value, tolerance, verdict (see claims.py)."""
    return module_rows(CLAIM_IDS, hw)


def main(argv=None) -> int:
    return claims_main(argv, "ascendbench.reference.scan_claims", __doc__.splitlines()[0], HW, evaluate, 5)


if __name__ == "__main__":
    sys.exit(run_script(main))
