"""Fit the profile constants marked "calibrated" on the calibration claims only, and write them back.

Usage: python benchmarks/calibrate.py [--check]

Only constants whose source in a shipped profile starts with "calibrated:" are fitted, each on one row of a
calibration claim of reference/claims.toml (kind "calibration": S-2, S-4, G-8, G-9a), measured with that
claim's own evaluator (what `ascendbench validate` runs), by a deterministic bisection (reference/calibration.py
FITS). No shipped constant is marked calibrated today: the 910B4's HBM efficiency (once fitted on S-4) and the
Atlas's L2 read rate (once fitted on G-9a M=512) come from CANN's GEMM cache-tiling cost model
(cache_tiling_soc_spec.h), and S-2, S-4, G-8 and G-9a hold without a fit; they stay calibration claims, so they
are never validation claims. No validation claim is used. The fitted values are written into the shipped TOML files with the claim, the paper's value
and the date in their source. --check writes nothing: it reports how far the shipped values are from a fresh
fit and exits 1 when any differs by more than the larger of 1.1 units of its last fitted digit and 0.2% of
the value.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's package (and its profiles)

from ascendbench.hardware import load_profile
from ascendbench.interrupts import run_script
from ascendbench.reference.calibration import FITS, fit_all, simulated, write_back


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Fit the constants the shipped profiles mark calibrated (none today), on calibration claims only.")
    ap.add_argument("--check", action="store_true", help="report only; write nothing; exit 1 if stale")
    args = ap.parse_args(argv)
    fitted = fit_all()
    if not any(fitted.values()):
        print("no shipped profile marks a constant calibrated: nothing to fit")
    digits = {fit.constant: fit.digits for fit in FITS}
    changed: dict[str, dict[str, float]] = {}  # per profile, the fitted values that differ from the shipped ones
    for name, values in fitted.items():
        shipped = load_profile(name)
        changed[name] = {}
        for key, value in values.items():
            if abs(getattr(shipped, key) - value) > max(1.1 * 10 ** -digits[key], 0.002 * abs(value)):
                changed[name][key] = value
            print(f"{name} {key}: fitted {value}, shipped {getattr(shipped, key)}"
                  f"{'  (differs)' if key in changed[name] else ''}")
        hw = shipped.replace(**values)
        for fit in FITS:
            if fit.profile == name:
                print(f"  {fit.row}: simulated {simulated(fit.row, hw):.4g} with the fitted values")
    ok = not any(changed.values())
    if args.check:
        print("shipped values are up to date" if ok else "shipped values differ from a fresh fit: run "
              "python benchmarks/calibrate.py")
        return 0 if ok else 1
    for name, values in changed.items():
        if values:  # unchanged values keep their line (and its date)
            print(f"wrote {', '.join(values)} to {write_back(name, values)}")
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
