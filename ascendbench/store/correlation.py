"""`ascendbench correlate`: the measurements file it reads and the result document it writes (pydantic models;
the JSON Schemas correlate_input.schema.json and correlate_result.schema.json are generated from them, and a
test checks that the shipped files are up to date).

Errors are fractions, not percent: error = simulated / measured - 1. Times of rows in microseconds (`*_us`), as
the measurements are given. Non-finite floats are written as null (commands/common.dump_json).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "CORRELATE_INPUT_SCHEMA_PATH",
    "CORRELATE_SCHEMA_PATH",
    "CORRELATE_SCHEMA_VERSION",
    "CorrelationResult",
    "ErrorSummary",
    "FitResult",
    "MeasurementRow",
    "write_correlate_schemas",
]

CORRELATE_SCHEMA_VERSION = 1
CORRELATE_SCHEMA_PATH = Path(__file__).with_name("correlate_result.schema.json")
CORRELATE_INPUT_SCHEMA_PATH = Path(__file__).with_name("correlate_input.schema.json")

Cell = int | float | str | bool | None


class MeasurementRow(BaseModel):
    """One measured run: a line of a JSON Lines file, or a row of a CSV file (whose cells are text: counts take
    the CLI's forms, 2**20 or 1e6; an empty cell is the kernel's default, as null is here). Every other key is
    a parameter of the kernel, named as `ascendbench.run` names it (n, algorithm, s, chunk (auto, off or a
    count), blocks, dtype, out_dtype, exclusive, m, n, k, m0, variant, ...: `ascendbench kernels` lists the
    kernels, `ascendbench run KERNEL --help` their parameters)."""

    model_config = ConfigDict(extra="allow", title="ascendbench correlate measurement row")
    __pydantic_extra__: dict[str, Cell] = Field(init=False)

    kernel: str = Field(description="a registry kernel name (`ascendbench kernels`): scan, hgemm, sort, ...")
    measured_us: float | str = Field(description="the measured time in microseconds (> 0)")
    window: Literal["kernel", "host"] | None = Field(
        None, description="kernel (default): device time of the kernel alone, as msprof's op summary reports it; "
                          "host: the whole host call around one launch, as the scan paper's profiling script times "
                          "it (the modelled host steps of the kernel's wrapper are added to the simulated kernel)")
    label: str | None = Field(None, description="free text naming the row in the report")
    hardware: str | None = Field(None, description="profile name or .toml path for this row (default: --hardware, "
                                                   "else the kernel's paper's chip)")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)


class RowResult(_Model):
    """One row of the file with what the simulator gives for it."""

    row: int = Field(ge=1, description="data row number in the file (1: the first row after a CSV's header)")
    kernel: str
    label: str | None = None
    hardware: str = Field(description="profile the row was simulated on")
    window: Literal["kernel", "host"]
    params: dict[str, Any] = Field(description="the row's own parameter columns, as given (empty ones left out)")
    measured_us: float
    status: Literal["ok", "refused"]
    reason: str | None = Field(None, description="why the kernel refused the row (left out of the statistics)")
    simulated_us: float | None = Field(None, description="simulated time of the window: kernel + window_us")
    kernel_us: float | None = Field(None, description="simulated kernel time alone")
    window_us: float = Field(0.0, description="modelled host steps around the kernel (0 for window = kernel)")
    ratio: float | None = Field(None, description="simulated_us / measured_us")


class ErrorSummary(_Model):
    """Errors |simulated / measured - 1| of the rows simulated, as fractions."""

    count: int
    mape: float | None = Field(description="mean absolute error (fraction)")
    median_abs_error: float | None
    p90_abs_error: float | None = Field(description="90th percentile (linear interpolation)")
    max_abs_error: float | None


class Summary(ErrorSummary):
    refused: int = Field(description="rows the kernel refused (not counted)")
    by_kernel: dict[str, ErrorSummary]


class _Group(_Model):
    """Rows compared together: one kernel, one profile, one window."""

    kernel: str
    hardware: str
    window: Literal["kernel", "host"]


class Marginal(_Group):
    """Consecutive sizes of rows that differ only in their size: differences cancel any fixed cost."""

    fixed: dict[str, Any] = Field(description="the parameters the rows share (the size left out)")
    size_field: str
    from_size: int
    to_size: int
    rows: list[int] = Field(description="row numbers at the two sizes")
    measured_delta_us: float
    simulated_delta_us: float
    ratio: float | None = Field(description="simulated_delta_us / measured_delta_us (null when the measured "
                                            "difference is 0)")


class Ranking(_Group):
    """Rows of one problem in several configurations: does the model rank them as the measurements do?"""

    problem: dict[str, Any] = Field(description="the parameters the configurations share")
    configurations: int
    rows: list[int]
    kendall_tau: float | None = Field(description="Kendall's tau-b between measured and simulated times (null "
                                                  "when either side is all ties)")
    model_pick: dict[str, Any] = Field(description="the configuration the model ranks fastest")
    measured_best: dict[str, Any] = Field(description="the configuration measured fastest")
    regret: float = Field(description="measured time of the model's pick / the measured best - 1: what tuning "
                                      "on the model loses")


class Flag(_Model):
    """A measured time below what the profile's rates allow for the work of the row."""

    row: int
    kernel: str
    kind: Literal["below-physical-bound"]
    measured_us: float
    bound_us: float
    detail: str


class FittedConstant(_Model):
    before: float
    after: float


class FitResult(_Model):
    """--fit: profile constants fitted by least squares on log(simulated / measured), with K-fold
    cross-validation (errors: mean absolute, fractions)."""

    hardware: str
    constants: dict[str, FittedConstant]
    rows: int
    folds: int
    fit_error_before: float
    fit_error_after: float
    cv_error_before: float = Field(description="held-out rows, the profile as given")
    cv_error_after: float = Field(description="held-out rows, constants fitted on the other folds")
    accepted: bool = Field(description="false when the cross-validated error got worse (nothing written)")
    reason: str | None = None
    profile_written: str | None = Field(None, description="--write-profile file")


class CorrelationResult(_Model):
    """One `ascendbench correlate` run (results/correlate/...)."""

    schema_version: Literal[1] = CORRELATE_SCHEMA_VERSION
    kind: Literal["correlation"] = "correlation"
    tool_version: str
    created_at: str = Field(description="UTC time, ISO 8601")
    command: list[str]
    measurements: dict[str, Any] = Field(description="the file: name, sha256, rows")
    hardware: dict[str, dict[str, Any]] = Field(description="profiles used, name -> constants with sources")
    rows: list[RowResult]
    summary: Summary
    marginal: list[Marginal]
    ranking: list[Ranking]
    flags: list[Flag]
    fit: FitResult | None = None
    wall_time_s: float


def write_correlate_schemas() -> None:
    """Regenerate the shipped JSON Schema files (a test checks they are up to date)."""
    for path, model in ((CORRELATE_SCHEMA_PATH, CorrelationResult), (CORRELATE_INPUT_SCHEMA_PATH, MeasurementRow)):
        path.write_text(json.dumps(model.model_json_schema(), indent=2, sort_keys=True) + "\n")
