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
from typing import Any

import numpy as np

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
            ..."), or a malformed entry, whose message names the file and the key (e.g.
            "hgemm.toml: [fig6].shapes[1]: expected an integer >= 1, got 0").
    """
    label, data = _read(None if path is None else str(path))
    entry = data.get(name)
    if not isinstance(entry, dict):
        choices = ", ".join(list_workloads(path))
        raise WorkloadError(f"--workload: unknown workload {name!r}; choose from {choices}")
    where = f"{label}: [{name}]"
    description = _text(entry, "description", where)
    source = _text(entry, "source", where)
    batch = _positive(entry.get("batch", 1), f"{where}.batch")
    unknown = sorted(set(entry) - {"description", "source", "batch", *_FORMS})
    if unknown:
        raise WorkloadError(f"{where}.{unknown[0]}: unknown key; expected description, source, batch and "
                            f"one of {', '.join(_FORMS)}")
    forms = [key for key in _FORMS if key in entry]
    if len(forms) != 1:
        given = ", ".join(forms) or "none"
        raise WorkloadError(f"{where}: needs exactly one of {', '.join(_FORMS)}, got {given}")
    form = forms[0]
    if form == "shapes":
        triples = _explicit(entry["shapes"], f"{where}.shapes")
    elif form == "grid":
        triples = _grid(entry["grid"], f"{where}.grid")
    else:
        triples = _random(entry["random"], f"{where}.random")
    return Workload(name, description, source, tuple((m, n, k, batch) for m, n, k in triples))


def _text(entry: dict, key: str, where: str) -> str:
    value = entry.get(key)
    if not isinstance(value, str) or not value.strip():
        raise WorkloadError(f"{where}.{key}: expected a non-empty string, got {value!r}")
    return value


def _positive(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise WorkloadError(f"{where}: expected an integer >= 1, got {value!r}")
    return value


def _int_list(value: Any, where: str) -> list[int]:
    if not isinstance(value, list) or not value:
        raise WorkloadError(f"{where}: expected a non-empty list of integers >= 1, got {value!r}")
    return [_positive(v, f"{where}[{i}]") for i, v in enumerate(value)]


def _explicit(value: Any, where: str) -> list[tuple[int, int, int]]:
    if not isinstance(value, list) or not value:
        raise WorkloadError(f"{where}: expected a non-empty list of [M, N, K], got {value!r}")
    triples = []
    for i, row in enumerate(value):
        if not isinstance(row, list) or len(row) != 3:
            raise WorkloadError(f"{where}[{i}]: expected [M, N, K], got {row!r}")
        m, n, k = (_positive(v, f"{where}[{i}]") for v in row)
        triples.append((m, n, k))
    return triples


def _grid(value: Any, where: str) -> list[tuple[int, int, int]]:
    if not isinstance(value, dict):
        raise WorkloadError(f"{where}: expected a table with m, n, k (or m_equals_n, k), got {value!r}")
    allowed = {"m", "n", "k", "m_equals_n"}
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise WorkloadError(f"{where}.{unknown[0]}: unknown key; expected m, n, k or m_equals_n, k")
    k_values = _int_list(value.get("k"), f"{where}.k")
    if "m_equals_n" in value:
        if "m" in value or "n" in value:
            raise WorkloadError(f"{where}.m_equals_n: give either m_equals_n or m and n, not both")
        return [(mn, mn, k) for mn in _int_list(value["m_equals_n"], f"{where}.m_equals_n") for k in k_values]
    m_values = _int_list(value.get("m"), f"{where}.m")
    n_values = _int_list(value.get("n"), f"{where}.n")
    return list(itertools.product(m_values, n_values, k_values))


def _random(value: Any, where: str) -> list[tuple[int, int, int]]:
    if not isinstance(value, dict):
        raise WorkloadError(f"{where}: expected a table with seed, count, low, high, got {value!r}")
    unknown = sorted(set(value) - {"seed", "count", "low", "high"})
    if unknown:
        raise WorkloadError(f"{where}.{unknown[0]}: unknown key; expected seed, count, low, high")
    seed = value.get("seed")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise WorkloadError(f"{where}.seed: expected an integer >= 0, got {seed!r}")
    count = _positive(value.get("count"), f"{where}.count")
    low = _positive(value.get("low"), f"{where}.low")
    high = _positive(value.get("high"), f"{where}.high")
    if high < low:
        raise WorkloadError(f"{where}.high: must be at least low ({low}), got {high}")
    rows = np.random.default_rng(seed).integers(low, high + 1, size=(count, 3))  # high inclusive
    return [(int(m), int(n), int(k)) for m, n, k in rows.tolist()]
