"""Derive nd2nz_unaligned_efficiency from CANN's public ND2NZ case (no claim of the papers is used).

Usage: python benchmarks/derive_nd2nz.py [--check]

Prints the rate of on-the-fly ND2NZ loads of rows that are not 256-byte aligned at which this model gives the
case's measured 149.04 us (ascendbench/reference/derived.py says how), and the value shipped in each profile.
Run it after benchmarks/calibrate.py: the derivation uses the other constants as shipped. --check exits 1 when
a shipped value differs from the derivation; without it, write the printed value into both profiles by hand
(their source note names this script).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's package (and its profiles)

from ascendbench.hardware import load_profile
from ascendbench.interrupts import run_script
from ascendbench.reference.derived import DIGITS, ND2NZ_CASE, derive_nd2nz_unaligned_efficiency, nd2nz_case_us


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Derive nd2nz_unaligned_efficiency from CANN's ND2NZ case.")
    ap.add_argument("--check", action="store_true", help="exit 1 if a shipped value differs from the derivation")
    args = ap.parse_args(argv)
    value = derive_nd2nz_unaligned_efficiency()
    print(f"nd2nz_unaligned_efficiency derived: {value} (case {ND2NZ_CASE['aic_time_us']} us; simulated "
          f"{nd2nz_case_us(value):.2f} us at that rate, {nd2nz_case_us(1.0):.2f} us at full rate)")
    print(f"  with A and B resident in L2 the case would give {derive_nd2nz_unaligned_efficiency(warm_l2=True)} "
          "(sensitivity only; the shipped value is the cold one)")
    ok = True
    for name in ("ascend-910b4", "atlas-300t-a2"):
        shipped = load_profile(name).nd2nz_unaligned_efficiency
        same = abs(shipped - value) <= 1.1 * 10**-DIGITS
        ok &= same
        print(f"  {name}: shipped {shipped}{'' if same else '  (differs)'}")
    if args.check:
        print("shipped values are up to date" if ok else "shipped values differ: write the derived value into "
              "both profiles")
    return 0 if ok or not args.check else 1


if __name__ == "__main__":
    sys.exit(run_script(main))
