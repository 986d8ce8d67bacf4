"""Fit the profile constants marked "calibrated" on the calibration claims only, and write them back.

Usage: python benchmarks/calibrate.py [--check]

Scan machine (ascend-910b4; deterministic bisection, each quantity is monotone in its constant):
1. vector_scalar_sync_cycles (the vector -> scalar -> vector round trip of every carry step) on claim S-4:
   MCScan, s=128, 20 cores, n = 99,942,400 reaches 37.5% of the 800 GB/s HBM peak.
2. vector_barrier_cycles (the vector pipe barrier between dependent vector instructions) on claim S-2:
   ScanUL1 is 9.6x faster than the vector-only CumSum (s=128, n = 32,768,000).
HGEMM machine (atlas-300t-a2), on claim G-9a (OPT FFN, K = 7168, N = 28672, alpha = beta = 0.5):
3. hbm_efficiency on M = 8 (550.90 us): the shape streams B (411 MB) once, so HBM bound;
4. l2_read_bytes_per_cycle on M = 512 (862.50 us), searched in [110, 440] B/cycle (the platform file's
   110 up to 4x): the AIC's MTE2 re-reads panels from L2. When the model cannot reach the paper's time
   (other pipes bound it first), the smallest rate within 1% of the best the model reaches is taken.
Claim G-8 is a calibration claim too but is not used: no constant of the model moves it close enough
(see README). No validation claim is used. The fitted values are written into the shipped TOML files
(the vector constants into both profiles, which share the AIV design) with the claim and the date in their
source. --check only reports how far the shipped values are from the fit.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import re
import sys
from importlib import resources

import _checkout  # noqa: F401  (this checkout's ascendbench, not an installed one)

from ascendbench.hardware import list_profiles, load_profile
from ascendbench.kernels import SCAN_KERNELS, ScanParams

S2_TARGET = 9.6  # claim S-2
S4_TARGET = 0.375  # claim S-4
N_SINGLE = 100 * 20 * 128 * 128
N_MULTI = 305 * 20 * 128 * 128


def s4_fraction(hw) -> float:
    p = ScanParams(s=128)
    t = SCAN_KERNELS["mcscan"].simulate(N_MULTI, p, hw).time_s
    return N_MULTI * (p.in_bytes + p.out_bytes) / t / 1e9 / hw.hbm_bandwidth_gbps


def s2_speedup(hw) -> float:
    p = ScanParams(s=128)
    return SCAN_KERNELS["vec-cumsum"].simulate(N_SINGLE, p, hw).time_s / SCAN_KERNELS["scanul1"].simulate(
        N_SINGLE, p, hw).time_s


def bisect(f, target: float, lo: float, hi: float, decreasing: bool, steps: int = 40, digits: int = 1) -> float:
    """x in [lo, hi] with f(x) = target, f monotone; rounded to `digits` decimals (0.1 cycle by default)."""
    for _ in range(steps):
        mid = (lo + hi) / 2
        above = f(mid) > target
        if above == decreasing:
            lo = mid
        else:
            hi = mid
    return round((lo + hi) / 2, digits)


G9A_M8_US = 550.90  # claim G-9a
G9A_M512_US = 862.50  # claim G-9a


def opt_ffn_us(hw, m: int) -> float:
    from ascendbench.kernels.hgemm import GemmShape, HgemmParams, simulate_hgemm

    return simulate_hgemm(GemmShape(m, 28672, 7168), HgemmParams(alpha=0.5, beta=0.5), hw)[0].time_s * 1e6


def fit_hgemm(name: str = "atlas-300t-a2") -> dict[str, float]:
    hw = load_profile(name)
    eff = bisect(lambda v: opt_ffn_us(hw.replace(hbm_efficiency=v), 8), G9A_M8_US, 0.2, 1.0,
                 decreasing=True, steps=30, digits=3)
    hw = hw.replace(hbm_efficiency=eff)
    best = opt_ffn_us(hw.replace(l2_read_bytes_per_cycle=440.0), 512)
    target = max(G9A_M512_US, 1.01 * best)
    rate = bisect(lambda v: opt_ffn_us(hw.replace(l2_read_bytes_per_cycle=v), 512), target, 110.0, 440.0,
                  decreasing=True, steps=30)
    return {"hbm_efficiency": eff, "l2_read_bytes_per_cycle": round(rate, 1)}


def fit(name: str) -> dict[str, float]:
    hw = load_profile(name)
    sync = bisect(lambda v: s4_fraction(hw.replace(vector_scalar_sync_cycles=v)), S4_TARGET, 0.0, 1000.0,
                  decreasing=True)
    hw = hw.replace(vector_scalar_sync_cycles=sync)
    barrier = bisect(lambda v: s2_speedup(hw.replace(vector_barrier_cycles=v)), S2_TARGET, 0.0, 5000.0,
                     decreasing=False)
    return {"vector_scalar_sync_cycles": sync, "vector_barrier_cycles": barrier}


_SOURCES = {
    "vector_scalar_sync_cycles": "claim S-4 (MCScan at 37.5% of HBM peak)",
    "vector_barrier_cycles": "claim S-2 (ScanUL1 9.6x faster than vector-only CumSum)",
    "hbm_efficiency": "claim G-9a (OPT FFN M=8 in 550.90 us)",
    "l2_read_bytes_per_cycle": "claim G-9a (OPT FFN M=512 in 862.50 us; smallest rate within 1% of the model's best)",
}


def write_back(values: dict[str, float], fitted_on: str, profiles: list[str] | None = None) -> list[str]:
    folder = resources.files("ascendbench.hardware") / "profiles"
    today = _dt.date.today().isoformat()
    written = []
    for name in profiles or list_profiles():
        path = folder / f"{name}.toml"
        text = path.read_text()
        for key, value in values.items():
            origin = "" if name == fitted_on else f" of {fitted_on} (same AIV design)"
            source = f"calibrated: benchmarks/calibrate.py on {_SOURCES[key]}{origin}, {today}"
            text, count = re.subn(rf"^{key} = .*$", f'{key} = {{ value = {value}, source = "{source}" }}', text,
                                  flags=re.MULTILINE)
            if count != 1:
                raise SystemExit(f"{path}: expected one line for {key}, found {count}")
        with open(str(path), "w") as fh:
            fh.write(text)
        written.append(str(path))
    return written


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Fit calibrated constants on claims S-2, S-4 and G-9a.")
    ap.add_argument("--check", action="store_true", help="report only; write nothing")
    args = ap.parse_args(argv)
    ok = True
    scan_values = fit("ascend-910b4")
    hgemm_values = fit_hgemm("atlas-300t-a2")
    for profile, values in (("ascend-910b4", scan_values), ("atlas-300t-a2", hgemm_values)):
        shipped = load_profile(profile)
        for key, value in values.items():
            print(f"{profile} {key}: fitted {value}, shipped {getattr(shipped, key)}")
            ok &= abs(getattr(shipped, key) - value) <= max(0.11, 0.002 * abs(value))
    hw = load_profile("ascend-910b4").replace(**scan_values)
    print(f"S-4 fraction of peak: {s4_fraction(hw):.4f} (target {S4_TARGET}); S-2 speed-up: {s2_speedup(hw):.3f} "
          f"(target {S2_TARGET})")
    hw = load_profile("atlas-300t-a2").replace(**hgemm_values)
    print(f"G-9a M=8: {opt_ffn_us(hw, 8):.1f} us (target {G9A_M8_US}); M=512: {opt_ffn_us(hw, 512):.1f} us "
          f"(target {G9A_M512_US})")
    if args.check:
        return 0 if ok else 1
    for path in write_back(scan_values, "ascend-910b4") + write_back(hgemm_values, "atlas-300t-a2", ["atlas-300t-a2"]):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
