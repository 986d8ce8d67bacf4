"""How far the claims move when each estimated constant goes to the ends of the range its source states.

Usage: python benchmarks/sensitivity.py [--hardware ascend-910b4,atlas-300t-a2] [--only S-4,S-7]

Every constant whose source in a shipped profile reads "estimate, checked LOW-HIGH <unit>: ..." is set to LOW
and then to HIGH (one at a time, the rest as shipped), and the profile's claims (`ascendbench validate`'s
evaluators; by default the scan paper's S-1 ... S-9 and S-15 for the 910B4, G-9 for the Atlas) are evaluated
again. Printed per constant: the largest move of a claim's simulated/paper ratio, the claim that moved most,
and any claim whose verdict flips inside the range. A constant whose range flips a verdict is not "checked";
its estimate needs a source. Nothing is written. About 3 minutes for the 910B4, 6 for the Atlas, on 2 cores.
"""

from __future__ import annotations

import argparse
import re
import sys

import _checkout  # noqa: F401  (this checkout's ascendbench)

from ascendbench.hardware import load_profile
from ascendbench.interrupts import run_script
from ascendbench.reference.claims import Context, evaluate_claims, select_claims

RANGE = re.compile(r"^estimate, checked (?P<low>[0-9.]+)-(?P<high>[0-9.]+) ")
DEFAULT_CLAIMS = {"ascend-910b4": "S-1,S-2,S-3,S-4,S-5,S-6,S-7,S-8,S-9,S-15", "atlas-300t-a2": "G-9a,G-9b"}


def estimated_ranges(hw) -> dict[str, tuple[float, float]]:
    """constant -> (low, high) for every constant whose source states the range it was checked in."""
    found = {}
    for key, source in hw.sources.items():
        m = RANGE.match(source)
        if m:
            found[key] = (float(m["low"]), float(m["high"]))
    return found


def outcomes(hw, claims) -> dict[str, tuple[float | None, bool]]:
    """claim row -> (simulated / paper ratio or None, holds) on profile hw."""
    rows = evaluate_claims(claims, Context(profiles={hw.name: hw}))
    return {e.claim.id: (e.ratio, e.holds) for e in rows}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hardware", default="ascend-910b4,atlas-300t-a2")
    ap.add_argument("--only", default=None, help="claim IDs (default: the profile's own, see above)")
    args = ap.parse_args(argv)
    for name in args.hardware.split(","):
        hw = load_profile(name)
        claims = [c for c in select_claims((args.only or DEFAULT_CLAIMS.get(name, "")).split(",")) if c.hardware == name]
        base = outcomes(hw, claims)
        print(f"{name}: {len(claims)} claims, {len(estimated_ranges(hw))} estimated constants with a range")
        for key, (low, high) in estimated_ranges(hw).items():
            value = getattr(hw, key)
            worst, where, flips = 0.0, "-", []
            for end in (low, high):
                moved = outcomes(hw.replace(**{key: type(value)(end)}), claims)
                for row, (ratio, holds) in moved.items():
                    if ratio is not None and base[row][0]:
                        change = abs(ratio / base[row][0] - 1)
                        if change > worst:
                            worst, where = change, f"{row} at {end:g}"
                    if holds != base[row][1]:
                        flips.append(f"{row} at {end:g}")
            print(f"  {key:28} {value:g} in [{low:g}, {high:g}]: largest move {worst * 100:.2f}% ({where})"
                  f"{'; verdict flips: ' + ', '.join(flips) if flips else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
