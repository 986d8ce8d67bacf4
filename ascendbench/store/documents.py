"""Every result document ascendbench writes, as one pydantic discriminated union over the result models.

A document's kind is read from its own fields (`kind` for tuning, validation and figure documents, `kernel` for
runs, an `operator` problem for the scan-based operators) and the document is then validated against that
kind's model, so that `results list|show|compare` read files the way they were written, not by guessing.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, TypeAdapter, ValidationError

from ascendbench.store.correlation import CorrelationResult, write_correlate_schemas
from ascendbench.store.operators import OperatorRunResult, write_operator_schema
from ascendbench.store.rows import BatchedScanResult, SegmentedScanResult, write_row_schemas
from ascendbench.store.schema import (
    HGEMM_SCHEMA_PATH,
    SCHEMA_PATH,
    TUNING_SCHEMA_PATH,
    HgemmRunResult,
    RunResult,
    TuningResult,
    write_schema,
)
from ascendbench.store.validation import ValidationResult, write_validation_schema

__all__ = ["FIGURE_SCHEMA_VERSION", "RESULT_MODELS", "FigureResult", "ResultDocument", "parse_result", "result_kind", "write_schemas"]


# 2: values in the unit their axis label names (SI prefix per axis), each series' "unit", the papers' values as
# series with their claim IDs and a "paper" entry (reference/figures.py)
FIGURE_SCHEMA_VERSION = 2


class FigureResult(BaseModel):
    """One `ascendbench reproduce` data file: the plotted data of a figure (reference/figures.py)."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[FIGURE_SCHEMA_VERSION] = FIGURE_SCHEMA_VERSION
    kind: Literal["figure"] = "figure"
    figure: str
    paper: str
    caption: str
    source: str
    tool_version: str
    created_at: str
    hardware: list[str] = Field(description="names of the hardware profiles used")
    compute_time_s: float
    data: dict[str, Any]


# kind -> model; the kinds `results list` prints
RESULT_MODELS: dict[str, type[BaseModel]] = {
    "scan": RunResult, "hgemm": HgemmRunResult, "batched-scan": BatchedScanResult,
    "segmented-scan": SegmentedScanResult, "operator": OperatorRunResult, "tuning": TuningResult,
    "validation": ValidationResult, "figure": FigureResult, "correlation": CorrelationResult,
}
_KIND_OF_MODEL = {model: kind for kind, model in RESULT_MODELS.items()}


def result_kind(doc: Any) -> str | None:
    """The kind of a result document (a key of RESULT_MODELS), from the fields that name it; None for what is
    not a JSON object. A document of no known kind is taken as a scan run (the model then says what is wrong)."""
    if isinstance(doc, BaseModel):
        return _KIND_OF_MODEL.get(type(doc))
    if not isinstance(doc, dict):
        return None
    if doc.get("kind") in ("tuning", "validation", "figure", "correlation"):
        return doc["kind"]
    kernel = doc.get("kernel")
    if kernel == "hgemm":
        return "hgemm"
    if isinstance(kernel, str) and kernel.startswith("batched-"):
        return "batched-scan"
    if kernel == "segmented-scan":
        return "segmented-scan"
    problem = doc.get("problem")
    if kernel is None and isinstance(problem, dict) and "operator" in problem:
        return "operator"
    return "scan"


ResultDocument = Annotated[
    Annotated[RunResult, Tag("scan")] | Annotated[HgemmRunResult, Tag("hgemm")]
    | Annotated[BatchedScanResult, Tag("batched-scan")] | Annotated[SegmentedScanResult, Tag("segmented-scan")]
    | Annotated[OperatorRunResult, Tag("operator")] | Annotated[TuningResult, Tag("tuning")]
    | Annotated[ValidationResult, Tag("validation")] | Annotated[FigureResult, Tag("figure")]
    | Annotated[CorrelationResult, Tag("correlation")],
    Discriminator(result_kind, custom_error_type="not_a_result",
                  custom_error_message="not a JSON object (a result document is one)"),
]
_ADAPTER: TypeAdapter[Any] = TypeAdapter(ResultDocument)


def parse_result(doc: Any) -> BaseModel:
    """Validate a decoded JSON document as the result model of its kind (RunResult, HgemmRunResult, ...).
    Raises ValueError with one line: the kind and the first problem found (field path: message)."""
    try:
        return _ADAPTER.validate_python(doc)
    except ValidationError as exc:
        first = exc.errors()[0]
        # the union's tag leads each path: drop it, the message names the kind instead
        where = ".".join(str(p) for p in first["loc"][1:]) or "document"
        kind = result_kind(doc)
        what = f"a valid {kind} result" if kind else "a result"
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise ValueError(f"not {what}: {where}: {first['msg']}{more}") from None


def write_schemas() -> None:
    """Regenerate every shipped JSON Schema file (tests check they are up to date)."""
    import json

    write_schema(SCHEMA_PATH)
    for path, model in ((HGEMM_SCHEMA_PATH, HgemmRunResult), (TUNING_SCHEMA_PATH, TuningResult)):
        path.write_text(json.dumps(model.model_json_schema(), indent=2, sort_keys=True) + "\n")
    write_row_schemas()
    write_operator_schema()
    write_validation_schema()
    write_correlate_schemas()
