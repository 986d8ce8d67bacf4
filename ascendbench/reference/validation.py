"""Claim evaluation as a library: every published claim of the two papers, the paper's value beside the
simulated one, in one result document (store/validation.py). `ascendbench validate` prints it; the table of
docs/fidelity.md (reference/readme.py) is made from it."""

from __future__ import annotations

import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from ascendbench.reference import RANDOM_SHAPES

__all__ = ["FAILING_KINDS", "run_validation"]

FAILING_KINDS = ("exact", "calibration", "shape")


def run_validation(only: list[str] | None = None, quick: bool = False, strict: bool = False,
                   random_shapes: int = RANDOM_SHAPES, progress=None, command: list[str] | None = None,
                   hardware: Mapping[str, Any] | None = None):
    """Evaluate the selected claims and return the ValidationResult (Python API of `ascendbench validate`).

    Args:
        only: claim IDs (CLAIMS.md IDs such as "G-9a", or row IDs such as "G-9a M=8"); None for all.
        quick: only the claims of the --quick set (claims.toml `quick = true`).
        strict: validation claims outside tolerance fail too.
        random_shapes: shapes of the random-5000 workload evaluated for G-7 (1 ... 5000).
        progress: report(stage, done, total) callback.
        hardware: HardwareProfiles by the name of the papers' chip they replace ("ascend-910b4",
            "atlas-300t-a2"; claims.toml's `hardware`), e.g. a profile fitted by `ascendbench correlate`; the
            result's `hardware` records them under that name.

    Raises:
        ascendbench.reference.claims.ClaimError: an ID of `only` names no claim.
    """
    from ascendbench import __version__
    from ascendbench.reference.claims import Context, evaluate_claims, select_claims
    from ascendbench.store.validation import ClaimResult, ValidationResult, ValidationSummary

    t0 = time.perf_counter()
    claims = select_claims(only, quick=quick)
    ctx = Context(profiles=dict(hardware or {}), options={"random_count": random_shapes})
    evaluations = evaluate_claims(claims, ctx, progress=progress)
    rows = [ClaimResult(**e.as_row()) for e in evaluations]
    misses = [r.id for r in rows if not r.holds]
    failing = [r.id for r in rows if not r.holds and (r.kind in FAILING_KINDS or strict)]
    return ValidationResult(
        tool_version=__version__, created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        command=command or ["ascendbench", "validate"], quick=quick, strict=strict, only=only,
        random_shapes=random_shapes,
        hardware={name: hw.to_dict() for name, hw in sorted(ctx.profiles.items())}, claims=rows,
        summary=ValidationSummary(rows=len(rows), holds=len(rows) - len(misses), misses=misses, failing=failing),
        passed=not failing, wall_time_s=time.perf_counter() - t0)
