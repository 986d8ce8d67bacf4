"""Fit the hardware constants a profile marks as calibrated, on calibration claims only (the logic of
benchmarks/calibrate.py).

A constant is fitted only when its profile source starts with "calibrated:" and a fit is defined for it below;
each fit targets one row of a calibration claim (claims.toml kind "calibration": S-2, S-4, G-8, G-9a) and
measures it with that claim's own evaluator, the one `ascendbench validate` runs. Every fit is a bisection
with a fixed number of steps on a quantity monotone in its constant, so the result is deterministic. A constant
marked "calibrated: ... of <profile> (same AIV design)" is copied from the profile it was fitted on.

No shipped constant is marked calibrated today: the constants once fitted here (the 910B4's HBM efficiency on
S-4, the Atlas's L2 read rate on G-9a M=512) have public sources now (CANN's GEMM cache-tiling cost model,
cache_tiling_soc_spec.h), and every calibration claim (S-2, S-4, G-8, G-9a) holds without a fit; they stay
calibration claims, never validation claims. FITS is empty; the machinery stays for a constant that has no
source (and for `ascendbench correlate --fit`'s future home).
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from ascendbench.hardware import HardwareProfile, load_profile
from ascendbench.reference.claims import Claim, Context, evaluate_claims, load_claims

__all__ = [
    "FITS",
    "CalibrationError",
    "Fit",
    "calibrated_constants",
    "fit_all",
    "fit_profile",
    "simulated",
    "source_note",
    "write_back",
]


class CalibrationError(ValueError):
    """A constant marked calibrated has no fit, a fit targets a claim that is not a calibration claim, or a
    profile line cannot be rewritten (the message names it)."""


@dataclass(frozen=True)
class Fit:
    """How one constant is fitted: on claim row `row` (its simulated value must equal the paper's), by
    bisection over [low, high]; `decreasing` says the simulated value falls as the constant grows; `digits`
    the rounding of the result. `best_within` > 0: when the model cannot reach the paper's value inside the
    range, the constant is the one whose simulated value is within that fraction of the best reachable."""

    constant: str
    profile: str
    row: str
    low: float
    high: float
    decreasing: bool
    digits: int = 1
    steps: int = 40
    best_within: float = 0.0
    note: str = ""


# In the order they are fitted (each fit sees the values fitted before it).
FITS: tuple[Fit, ...] = ()
_SHARED = re.compile(r"^calibrated: .* of (?P<profile>[a-z0-9-]+) \(same AIV design\)")


def _claim(row: str) -> Claim:
    for c in load_claims():
        if c.id == row:
            if c.kind != "calibration":
                raise CalibrationError(f"{row} is a {c.kind} claim: only calibration claims may be fitted on")
            return c
    raise CalibrationError(f"no claim row {row!r}")


def calibrated_constants(hw: HardwareProfile) -> list[str]:
    """The constants whose source in the profile starts with "calibrated"."""
    return [k for k, source in hw.sources.items() if source.startswith("calibrated")]


def simulated(row: str, hw: HardwareProfile) -> float:
    """The simulated value of a claim row on `hw`, through the claim's evaluator."""
    claim = _claim(row)
    [evaluation] = evaluate_claims([claim], Context(profiles={claim.hardware: hw}))
    return float(evaluation.simulated)


def _bisect(f, target: float, fit: Fit) -> float:
    lo, hi = fit.low, fit.high
    for _ in range(fit.steps):
        mid = (lo + hi) / 2
        if (f(mid) > target) == fit.decreasing:
            lo = mid
        else:
            hi = mid
    return round((lo + hi) / 2, fit.digits)


def fit_profile(name: str, fitted: dict[str, dict[str, float]] | None = None) -> dict[str, float]:
    """Fitted values of the calibrated constants of shipped profile `name`.

    `fitted` holds values already fitted for other profiles (for constants shared with them). Raises
    CalibrationError when a constant marked calibrated has no fit and is not shared.
    """
    hw = load_profile(name)
    marked = calibrated_constants(hw)
    out: dict[str, float] = {}
    for key in marked:
        shared = _SHARED.match(hw.sources[key])
        if shared and shared["profile"] != name:
            other = (fitted or {}).get(shared["profile"]) or fit_profile(shared["profile"])
            out[key] = other[key]
    missing = [k for k in marked if k not in out and not any(f.constant == k and f.profile == name for f in FITS)]
    if missing:
        raise CalibrationError(f"{name}: {', '.join(missing)} marked calibrated but no fit is defined")
    hw = hw.replace(**out)
    for fit in FITS:
        if fit.profile != name or fit.constant in out:
            continue
        if fit.constant not in marked:
            continue  # the profile gives this constant a source: it is not fitted
        target = float(_claim(fit.row).paper)
        f = lambda v, fit=fit, hw=hw: simulated(fit.row, hw.replace(**{fit.constant: v}))
        if fit.best_within:
            best = f(fit.high if fit.decreasing else fit.low)
            target = max(target, (1 + fit.best_within) * best) if fit.decreasing else target
        out[fit.constant] = _bisect(f, target, fit)
        hw = hw.replace(**{fit.constant: out[fit.constant]})
    return out


def fit_all() -> dict[str, dict[str, float]]:
    """profile name -> fitted calibrated constants, for every shipped profile."""
    from ascendbench.hardware import list_profiles

    fitted: dict[str, dict[str, float]] = {}
    for name in sorted(list_profiles(), key=lambda n: n != "ascend-910b4"):  # shared constants' source first
        fitted[name] = fit_profile(name, fitted)
    return fitted


def source_note(name: str, key: str, date: str) -> str:
    """The source written beside a fitted value: the claim it was fitted on, the paper's value and the date."""
    for fit in FITS:
        if fit.constant == key:
            c = _claim(fit.row)
            origin = "" if fit.profile == name else f" of {fit.profile} (same AIV design)"
            extra = f"; {fit.note}" if fit.note else ""
            return (f"calibrated: benchmarks/calibrate.py on claim {c.id} ({c.statement.split(' (fits')[0]}: paper "
                    f"{c.paper} {c.unit}".rstrip() + f"{extra}){origin}, {date}")
    raise CalibrationError(f"no fit for {key}")


def write_back(name: str, values: dict[str, float], date: str | None = None, folder: Path | None = None) -> Path:
    """Rewrite the lines of the fitted constants in profile `name`'s TOML (value and source note), atomically."""
    from ascendbench.store.io import atomic_write_text

    date = date or _dt.date.today().isoformat()
    path = Path(str(folder or resources.files("ascendbench.hardware") / "profiles")) / f"{name}.toml"
    text = path.read_text(encoding="utf-8")
    for key, value in values.items():
        line = f'{key} = {{ value = {value}, source = "{source_note(name, key, date)}" }}'
        text, count = re.subn(rf"^{key} = .*$", lambda _m, line=line: line, text, flags=re.MULTILINE)
        if count != 1:
            raise CalibrationError(f"{path}: expected one line for {key}, found {count}")
    atomic_write_text(path, text)
    return path

