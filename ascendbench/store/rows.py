"""Result documents of the scans over many rows: `run batched-scan` and `run segmented-scan` (pydantic models,
versioned; JSON Schema files generated from them next to this module)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ascendbench.store.schema import Host, Verification

__all__ = [
    "BATCHED_SCHEMA_PATH",
    "ROWS_SCHEMA_VERSION",
    "SEGMENTED_SCHEMA_PATH",
    "BatchedProblem",
    "BatchedScanResult",
    "SegmentedProblem",
    "SegmentedScanResult",
    "write_row_schemas",
]

ROWS_SCHEMA_VERSION = 1
BATCHED_SCHEMA_PATH = Path(__file__).with_name("batched_scan_result.schema.json")
SEGMENTED_SCHEMA_PATH = Path(__file__).with_name("segmented_scan_result.schema.json")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class BatchedProblem(_Model):
    """A batched scan: `batch` rows of `length` elements, each scanned along the last axis."""

    batch: int = Field(ge=0)
    length: int = Field(ge=0)
    dtype: Literal["fp16", "int8"]
    out_dtype: Literal["fp32", "int32"]
    exclusive: bool
    seed: int | None = Field(
        None, description="seed of the generated input; null for --input or --model-only"
    )
    input_file: str | None = None
    input_sha256: str | None = Field(None, description="SHA-256 of the input file's bytes")
    data: Literal["generated", "file", "none"] = Field(description="'none' for --model-only runs")


class BatchedScanResult(_Model):
    """One `ascendbench run batched-scan` result. `algorithm` is what was asked (auto included), `kernel` the
    algorithm that ran; `candidates_time_s` the simulated time of every algorithm auto compared."""

    schema_version: Literal[1] = ROWS_SCHEMA_VERSION
    tool_version: str
    created_at: str = Field(description="UTC time, ISO 8601")
    command: list[str]
    hardware: dict[str, Any] = Field(description="the full hardware profile: constants with their sources")
    kernel: Literal["batched-scanu", "batched-scanul1", "batched-vector"]
    algorithm: Literal["scanu", "scanul1", "auto", "vector"]
    candidates_time_s: dict[str, float]
    params: dict[str, Any]
    problem: BatchedProblem
    metrics: dict[str, float | None]
    phases_s: dict[str, float]
    utilisation: dict[str, dict[str, float]]
    counters: dict[str, float]
    verification: Verification
    host: Host
    model: dict[str, Any]


class SegmentedProblem(_Model):
    """A segmented scan: n values, n head flags (a non-zero flag starts a segment; element 0 always does)."""

    n: int = Field(ge=0)
    segments: int = Field(ge=0, description="number of segments (heads, counting element 0)")
    dtype: Literal["fp16", "int8"]
    out_dtype: Literal["fp32", "int32"]
    exclusive: bool
    flags: Literal["file", "segment-length", "random"] = Field(
        description="where the flags came from: the --input .npz, every --segment-length elements, or seeded "
        "random heads"
    )
    segment_length: int | None = None
    seed: int | None = None
    input_file: str | None = None
    input_sha256: str | None = None
    data: Literal["generated", "file", "none"]


class SegmentedScanResult(_Model):
    """One `ascendbench run segmented-scan` result; phases_s per kernel of the sequence."""

    schema_version: Literal[1] = ROWS_SCHEMA_VERSION
    tool_version: str
    created_at: str
    command: list[str]
    hardware: dict[str, Any]
    kernel: Literal["segmented-scan"] = "segmented-scan"
    algorithm: str
    params: dict[str, Any]
    problem: SegmentedProblem
    metrics: dict[str, float | None]
    phases_s: dict[str, float]
    utilisation: dict[str, dict[str, float]]
    counters: dict[str, float]
    verification: Verification
    host: Host
    model: dict[str, Any]


def write_row_schemas() -> None:
    """Regenerate the shipped JSON Schema files of the two documents (a test checks they are up to date)."""
    for model, path in (
        (BatchedScanResult, BATCHED_SCHEMA_PATH),
        (SegmentedScanResult, SEGMENTED_SCHEMA_PATH),
    ):
        path.write_text(json.dumps(model.model_json_schema(), indent=2, sort_keys=True) + "\n")
