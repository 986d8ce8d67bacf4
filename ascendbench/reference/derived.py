"""Hardware constants derived from public measurements outside the two papers.

These measurements are not claims: `ascendbench validate` never compares against them, and no claim of the
papers is used here. A constant derived here has a source starting with "derived:" in the shipped profiles.

nd2nz_unaligned_efficiency, from CANN's best-practice case "ND2NZ format conversion on the AIV core" (Ascend C
operator development guide, Atlas A2): C = A @ B with A 1024 x 1024 and B 1024 x 4095 in fp16 (B's rows, 8190
bytes, are not 256-byte aligned), the Matmul API's MDL template, 128 x 256 x 64 blocks with 4 blocks of K per
L1 panel (stepKa = stepKb = 4), on an AI processor of 24 cores; B loaded with the on-the-fly ND2NZ
instruction took 149.04 us of AIC time, bound by MTE2. The derivation simulates that load pattern with this
model's GemmExample program (the same 128 x 256 x 64 blocks and 256-deep L1 panels) on the Atlas 300T A2
profile given the 910B2's 24 cores and 1800 MHz (its platform file, as quoted publicly), alpha = 1 and beta = 0 (no element-wise pass),
cold L2, every core simulated, and bisects the ND2NZ rate until the AIC phase takes 149.04 us.
"""

from __future__ import annotations

import math

from ascendbench.hardware import HardwareProfile, load_profile
from ascendbench.kernels.hgemm import GemmShape, HgemmParams, simulate_hgemm

__all__ = ["DIGITS", "ND2NZ_CASE", "derive_nd2nz_unaligned_efficiency", "nd2nz_case_us"]

ND2NZ_CASE = {"shape": (1024, 4095, 1024), "cores": 24, "clock_mhz": 1800.0, "aic_time_us": 149.04}
DIGITS = 3  # decimals shipped


def _case_profile(hw: HardwareProfile) -> HardwareProfile:
    return hw.replace(ai_cores=ND2NZ_CASE["cores"], clock_mhz=ND2NZ_CASE["clock_mhz"])


def nd2nz_case_us(efficiency: float, hw: HardwareProfile | None = None, warm_l2: bool = False) -> float:
    """Simulated AIC time (gemm phase, microseconds) of the CANN case at an ND2NZ rate of `efficiency`."""
    case = _case_profile(hw or load_profile("atlas-300t-a2")).replace(nd2nz_unaligned_efficiency=efficiency)
    sim, _ = simulate_hgemm(GemmShape(*ND2NZ_CASE["shape"]), HgemmParams(variant="gemm-example", alpha=1.0, beta=0.0),
                            case, warm_l2=warm_l2, every_core=True)  # the run cache keys on the profile too
    return sim.phases_s["gemm"] * 1e6


def derive_nd2nz_unaligned_efficiency(hw: HardwareProfile | None = None, warm_l2: bool = False) -> float:
    """The ND2NZ rate (fraction of the aligned rate, 0-1) at which the model reproduces the CANN case's
    149.04 us (warm_l2: with A and B resident in L2 at the start, the sensitivity check; the shipped value is
    cold); deterministic bisection on a log scale, rounded to DIGITS decimals. Raises ValueError when
    no rate in [0.001, 1] reproduces it (the rest of the profile makes the case faster or slower than any)."""
    target = ND2NZ_CASE["aic_time_us"]
    lo, hi = 0.001, 1.0
    if not nd2nz_case_us(lo, hw, warm_l2) >= target >= nd2nz_case_us(hi, hw, warm_l2):
        raise ValueError(f"no ND2NZ rate in [{lo}, {hi}] gives the case's {target} us with this profile")
    for _ in range(40):
        mid = math.sqrt(lo * hi)
        if nd2nz_case_us(mid, hw, warm_l2) > target:
            lo = mid
        else:
            hi = mid
    return round(math.sqrt(lo * hi), DIGITS)
