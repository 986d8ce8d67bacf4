"""Named HGEMM workloads as data (`hgemm.toml`): lists of M x N x K shapes with a batch, each with its source.

Shapes come from the HGEMM paper ("Efficient Low-Precision GEMM on Ascend NPU"): §1 (Llama-2 Q x K^T), §4.2.3
Fig 6 (equal-flop shapes), §5.2 (5000 random shapes), §5.3 (HPL-MxP), §5.4 Table 5 (OPT FFN). Where the paper
gives ranges but no list, the file says which sampling is ours.
"""

from __future__ import annotations

import itertools
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic_core import PydanticCustomError

__all__ = ["WORKLOADS_FILE", "Workload", "list_workloads", "load_workload"]

WORKLOADS_FILE = "hgemm.toml"
_FORMS = ("shapes", "grid", "random")


class WorkloadError(ValueError):
    """An unknown workload name, or a workloads file that cannot be read or is malformed (names file, key)."""


@dataclass(frozen=True)
class Workload:
    """A named list of GEMM problems.

    name: the workload's name (its table in the TOML file).
    description: what the shapes are.
    source: where they come from (paper section, table or figure; whether the sampling is ours).
    shapes: (M, N, K, batch) tuples of Python ints, each >= 1, in the file's order.
    """

    name: str
    description: str
    source: str
    shapes: tuple[tuple[int, int, int, int], ...]


def _read(path: str | None) -> tuple[str, dict[str, Any]]:
    """(label, parsed TOML) of the shipped file (path None, read once) or of a user's file (every call)."""
    if path is None:
        return _read_shipped()
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise WorkloadError(f"--workload: cannot read {path}: {exc.strerror}") from None
    return path, _parse(raw, path)


@lru_cache(maxsize=1)
def _read_shipped() -> tuple[str, dict[str, Any]]:
    raw = (resources.files("ascendbench.workloads") / WORKLOADS_FILE).read_bytes()
    return WORKLOADS_FILE, _parse(raw, WORKLOADS_FILE)


def _parse(raw: bytes, label: str) -> dict[str, Any]:
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise WorkloadError(f"--workload: {label} is not valid TOML: {exc}") from None


def list_workloads(path: str | Path | None = None) -> list[str]:
    """Names of the workloads, in the file's order.

    Args:
        path: a workloads TOML file; None for the shipped `ascendbench/workloads/hgemm.toml`.

    Raises:
        WorkloadError (a ValueError): the file cannot be read or is not valid TOML.
    """
    _, data = _read(None if path is None else str(path))
    return [name for name, value in data.items() if isinstance(value, dict)]


def load_workload(name: str, path: str | Path | None = None) -> Workload:
    """The workload `name`, with its shapes expanded (grids multiplied out, random shapes generated).

    Args:
        name: a name from `list_workloads()`.
        path: a workloads TOML file; None for the shipped one.

    Returns:
        The Workload; the same shapes on every call (random shapes come from the file's seed).

    Raises:
        WorkloadError (a ValueError): an unknown name ("--workload: unknown workload 'x'; choose from
            ..."), or a malformed entry, whose message names the file, the key and what it allows (e.g.
            "hgemm.toml: [fig6].shapes[1][2]: expected an integer >= 1, got 0").
    """
    label, data = _read(None if path is None else str(path))
    entry = data.get(name)
    if not isinstance(entry, dict):
        choices = ", ".join(list_workloads(path))
        raise WorkloadError(f"--workload: unknown workload {name!r}; choose from {choices}")
    try:
        checked = _Entry.model_validate(entry)
    except ValidationError as exc:
        raise WorkloadError(_message(exc.errors()[0], f"{label}: [{name}]")) from None
    return Workload(name, checked.description, checked.source,
                    tuple((m, n, k, checked.batch) for m, n, k in checked.triples()))


# The file's entries as pydantic models: strict types (no bool for an int, no number for a string), unknown
# keys refused; the rules that tie several keys together are validators that name the key they are about.
PositiveInt = Annotated[int, Field(ge=1)]
IntList = Annotated[list[PositiveInt], Field(min_length=1)]
Triple = Annotated[list[PositiveInt], Field(min_length=3, max_length=3)]
NonBlank = Annotated[str, Field(pattern=r"\S")]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


def _keyed(key: str, message: str) -> PydanticCustomError:
    """A rule's error about one key of the model (its location then ends in .key)."""
    return PydanticCustomError("rule", message, {"key": key})


class _Grid(_Model):
    m: IntList | None = None
    n: IntList | None = None
    k: IntList
    m_equals_n: IntList | None = None

    @model_validator(mode="after")
    def _one_form(self) -> _Grid:
        if self.m_equals_n is not None and (self.m is not None or self.n is not None):
            raise _keyed("m_equals_n", "give either m_equals_n or m and n, not both")
        for key in ("m", "n"):
            if self.m_equals_n is None and getattr(self, key) is None:
                raise _keyed(key, "expected a non-empty list of integers >= 1, got None")
        return self

    def triples(self) -> list[tuple[int, int, int]]:
        if self.m_equals_n is not None:
            return [(mn, mn, k) for mn in self.m_equals_n for k in self.k]
        return list(itertools.product(self.m, self.n, self.k))


class _Random(_Model):
    seed: Annotated[int, Field(ge=0)]
    count: PositiveInt
    low: PositiveInt
    high: PositiveInt

    @model_validator(mode="after")
    def _ordered(self) -> _Random:
        if self.high < self.low:
            raise _keyed("high", f"must be at least low ({self.low}), got {self.high}")
        return self

    def triples(self) -> list[tuple[int, int, int]]:
        import numpy as np

        rows = np.random.default_rng(self.seed).integers(self.low, self.high + 1, size=(self.count, 3))  # inclusive
        return [(int(m), int(n), int(k)) for m, n, k in rows.tolist()]


class _Entry(_Model):
    description: NonBlank
    source: NonBlank
    batch: PositiveInt = 1
    shapes: Annotated[list[Triple], Field(min_length=1)] | None = None
    grid: _Grid | None = None
    random: _Random | None = None

    @model_validator(mode="after")
    def _one_form(self) -> _Entry:
        given = [key for key in _FORMS if getattr(self, key) is not None]
        if len(given) != 1:
            raise PydanticCustomError("rule", "needs exactly one of {forms}, got {given}",
                                      {"forms": ", ".join(_FORMS), "given": ", ".join(given) or "none"})
        return self

    def triples(self) -> list[tuple[int, int, int]]:
        if self.shapes is not None:
            return [(m, n, k) for m, n, k in self.shapes]
        return (self.grid or self.random).triples()


# what each table of an entry holds (for "unknown key" and "expected a table" messages)
_KEYS = {(): "description, source, batch and one of " + ", ".join(_FORMS), ("grid",): "m, n, k or m_equals_n, k",
         ("random",): "seed, count, low, high"}


def _message(error: dict[str, Any], where: str) -> str:
    """One pydantic error as "<file>: [name].key[i]: what was expected, got what"."""
    loc, kind = tuple(error["loc"]), error["type"]
    value = None if kind == "missing" else error.get("input")  # a missing key reads as None, as in TOML
    key = (error.get("ctx") or {}).get("key")
    place = where + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in (*loc, *([key] if key else [])))
    if kind == "rule":
        return f"{place}: {error['msg']}"
    if kind == "extra_forbidden":
        return f"{place}: unknown key; expected {_KEYS.get(loc[:-1], '')}"
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return f"{place}: expected a table with {_KEYS.get(loc, '')}, got {value!r}"
    if loc and loc[0] in ("description", "source"):
        return f"{place}: expected a non-empty string, got {value!r}"
    if loc == ("shapes",):
        return f"{place}: expected a non-empty list of [M, N, K], got {value!r}"
    if len(loc) == 2 and loc[0] == "shapes" and kind in ("list_type", "too_short", "too_long"):
        return f"{place}: expected [M, N, K], got {value!r}"
    if kind in ("list_type", "too_short") or (loc[:1] == ("grid",) and len(loc) == 2):
        return f"{place}: expected a non-empty list of integers >= 1, got {value!r}"
    return f"{place}: expected an integer >= {0 if loc[-1] == 'seed' else 1}, got {value!r}"
