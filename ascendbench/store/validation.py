"""The result document of `ascendbench validate`: every evaluated claim with the paper's and the simulated value.

Units are the claim's (`unit`); ratio = simulated / paper where both are numbers. Non-finite floats are written
as null (commands/common.dump_json).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "VALIDATION_SCHEMA_PATH",
    "VALIDATION_SCHEMA_VERSION",
    "ClaimResult",
    "ValidationResult",
    "ValidationSummary",
    "write_validation_schema",
]

VALIDATION_SCHEMA_VERSION = 1
VALIDATION_SCHEMA_PATH = Path(__file__).with_name("validation_result.schema.json")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ClaimResult(_Model):
    """One claim row: the reference data (reference/claims.toml) and what the simulator gives."""

    id: str = Field(description="row ID, e.g. 'S-4' or 'G-9a M=8'")
    claim_id: str = Field(description="the CLAIMS.md ID the row belongs to")
    kind: Literal["exact", "calibration", "validation", "shape"]
    family: str = Field(description="kernel family: scan, hgemm, operators, sampling, row-scans")
    hardware: str = Field(description="hardware profile it was evaluated on")
    claim: str = Field(description="short statement (ours, not the paper's words)")
    source: str
    paper: Any = Field(description="the paper's value: number, [low, high] or text")
    unit: str
    simulated: Any = Field(description="the simulator's value: number, [low, high] or text")
    ratio: float | None = Field(None, description="simulated / paper when both are numbers")
    tolerance: str
    holds: bool
    detail: str = ""
    seconds: float = Field(description="host seconds of the claim's evaluator (shared by its rows)")


class ValidationSummary(_Model):
    rows: int
    holds: int
    misses: list[str] = Field(description="IDs of every row that misses")
    failing: list[str] = Field(description="IDs of the misses that fail the exit status (exact, calibration and "
                                           "shape claims; also validation claims with --strict)")


class ValidationResult(_Model):
    """One `ascendbench validate` run. passed is false exactly when summary.failing is not empty."""

    schema_version: Literal[1] = VALIDATION_SCHEMA_VERSION
    kind: Literal["validation"] = "validation"
    tool_version: str
    created_at: str = Field(description="UTC time, ISO 8601")
    command: list[str]
    quick: bool
    strict: bool
    only: list[str] | None = None
    random_shapes: int = Field(description="shapes of random-5000 used for G-7")
    hardware: dict[str, dict[str, Any]] = Field(description="profiles used, name -> constants with sources")
    claims: list[ClaimResult]
    summary: ValidationSummary
    passed: bool
    wall_time_s: float


def write_validation_schema(path: Path = VALIDATION_SCHEMA_PATH) -> None:
    """Regenerate the shipped JSON Schema file (a test checks it is up to date)."""
    path.write_text(json.dumps(ValidationResult.model_json_schema(), indent=2, sort_keys=True) + "\n")
