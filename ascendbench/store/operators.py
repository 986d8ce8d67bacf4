"""The result document of the scan-based operators' runs (`run split`, `run compress`, `run sort`, `run topk`,
`run topp`, `run sample`): one generic pydantic model shared by every operator.

Units: *_s seconds, *_gbps GB/s (1e9 B/s). Non-finite floats are written as null (commands/common.dump_json).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ascendbench.store.schema import Host

__all__ = [
    "OPERATOR_SCHEMA_PATH",
    "OPERATOR_SCHEMA_VERSION",
    "OperatorProblem",
    "OperatorRunResult",
    "OperatorSimulated",
    "OperatorVerification",
    "write_operator_schema",
]

OPERATOR_SCHEMA_VERSION = 1
OPERATOR_SCHEMA_PATH = Path(__file__).with_name("operator_result.schema.json")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class OperatorProblem(_Model):
    """What was computed: the operator, its size, the dtypes of its arrays and its parameters."""

    operator: str = Field(description="split, compress, sort, topk, topp, sample, ...")
    n: int = Field(ge=0, description="elements per row (the input length for 1-D operators)")
    dtypes: dict[str, str] = Field(description="array name -> dtype, inputs and outputs (e.g. values: float16)")
    params: dict[str, Any] = Field(description="operator parameters (k, p, descending, samples, ...)")
    data: Literal["generated", "file", "none"]
    seed: int | None = Field(None, description="seed of the generated input (and of samplers' draws)")
    input_file: str | None = None
    input_sha256: str | None = Field(None, description="SHA-256 of the input file's bytes")
    offset_type: Literal["int32", "int64"] | None = Field(
        None, description="type of the global offsets by CUB's rule: int32 while n <= 2**31 - 1, else int64")
    index_type: str | None = Field(None, description="dtype of the index output (int32, int64 beyond 2**31 - 1; "
                                                     "the simulated traffic moves indices of this width); null "
                                                     "without an index output")


class OperatorSimulated(_Model):
    """What the simulated machine reports for the chosen variant."""

    variant: str
    time_s: float
    bandwidth_gbps: float | None = Field(description="bytes the operator must read and write once / time; the "
                                                     "bytes counted are stated in `bandwidth_bytes`")
    bandwidth_bytes: float = Field(ge=0)
    phases_s: dict[str, float]
    counters: dict[str, float]
    utilisation: dict[str, dict[str, float]] = Field(default_factory=dict)
    baseline: dict[str, Any] | None = Field(None, description="the paper's baseline on the same problem: variant, "
                                                              "time_s, speedup (baseline time / this time)")


class OperatorVerification(_Model):
    """Check of the functional output against the NumPy reference."""

    performed: bool
    passed: bool | None = None
    reference: str | None = Field(None, description="what the output was compared with")
    detail: str | None = None


class OperatorRunResult(_Model):
    """One operator run."""

    schema_version: Literal[1] = OPERATOR_SCHEMA_VERSION
    tool_version: str
    created_at: str = Field(description="UTC time, ISO 8601")
    command: list[str]
    hardware: dict[str, Any] = Field(description="the full hardware profile: constants with their sources")
    problem: OperatorProblem
    simulated: OperatorSimulated
    outputs: dict[str, Any] = Field(default_factory=dict, description="small scalar outputs (n_true, count, ...)")
    verification: OperatorVerification
    host: Host
    model: dict[str, Any] = Field(default_factory=dict, description="how the timing was obtained")
    notes: list[str] = Field(default_factory=list, description="what the run generated, converted or left out "
                                                               "(e.g. flags generated for a values-only input)")


def write_operator_schema(path: Path = OPERATOR_SCHEMA_PATH) -> None:
    """Regenerate the shipped JSON Schema file (a test checks it is up to date)."""
    path.write_text(json.dumps(OperatorRunResult.model_json_schema(), indent=2, sort_keys=True) + "\n")
