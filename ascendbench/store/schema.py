"""The versioned result document every run writes (pydantic models; JSON Schema generated from them)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["SCHEMA_PATH", "SCHEMA_VERSION", "Host", "Problem", "RunResult", "Verification", "json_schema"]

SCHEMA_VERSION = 1
SCHEMA_PATH = Path(__file__).with_name("run_result.schema.json")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Problem(_Model):
    """What was computed: size, dtypes, and where the data came from."""

    n: int = Field(ge=0, description="number of elements (any size; a Python int, no 32-bit wrap)")
    dtype: Literal["fp16", "int8"]
    out_dtype: Literal["fp32", "fp16", "int32"]
    exclusive: bool
    seed: int | None = Field(None, description="seed of the generated input; null for --input or --model-only")
    input_file: str | None = None
    input_sha256: str | None = Field(None, description="SHA-256 of the input file's bytes")
    data: Literal["generated", "file", "none"] = Field(description="'none' for --model-only runs")


class Verification(_Model):
    """Check of the functional result against the NumPy reference (null fields for --model-only)."""

    performed: bool
    passed: bool | None = None
    max_abs_error: float | None = None
    max_rel_error: float | None = Field(None, description="relative to the running sum of |x|")
    tolerance: str | None = None


class Host(_Model):
    wall_time_s: float = Field(description="host wall time of the whole command, seconds")
    functional_time_s: float | None = None
    model_time_s: float = Field(description="host time spent in the timing model, seconds")
    machine: str
    python: str
    numpy: str


class RunResult(_Model):
    """One `ascendbench run` result. Metric keys carry their unit: *_s seconds, *_gbps GB/s (1e9 B/s),
    fraction_* in [0, 1] (may exceed 1 only for L2-resident data), *_bytes bytes."""

    schema_version: Literal[1] = SCHEMA_VERSION
    tool_version: str
    created_at: str = Field(description="UTC time, ISO 8601")
    command: list[str]
    hardware: dict[str, Any] = Field(description="the full hardware profile: constants with their sources")
    kernel: str
    params: dict[str, Any]
    problem: Problem
    metrics: dict[str, float | None]
    phases_s: dict[str, float]
    utilisation: dict[str, dict[str, float]] = Field(description="busy fraction per unit kind and pipe")
    counters: dict[str, float]
    verification: Verification
    host: Host
    model: dict[str, Any] = Field(description="how the timing was obtained (extrapolation, warm L2, ...)")


def json_schema() -> dict[str, Any]:
    return RunResult.model_json_schema()


def write_schema(path: Path = SCHEMA_PATH) -> None:
    """Regenerate the shipped JSON Schema file (tests check it is up to date)."""
    path.write_text(json.dumps(json_schema(), indent=2, sort_keys=True) + "\n")
