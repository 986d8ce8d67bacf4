"""Evaluate the scan paper's claims S-1 ... S-9 and S-W1 with the simulator and print paper vs simulated.

Usage: python -m ascendbench.reference.scan_claims [--hardware NAME] [--json]

The paper's values below are the reference data of CLAIMS.md; the simulated values come only from the
timing model. Bandwidth = (input bytes read once + output bytes written once) / time.
"""

from __future__ import annotations

import sys

from ascendbench.kernels import SCAN_KERNELS, ScanParams, expected_matmuls
from ascendbench.reference import claims_main

# Large sizes as the paper swept them: n = i * 20 * s^2 (no padding pass).
N_SINGLE = 100 * 20 * 128 * 128  # 32,768,000
N_MULTI = 305 * 20 * 128 * 128  # 99,942,400, the largest point of the paper's sweep


def time_s(kernel: str, n: int, hw, **params) -> float:
    return SCAN_KERNELS[kernel].simulate(n, ScanParams(**params), hw).time_s


def bandwidth_gbps(kernel: str, n: int, hw, **params) -> float:
    p = ScanParams(**params)
    return n * (p.in_bytes + p.out_bytes) / SCAN_KERNELS[kernel].simulate(n, p, hw).time_s / 1e9


def evaluate(hw) -> list[dict]:
    """One row per claim: id, kind, paper value, simulated value, tolerance, verdict."""
    rows = []

    def row(cid, kind, statement, paper, sim, ok, tolerance):
        rows.append({"id": cid, "kind": kind, "claim": statement, "paper": paper, "simulated": sim,
                     "tolerance": tolerance, "holds": bool(ok)})

    def within(sim, paper, rel):
        return abs(sim / paper - 1) <= rel

    vec = time_s("vec-cumsum", N_SINGLE, hw)
    scanu = time_s("scanu", N_SINGLE, hw)
    scanul1 = time_s("scanul1", N_SINGLE, hw)
    mc = SCAN_KERNELS["mcscan"].simulate(N_MULTI, ScanParams(), hw)
    mc_ul1 = SCAN_KERNELS["mcscan-ul1"].simulate(N_MULTI, ScanParams(), hw)
    mc_off = time_s("mcscan", N_MULTI, hw, chunk=0)
    memcpy = time_s("memcpy", N_MULTI, hw, out_dtype="fp32")
    scanu_multi_n = time_s("scanu", N_MULTI, hw)
    bw = {s: bandwidth_gbps("mcscan", N_MULTI, hw, s=s) for s in (32, 64, 128)}

    matmul_ok = all(
        SCAN_KERNELS[k].simulate(n, ScanParams(s=s), hw).counters.get("matmuls", 0) == expected_matmuls(k, n, s)
        for k in ("scanu", "scanul1", "mcscan") for s in (16, 32, 64, 128) for n in (1, s * s, s * s + 1, 10**6 + 7)
    )
    row("S-W1", "exact", "matmuls: ScanU ceil(n/s^2), ScanUL1 3ceil(n/s^2), MCScan ceil(n/s^2)", "formula",
        "equal" if matmul_ok else "differs", matmul_ok, "exact")
    row("S-1", "validation", "ScanU speed-up over vector-only CumSum (s=128)", 5.0, vec / scanu,
        within(vec / scanu, 5.0, 0.25), "±25%")
    row("S-2", "calibration", "ScanUL1 speed-up over vector-only CumSum (s=128)", 9.6, vec / scanul1,
        within(vec / scanul1, 9.6, 0.15), "±15%")
    row("S-3", "validation", "ScanUL1 / ScanU speed-up (s=128)", 1.92, scanu / scanul1,
        within(scanu / scanul1, 1.92, 0.25), "±25%")
    frac = bw[128] / hw.hbm_bandwidth_gbps
    row("S-4", "calibration", "MCScan fraction of HBM peak (s=128, 20 cores)", 0.375, frac, within(frac, 0.375, 0.15),
        "±15%")
    row("S-5", "shape", "MCScan bandwidth s=128 > s=64 > s=32 (GB/s)", "128 > 64 > 32",
        f"{bw[128]:.0f} > {bw[64]:.0f} > {bw[32]:.0f}", bw[128] > bw[64] > bw[32], "ordering")
    row("S-6", "validation", "MCScan (20 cores) speed-up over single-core ScanU", 15.2, scanu_multi_n / mc.time_s,
        within(scanu_multi_n / mc.time_s, 15.2, 0.25), "±25%")
    gain = mc_off / mc.time_s - 1
    row("S-7", "validation", "L2 cache splitting gain of MCScan (s=128)", 0.25, gain, abs(gain - 0.25) <= 0.125,
        "±50% of the gain")
    speedup = mc.time_s / mc_ul1.time_s
    row("S-8a", "validation", "MCScanUL1 speed-up over MCScan", 1.33, speedup, within(speedup, 1.33, 0.25), "±25%")
    frac_memcpy = memcpy / mc_ul1.time_s
    row("S-8b", "validation", "MCScanUL1 fraction of memcpy bandwidth", 0.749, frac_memcpy,
        within(frac_memcpy, 0.749, 0.25), "±25%")
    p1, p1u = mc.phases["phase I"], mc_ul1.phases["phase I"]
    p2, p2u = mc.phases["phase II"], mc_ul1.phases["phase II"]
    row("S-9", "shape", "phase I: MCScanUL1 slightly longer; phase II: MCScanUL1 much shorter",
        "I: UL1 > MC; II: UL1 << MC", f"I {p1u / p1:.2f}x, II {p2u / p2:.2f}x", p1u > p1 and p1u < 1.5 * p1 and p2u < 0.75 * p2,
        "ordering (II at most 0.75x)")
    return rows


def main(argv=None) -> int:
    return claims_main(argv, __doc__.splitlines()[0], "ascend-910b4", evaluate, 5)


if __name__ == "__main__":
    sys.exit(main())
