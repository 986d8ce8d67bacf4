"""Measured kernel times against the simulator (`ascendbench correlate`): pure functions, no CLI.

    >>> from ascendbench.correlate import read_measurements, correlate
    >>> doc = correlate(read_measurements("docs/correlate/sample_measurements.csv"))
    >>> doc.summary.mape

Steps: read and validate the file (`read_measurements`: every row's kernel, parameters (the kernel's Params
model: the single source of names, ranges and defaults), measured time, window and profile; a bad row is a
MeasurementError naming the row and the column) -> simulate each row once (`RowSimulator`: the kernel's timing
model through the registry contract, `KernelSpec.simulate`, as `ascendbench.run --model-only` and the tuner time
it; for `window = host` rows the modelled host steps of the kernel's wrapper, sim/host.py) -> per-row ratio and
the statistics, marginal costs, rank agreement and physical checks -> optionally `fit_constants`: profile
constants fitted by least squares on log(simulated / measured) with K-fold cross-validation.

Errors are fractions: error = simulated / measured - 1.
"""

from __future__ import annotations

import contextlib
import csv
import difflib
import functools
import hashlib
import json
import math
import time
import types
import typing
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ascendbench import __version__
from ascendbench.hardware import HardwareProfile, load_profile
from ascendbench.hardware.profile import _AT_MOST_ONE, HardwareError, _constant_fields
from ascendbench.kernels.base import BufferCapacityError, ParamError
from ascendbench.kernels.contract import KernelParams, KernelSpec
from ascendbench.kernels.registry import REGISTRY
from ascendbench.processes import imap_in_workers, usable_cores
from ascendbench.sim.host import WRAPPERS, measured_window, scan_wrapper
from ascendbench.store.correlation import (
    CorrelationResult,
    ErrorSummary,
    FitResult,
    Flag,
    Marginal,
    Ranking,
    RowResult,
    Summary,
)

__all__ = ["FitError", "Measurement", "MeasurementError", "Point", "RowSimulator", "correlate", "error_summary",
           "fit_constants", "fittable_constants", "kendall_tau_b", "marginal_costs", "physical_bound_s",
           "rank_agreement", "read_measurements", "profile_toml"]

# the Jacobian's forward step in log(value): 1% (simulated times are in whole cycles, a smaller step can
# land within one cycle and see no change)
_STEP = 0.01
# measured times a row may give, in microseconds: one nanosecond (a ratio beyond this is no measurement) to
# a million seconds; outside it a ratio overflows or means nothing
MEASURED_RANGE_US = (1e-3, 1e12)
# from this many rows a fit runs its K + 1 fits in worker processes (below, starting them costs more than it saves)
PARALLEL_FIT_ROWS = 20
RESERVED = ("kernel", "measured_us", "window", "label", "hardware")
JSON_LINES = (".jsonl", ".ndjson", ".json")
Progress = Callable[[str, int, int], None]


class MeasurementError(ValueError):
    """A bad measurements file: one line naming the row (1 = the first data row) and the column."""

    def __init__(self, row: int | None, column: str | None, message: str) -> None:
        where = ", ".join(p for p in (f"row {row}" if row is not None else "",
                                      f"column {column}" if column else "") if p)
        super().__init__(f"{where}: {message}" if where else message)
        self.row, self.column = row, column


class FitError(ValueError):
    """--fit cannot run: too few rows, nothing to fit, an unknown or unfittable constant (one line)."""


@dataclass(frozen=True)
class Measurement:
    """One validated row: `columns` are its own parameter columns (JSON-ready), `params` the kernel's model of
    them with the defaults filled in, `hw` the profile it runs on."""

    row: int
    kernel: str
    measured_us: float
    window: Literal["kernel", "host"]
    label: str | None
    hw: HardwareProfile
    columns: dict[str, Any]
    params: KernelParams

    @property
    def spec(self) -> KernelSpec:
        return REGISTRY[self.kernel]

    @functools.cached_property
    def key(self) -> tuple[str, str]:
        """What the kernel's simulation depends on besides the profile (computed once: a fit looks it up for
        every row of every evaluation)."""
        return self.kernel, self.params.model_dump_json()


# ----- reading ---------------------------------------------------------------------------------------------
def _records(path: Path) -> list[dict[str, Any]]:
    """The file's rows as dicts (CSV cells are text); raises MeasurementError for an unreadable file."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise MeasurementError(None, None, f"cannot read {str(path)!r}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise MeasurementError(None, None, f"{str(path)!r} is not UTF-8 text") from None
    records: list[dict[str, Any]] = []
    if path.suffix.lower() in JSON_LINES:
        for line in text.splitlines():
            if not line.strip():
                continue
            try:
                record = json.loads(line, object_pairs_hook=_unique_keys)
            except _DuplicateKey as exc:
                raise MeasurementError(len(records) + 1, str(exc), "appears twice in the object") from None
            except json.JSONDecodeError as exc:
                raise MeasurementError(len(records) + 1, None, f"not a JSON object: {exc.msg}") from None
            if not isinstance(record, dict):
                raise MeasurementError(len(records) + 1, None, "not a JSON object")
            records.append(record)
    else:
        try:
            reader = csv.DictReader(text.splitlines())
            header = [name.strip() for name in reader.fieldnames or []]
            reader.fieldnames = header
            for name in header:
                if header.count(name) > 1:
                    raise MeasurementError(None, name, "appears twice in the header")
            for name in ("kernel", "measured_us"):
                if name not in header:
                    raise MeasurementError(None, name, f"missing from the header of {str(path)!r} (a CSV file "
                                                       "with a header row, or JSON Lines named .jsonl)"
                                                       + "".join(f" (is {c!r} meant?)" for c in
                                                                 difflib.get_close_matches(name, header, n=1)))
            for record in reader:
                if None in record:
                    raise MeasurementError(len(records) + 1, None, "more cells than the header has columns")
                records.append(record)
        except csv.Error as exc:
            raise MeasurementError(len(records) + 1, None, f"not valid CSV: {exc}") from None
    if not records:
        raise MeasurementError(None, None, f"{str(path)!r} holds no rows")
    return records


class _DuplicateKey(ValueError):
    """A JSON object names a key twice (str() is the key)."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    for key in keys:
        if keys.count(key) > 1:
            raise _DuplicateKey(key)
    return dict(pairs)


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _annotation_kinds(annotation: Any) -> tuple[set, list]:
    """The plain types and the Literal choices a parameter's annotation allows."""
    kinds: set = set()
    literals: list = []

    def walk(a: Any) -> None:
        origin = typing.get_origin(a)
        if origin is Literal:
            literals.extend(typing.get_args(a))
        elif origin in (typing.Union, types.UnionType, typing.Annotated):
            for x in typing.get_args(a) if origin is not typing.Annotated else typing.get_args(a)[:1]:
                walk(x)
        else:
            kinds.add(a)

    walk(annotation)
    return kinds, literals


_TRUE, _FALSE = ("true", "yes", "1"), ("false", "no", "0")


def _convert(spec: KernelSpec, name: str, value: Any) -> Any:
    """A cell as the parameter's type: counts in the CLI's forms (2**20, 1e6), chunk auto/off, booleans as
    true/false/yes/no/1/0, choices as written. Values of other types are left to the kernel's model."""
    from ascendbench.commands.common import CountError, parse_count

    kinds, literals = _annotation_kinds(spec.Params.model_fields[name].annotation)
    if isinstance(value, float) and int in kinds and float not in kinds and value.is_integer():
        return int(value)  # 1e6 in JSON
    if not isinstance(value, str):
        return value
    text = value.strip()
    if name == "chunk" and text.lower() in ("auto", "off"):
        return None if text.lower() == "auto" else 0
    for choice in literals:
        if str(choice).lower() == text.lower():
            return choice
    if bool in kinds and text.lower() in _TRUE + _FALSE:
        return text.lower() in _TRUE
    if int in kinds:
        try:
            return parse_count(text, name)
        except CountError as exc:
            raise ParamError(name, exc.reason) from None
    if float in kinds:
        try:
            return float(text)
        except ValueError:
            raise ParamError(name, f"must be a number, got {text!r}") from None
    return text


def _suggest(word: str, options: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(options), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _measured(value: Any, row: int) -> float:
    if _blank(value):
        raise MeasurementError(row, "measured_us", "missing (the measured time in microseconds)")
    try:
        us = float(value.strip() if isinstance(value, str) else value)
    except (TypeError, ValueError):
        raise MeasurementError(row, "measured_us", f"must be a number of microseconds, got {value!r}") from None
    if isinstance(value, bool) or not math.isfinite(us) or us <= 0:
        raise MeasurementError(row, "measured_us", f"must be a positive number of microseconds, got {value!r}")
    if not MEASURED_RANGE_US[0] <= us <= MEASURED_RANGE_US[1]:
        raise MeasurementError(row, "measured_us", f"{value!r} is outside {MEASURED_RANGE_US[0]:g} to "
                                                   f"{MEASURED_RANGE_US[1]:g} microseconds (1 ns to about 12 days)")
    return us


def _measurement(record: dict[str, Any], row: int, hardware: str | None,
                 profiles: dict[str, HardwareProfile]) -> Measurement:
    kernel = record.get("kernel")
    if _blank(kernel) or not isinstance(kernel, str):
        raise MeasurementError(row, "kernel", "missing (a kernel name: `ascendbench kernels` lists them)")
    kernel = kernel.strip()
    if kernel not in REGISTRY:
        raise MeasurementError(row, "kernel", f"unknown kernel {kernel!r}{_suggest(kernel, REGISTRY)}; "
                                              f"choose from {', '.join(REGISTRY)}")
    spec = REGISTRY[kernel]
    measured_us = _measured(record.get("measured_us"), row)
    window = "kernel" if _blank(record.get("window")) else str(record["window"]).strip().lower()
    if window not in ("kernel", "host"):
        raise MeasurementError(row, "window", f"must be kernel or host, got {record['window']!r}")
    label = None if _blank(record.get("label")) else str(record["label"]).strip()
    name = (str(record["hardware"]).strip() if not _blank(record.get("hardware"))
            else hardware or spec.default_hardware)
    if name not in profiles:
        try:
            profiles[name] = load_profile(name)
        except HardwareError as exc:
            raise MeasurementError(row, "hardware", str(exc).removeprefix("--hardware: ")) from None
    values: dict[str, Any] = {}
    fields = spec.Params.model_fields
    for column, value in record.items():
        if column in RESERVED or _blank(value):
            continue
        if column not in fields:
            raise MeasurementError(row, column, f"not a parameter of {kernel}{_suggest(column, fields)}; its "
                                                f"parameters are {', '.join(fields)}")
        try:
            values[column] = _convert(spec, column, value)
        except ParamError as exc:
            raise MeasurementError(row, column, str(exc).split(": ", 1)[1]) from None
    try:
        params = spec.params(values)
    except ParamError as exc:
        column = exc.param.replace("-", "_")
        raise MeasurementError(row, column if column in fields else None, str(exc).split(": ", 1)[1]) from None
    if getattr(params, spec.size_field) is None:
        raise MeasurementError(row, spec.size_field, "is required")
    given = params.model_dump(mode="json")
    columns = {k: given[k] for k in values}
    return Measurement(row, kernel, measured_us, window, label, profiles[name], columns, params)


def read_measurements(path: str | Path, hardware: str | HardwareProfile | None = None,
                      profiles: dict[str, HardwareProfile] | None = None) -> list[Measurement]:
    """Read and validate a measurements file (CSV with a header, or JSON Lines: .jsonl, .ndjson, .json).

    Args:
        path: the file.
        hardware: the profile of rows without a `hardware` cell (a name, a .toml path or a profile; default:
            each kernel's paper's chip).
        profiles: loaded profiles by name, filled in as rows name them (shared with the caller).

    Raises:
        MeasurementError: the first bad row (unknown kernel or parameter, a missing or non-positive
            measured_us, a value outside the kernel's range, an unknown profile, a row identical to an earlier
            one) or an unreadable file.
    """
    profiles = {} if profiles is None else profiles
    if isinstance(hardware, HardwareProfile):
        profiles[hardware.name] = hardware
        hardware = hardware.name
    records = _records(Path(path))
    seen: dict[tuple, int] = {}
    rows = []
    for row, record in enumerate(records, start=1):
        same = tuple(sorted((k, str(v).strip()) for k, v in record.items() if not _blank(v)))
        if same in seen:
            raise MeasurementError(row, None, f"identical to row {seen[same]} in every column (a duplicated row)")
        seen[same] = row
        rows.append(_measurement(record, row, hardware, profiles))
    return rows


# ----- simulating ------------------------------------------------------------------------------------------
def host_wrapper(spec: KernelSpec, params: KernelParams) -> str | None:
    """The host wrapper (sim/host.py WRAPPERS) around a kernel's launch, None where none is modelled."""
    if spec.name == "scan":
        return scan_wrapper(spec.algorithm(params), params.chunk)
    if spec.name == "batched-scan":
        return scan_wrapper("batched")
    if spec.name == "sort" and params.variant == spec.variants[0]:
        return "run_radix_sort"
    return None


class Refused(Exception):
    """The kernel (or the window model) refuses a row; str() is the reason."""


class RowSimulator:
    """Simulated times of rows, each kernel simulation done once per problem and set of kernel constants (the
    host constants `host_*` change the window only, never the kernel's program)."""

    def __init__(self) -> None:
        self.cache: dict[tuple, float | Refused] = {}
        self.simulations = 0
        self._constants: dict[int, tuple[HardwareProfile, tuple]] = {}  # id -> (profile kept alive, its key)

    def _kernel_constants(self, hw: HardwareProfile) -> tuple:
        """The constants a kernel's program depends on (not the host steps), once per profile object: a fit
        asks for them for every row of every evaluation."""
        kept = self._constants.get(id(hw))
        if kept is None or kept[0] is not hw:
            kept = self._constants[id(hw)] = (hw, tuple(v for k, v in hw.constants().items()
                                                        if not k.startswith("host_")))
        return kept[1]

    def kernel_s(self, m: Measurement, hw: HardwareProfile) -> float:
        key = (m.key, self._kernel_constants(hw))
        if key not in self.cache:
            self.simulations += 1
            try:
                m.spec.check(m.params, hw)
                self.cache[key] = float(m.spec.simulate(m.params, hw).time_s)
            except (ParamError, BufferCapacityError) as exc:
                self.cache[key] = Refused(str(exc).removeprefix("--"))  # "blocks: must be at most 20 ..."
        value = self.cache[key]
        if isinstance(value, Refused):
            raise value
        return value

    def window_s(self, m: Measurement, hw: HardwareProfile) -> float:
        if m.window == "kernel":
            return 0.0
        wrapper = host_wrapper(m.spec, m.params)
        if wrapper is None:
            raise Refused(f"no host window is modelled for {m.kernel}"
                          + (f" variant {m.params.variant}" if "variant" in m.spec.Params.model_fields else "")
                          + "; give window = kernel (the device time)")
        return measured_window(hw, wrapper, 0.0).host_s

    def time_us(self, m: Measurement, hw: HardwareProfile) -> tuple[float, float]:
        """(simulated kernel, window term) in microseconds. Raises Refused."""
        return self.kernel_s(m, hw) * 1e6, self.window_s(m, hw) * 1e6


def simulate_rows(measurements: Sequence[Measurement], simulator: RowSimulator | None = None,
                  progress: Progress | None = None) -> list[RowResult]:
    """Every row with its simulated time and ratio (or refused, with the kernel's reason)."""
    simulator = simulator or RowSimulator()
    results = []
    for i, m in enumerate(measurements):
        base = dict(row=m.row, kernel=m.kernel, label=m.label, hardware=m.hw.name, window=m.window,
                    params=m.columns, measured_us=m.measured_us)
        try:
            kernel_us, window_us = simulator.time_us(m, m.hw)
        except Refused as exc:
            results.append(RowResult(**base, status="refused", reason=str(exc)))
        else:
            simulated = kernel_us + window_us
            results.append(RowResult(**base, status="ok", simulated_us=simulated, kernel_us=kernel_us,
                                     window_us=window_us, ratio=simulated / m.measured_us))
        if progress is not None:
            progress("simulating rows", i + 1, len(measurements))
    return results


# ----- statistics ------------------------------------------------------------------------------------------
def _percentile(ordered: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) of sorted values, linear interpolation (NumPy's default)."""
    pos = (len(ordered) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def error_summary(ratios: Iterable[float]) -> ErrorSummary:
    """count, mean, median, 90th percentile and worst of |ratio - 1| (fractions; None without rows)."""
    errors = sorted(abs(r - 1) for r in ratios)
    if not errors:
        return ErrorSummary(count=0, mape=None, median_abs_error=None, p90_abs_error=None, max_abs_error=None)
    return ErrorSummary(count=len(errors), mape=sum(errors) / len(errors), median_abs_error=_percentile(errors, 50),
                        p90_abs_error=_percentile(errors, 90), max_abs_error=errors[-1])


def summarize(rows: Sequence[RowResult]) -> Summary:
    ok = [r for r in rows if r.status == "ok"]
    kernels = dict.fromkeys(r.kernel for r in ok)
    return Summary(**error_summary(r.ratio for r in ok).model_dump(), refused=len(rows) - len(ok),
                   by_kernel={k: error_summary(r.ratio for r in ok if r.kernel == k) for k in kernels})


@dataclass(frozen=True)
class Point:
    """A simulated row as the comparisons see it: `params` every parameter (defaults filled in), JSON-ready."""

    row: int
    kernel: str
    hardware: str
    window: str
    params: dict[str, Any]
    measured_us: float
    simulated_us: float

    @staticmethod
    def of(m: Measurement, result: RowResult) -> Point:
        return Point(m.row, m.kernel, m.hw.name, m.window, m.params.model_dump(mode="json"), m.measured_us,
                     result.simulated_us)


def _groups(points: Iterable[Point], leave_out: Callable[[str], set[str]]) -> dict[tuple, list[Point]]:
    """Points by kernel, profile, window and every parameter but those `leave_out(kernel)` names."""
    groups: dict[tuple, list[Point]] = {}
    for p in points:
        out = leave_out(p.kernel)
        shared = json.dumps({k: v for k, v in p.params.items() if k not in out}, sort_keys=True)
        groups.setdefault((p.kernel, p.hardware, p.window, shared), []).append(p)
    return groups


def _shown(kernel: str, params: dict[str, Any]) -> dict[str, Any]:
    """Parameters as the report shows them: required ones and those that differ from the kernel's default."""
    fields = REGISTRY[kernel].Params.model_fields
    return {k: params[k] for k in fields  # in the model's order
            if k in params and (fields[k].is_required() or params[k] != fields[k].default)}


def _mean(values: Iterable[float]) -> float:
    values = list(values)
    return sum(values) / len(values)


def marginal_costs(points: Iterable[Point]) -> list[Marginal]:
    """For rows that differ only in their size (the kernel's size field): the differences of consecutive sizes,
    measured against simulated (repeated rows of one size: their mean). A fixed cost the model does not know
    cancels in the differences."""
    out = []
    for (kernel, hardware, window, shared), group in _groups(points, lambda k: {REGISTRY[k].size_field}).items():
        field = REGISTRY[kernel].size_field
        sizes = sorted({p.params[field] for p in group})
        at = {s: [p for p in group if p.params[field] == s] for s in sizes}
        for lo, hi in zip(sizes, sizes[1:]):
            measured = _mean(p.measured_us for p in at[hi]) - _mean(p.measured_us for p in at[lo])
            simulated = _mean(p.simulated_us for p in at[hi]) - _mean(p.simulated_us for p in at[lo])
            out.append(Marginal(kernel=kernel, hardware=hardware, window=window,
                                fixed=_shown(kernel, json.loads(shared)),
                                size_field=field, from_size=lo, to_size=hi,
                                rows=[p.row for p in at[lo] + at[hi]], measured_delta_us=measured,
                                simulated_delta_us=simulated, ratio=simulated / measured if measured else None))
    return out


def kendall_tau_b(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Kendall's tau-b of two equally long sequences (ties in either counted as tau-b does); None when either
    side is all ties or there are fewer than two items."""
    concordant = discordant = ties_x = ties_y = 0
    n = len(x)
    for i in range(n):
        for j in range(i + 1, n):
            dx, dy = x[i] - x[j], y[i] - y[j]
            if dx == 0 and dy == 0:
                ties_x += 1
                ties_y += 1
            elif dx == 0:
                ties_x += 1
            elif dy == 0:
                ties_y += 1
            elif (dx > 0) == (dy > 0):
                concordant += 1
            else:
                discordant += 1
    pairs = n * (n - 1) // 2
    denominator = math.sqrt((pairs - ties_x) * (pairs - ties_y))
    return (concordant - discordant) / denominator if denominator else None


def configuration_fields(spec: KernelSpec) -> set[str]:
    """The parameters a user chooses for a given problem: what the search space tunes, the variant and the
    algorithm."""
    return (set(spec.tuned()) | {"variant", "algorithm"}) & set(spec.Params.model_fields)


def rank_agreement(points: Iterable[Point]) -> list[Ranking]:
    """For rows of one problem in several configurations: Kendall's tau-b between measured and simulated times
    and the regret of the configuration the model ranks fastest (its measured time over the measured best,
    minus 1). Repeated rows of one configuration: their mean."""
    out = []
    for (kernel, hardware, window, shared), group in _groups(
            points, lambda k: configuration_fields(REGISTRY[k])).items():
        fields = configuration_fields(REGISTRY[kernel])
        configs: dict[str, list[Point]] = {}
        for p in group:
            configs.setdefault(json.dumps({k: p.params[k] for k in sorted(fields)}), []).append(p)
        if len(configs) < 2:
            continue
        names = list(configs)
        measured = [_mean(p.measured_us for p in configs[c]) for c in names]
        simulated = [_mean(p.simulated_us for p in configs[c]) for c in names]
        decoded = [json.loads(c) for c in names]
        varying = [k for k in sorted(fields) if len({json.dumps(d[k]) for d in decoded}) > 1]
        shown = [{k: d[k] for k in varying} for d in decoded]  # what tells the configurations apart
        pick = min(range(len(names)), key=simulated.__getitem__)
        best = min(range(len(names)), key=measured.__getitem__)
        out.append(Ranking(kernel=kernel, hardware=hardware, window=window,
                           problem=_shown(kernel, json.loads(shared)),
                           configurations=len(names), rows=[p.row for p in group],
                           kendall_tau=kendall_tau_b(measured, simulated), model_pick=shown[pick],
                           measured_best=shown[best], regret=measured[pick] / measured[best] - 1))
    return out


def physical_bound_s(spec: KernelSpec, params: KernelParams, hw: HardwareProfile) -> tuple[float, str]:
    """The least time the profile's rates allow for a run: its bytes (`bytes_moved`) at the achievable HBM rate
    (L2's with a warm start) and, for HGEMM, its flops at the cube's fp16 peak. Returns (seconds, what binds)."""
    moved = float(spec.bytes_moved(params))
    warm = bool(getattr(params, "warm_l2", False)) or getattr(params, "l2", None) == "warm"
    rate_gbps = hw.l2_bandwidth_gbps if warm else hw.hbm_bandwidth_gbps * hw.hbm_efficiency
    memory_s = moved / (rate_gbps * 1e9)
    what = f"{moved / 1e6:,.1f} MB at {rate_gbps:,.0f} GB/s ({'L2' if warm else 'HBM x efficiency'})"
    if spec.family == "gemm":
        flops = 2.0 * params.m * params.n * params.k * params.batch
        cube_s = flops / (hw.cube_fp16_peak_tflops * 1e12)
        if cube_s > memory_s:
            return cube_s, f"{flops / 1e9:,.1f} GFLOP at the cube's {hw.cube_fp16_peak_tflops:,.0f} TFLOPS"
    return memory_s, what


def physical_flags(measurements: Iterable[Measurement]) -> list[Flag]:
    """Rows measured faster than the profile's peak rates allow (a wrong profile, or a wrong row)."""
    flags = []
    for m in measurements:
        bound_s, what = physical_bound_s(m.spec, m.params, m.hw)
        if m.measured_us < bound_s * 1e6:
            flags.append(Flag(row=m.row, kernel=m.kernel, kind="below-physical-bound", measured_us=m.measured_us,
                              bound_us=bound_s * 1e6, detail=f"{what} on {m.hw.name} take at least "
                                                             f"{bound_s * 1e6:,.1f} µs"))
    return flags


# ----- fitting ---------------------------------------------------------------------------------------------
def fittable_constants(hw: HardwareProfile) -> list[str]:
    """The profile's float constants (what --free may name)."""
    return [f.name for f in _constant_fields() if f.type in ("float", float)]


def _bounds(name: str, value: float) -> tuple[float, float]:
    """The search interval of a constant in log space: [value / 4, value * 4] for the chip's rates and latencies
    (at most 1 for an efficiency), [value / 16, value * 16] for a host step (`host_*`: estimates of a few
    microseconds that a host or driver can multiply)."""
    factor = 16 if name.startswith("host_") else 4
    hi = min(value * factor, 1.0) if name in _AT_MOST_ONE else value * factor
    return math.log(value / factor), math.log(hi)


@dataclass
class FitOutcome:
    before: dict[str, float]
    after: dict[str, float]
    rows: int
    folds: int
    fit_error_before: float
    fit_error_after: float
    cv_error_before: float
    cv_error_after: float

    @property
    def accepted(self) -> bool:
        return math.isfinite(self.cv_error_after) and self.cv_error_after <= self.cv_error_before

    def result(self, hardware: str, profile_written: str | None = None) -> FitResult:
        reason = None if self.accepted else (
            f"the cross-validated error gets worse with the fit ({self.cv_error_before:.1%} -> "
            f"{self.cv_error_after:.1%}); the profile is left as it is")
        return FitResult(hardware=hardware, constants={k: {"before": self.before[k], "after": self.after[k]}
                                                       for k in self.before},
                         rows=self.rows, folds=self.folds, fit_error_before=self.fit_error_before,
                         fit_error_after=self.fit_error_after, cv_error_before=self.cv_error_before,
                         cv_error_after=self.cv_error_after, accepted=self.accepted, reason=reason,
                         profile_written=profile_written)


class _Objective:
    """Log ratios of rows under changed constants (simulations shared through one RowSimulator)."""

    def __init__(self, rows: Sequence[Measurement], hw: HardwareProfile, simulator: RowSimulator) -> None:
        self.rows, self.hw, self.simulator = rows, hw, simulator

    def ratios(self, values: dict[str, float], rows: Sequence[Measurement]) -> list[float]:
        hw = self.hw.replace(**values)
        out = []
        for m in rows:
            try:
                kernel_us, window_us = self.simulator.time_us(m, hw)
                out.append((kernel_us + window_us) / m.measured_us)
            except Refused:
                out.append(math.inf)
        return out

    def error(self, values: dict[str, float], rows: Sequence[Measurement]) -> float:
        return _mean(abs(r - 1) for r in self.ratios(values, rows))

    def residuals(self, x: np.ndarray, names: Sequence[str], rows: Sequence[Measurement]) -> np.ndarray | None:
        """log(simulated / measured) of every row at constants exp(x); None when the kernel refuses a row."""
        ratios = self.ratios(dict(zip(names, np.exp(x).tolist())), rows)
        return None if any(not 0 < r < math.inf for r in ratios) else np.log(ratios)

    def fit(self, start: dict[str, float], rows: Sequence[Measurement], iterations: int = 30) -> dict[str, float]:
        """Least squares on log ratios by Levenberg-Marquardt in log(value), each constant kept within
        _bounds: a forward-difference Jacobian costs one simulation of each row per constant and iteration
        (a coordinate search took some 25 per constant and sweep), and the simulations at the start are
        shared by every fold through the RowSimulator's cache."""
        names = list(start)
        x = np.log([start[n] for n in names])
        lo, hi = np.array([_bounds(n, start[n]) for n in names]).T
        r = self.residuals(x, names, rows)
        if r is None:
            return dict(start)
        loss, damping = float(r @ r), 0.1
        for _ in range(iterations):
            jac = np.empty((len(r), len(names)))
            for j in range(len(names)):
                step = _STEP if x[j] + _STEP <= hi[j] else -_STEP  # a forward step that stays in bounds
                moved = self.residuals(x + step * np.eye(len(names))[j], names, rows)
                jac[:, j] = 0.0 if moved is None else (moved - r) / step
            normal, gradient = jac.T @ jac, jac.T @ r
            if not np.any(normal):  # the rows do not depend on these constants
                break
            for _try in range(5):
                scaled = normal + damping * np.diag(np.diag(normal) + 1e-12)
                x_new = np.clip(x - np.linalg.lstsq(scaled, gradient, rcond=None)[0], lo, hi)
                r_new = self.residuals(x_new, names, rows)
                if r_new is not None and float(r_new @ r_new) < loss:
                    break
                damping *= 4
            else:
                break  # no step lowers the loss: a minimum within the bounds
            gain = loss - float(r_new @ r_new)
            step_size = float(np.max(np.abs(x_new - x)))
            x, r, loss, damping = x_new, r_new, float(r_new @ r_new), max(damping / 3, 1e-9)
            # 0.01% in a constant or a 1e-6 share of the loss: far below what rows measured to a few % resolve
            if step_size < 1e-4 or gain < 1e-6 * loss:
                break
        return dict(zip(names, np.exp(x).tolist()))


def _fit_task(args: tuple) -> tuple[int, dict[str, float]]:
    """One fit of fit_constants in a worker process: (task index, fitted constants)."""
    index, (rows, hw, start, keep) = args
    return index, _Objective(rows, hw, RowSimulator()).fit(start, [m for m, k in zip(rows, keep) if k])


def fit_constants(measurements: Sequence[Measurement], names: Sequence[str], folds: int = 5,
                  simulator: RowSimulator | None = None, progress: Progress | None = None,
                  jobs: int | None = None) -> FitOutcome:
    """Fit profile constants `names` on the rows the kernel runs (all on one profile) by least squares on
    log(simulated / measured), with K-fold cross-validation (row i in file order is in fold i mod K).

    `jobs`: worker processes for the K + 1 fits (default: one per usable core, up to K + 1, from
    PARALLEL_FIT_ROWS rows on; 1 runs them here). The result does not depend on it.

    Raises:
        FitError: rows on several profiles, fewer rows than constants or too few to cross-validate, a constant
            that is not a positive float of the profile.
    """
    simulator = simulator or RowSimulator()
    hws = {m.hw.name: m.hw for m in measurements}
    if len(hws) != 1:
        raise FitError(f"--fit: the rows use several profiles ({', '.join(hws)}); fit one profile at a time")
    (hw,) = hws.values()
    if not names:
        raise FitError(f"--fit: nothing to fit: {hw.name} marks no constant calibrated; name constants with "
                       "--free (e.g. --free hbm_efficiency; `ascendbench hardware show` lists them)")
    fittable = fittable_constants(hw)
    for name in names:
        if name not in fittable:
            raise FitError(f"--free: {name!r} is not a float constant of a profile{_suggest(name, fittable)}")
        if getattr(hw, name) <= 0:
            raise FitError(f"--free: {name} is {getattr(hw, name)} in {hw.name}; a fit searches within "
                           "[value / 4, value * 4] (host steps: / 16, * 16) and needs a positive value")
    rows = []
    for m in measurements:
        try:
            simulator.time_us(m, hw)
            rows.append(m)
        except Refused:
            pass
    if len(rows) < len(names):
        raise FitError(f"--fit: {len(rows)} row{'s' if len(rows) != 1 else ''} for {len(names)} constants; "
                       "a fit needs at least as many rows as constants")
    k = min(folds, len(rows))
    if k < 2 or len(rows) - math.ceil(len(rows) / k) < len(names):
        raise FitError(f"--fit: {len(rows)} rows are too few to cross-validate {len(names)} constant"
                       f"{'s' if len(names) > 1 else ''} over {k} folds")
    objective = _Objective(rows, hw, simulator)
    start = {name: float(getattr(hw, name)) for name in names}
    # the K fold fits and the fit on every row are independent: on several cores they run side by side
    tasks = [(rows, hw, start, [i % k != fold for i in range(len(rows))]) for fold in range(k)]
    tasks.append((rows, hw, start, [True] * len(rows)))
    if jobs is None:
        jobs = min(usable_cores(), len(tasks)) if len(rows) >= PARALLEL_FIT_ROWS else 1
    fits: list[dict[str, float] | None] = [None] * len(tasks)
    labels = ["fitting (cross-validation)"] * k + ["fitting"]
    if jobs <= 1:
        for i, task in enumerate(tasks):
            fits[i] = objective.fit(start, [m for m, keep in zip(rows, task[3]) if keep])
            if progress is not None:
                progress(labels[i], i + 1, len(tasks))
    else:
        with contextlib.closing(imap_in_workers(_fit_task, list(enumerate(tasks)), jobs)) as finished:
            for done, (i, fitted) in enumerate(finished, start=1):
                fits[i] = fitted
                if progress is not None:
                    progress(f"fitting on {jobs} processes ({k} folds, then all rows)", done, len(tasks))
    held_before, held_after = [], []
    for fold in range(k):
        test = [m for i, m in enumerate(rows) if i % k == fold]
        held_before += [abs(r - 1) for r in objective.ratios(start, test)]
        held_after += [abs(r - 1) for r in objective.ratios(fits[fold], test)]
    after = fits[k]
    return FitOutcome(before=start, after=after, rows=len(rows), folds=k,
                      fit_error_before=objective.error(start, rows), fit_error_after=objective.error(after, rows),
                      cv_error_before=_mean(held_before), cv_error_after=_mean(held_after))


def profile_toml(hw: HardwareProfile, name: str, fitted: dict[str, float], provenance: str) -> str:
    """A complete profile file (every constant as {value, source}): `hw` with the `fitted` constants, whose
    source is "calibrated: <provenance>"."""
    lines = [f"# Written by ascendbench correlate --write-profile from {hw.name}.",
             f"name = {json.dumps(name)}",
             f"description = {json.dumps(f'{hw.description}; constants fitted by ascendbench correlate')}", ""]
    for f in _constant_fields():
        value = fitted.get(f.name, getattr(hw, f.name))
        source = f"calibrated: {provenance}" if f.name in fitted else hw.sources.get(f.name, "")
        text = str(int(value)) if isinstance(value, int) else repr(float(value))
        lines.append(f"{f.name} = {{ value = {text}, source = {json.dumps(source, ensure_ascii=False)} }}")
    return "\n".join(lines) + "\n"


def calibrated_constants(hw: HardwareProfile) -> list[str]:
    """The float constants the profile marks calibrated (their source starts with "calibrated")."""
    return [n for n in fittable_constants(hw) if hw.sources.get(n, "").startswith("calibrated")]


# ----- the whole document ----------------------------------------------------------------------------------
def correlate(measurements: Sequence[Measurement], *, source: Path | None = None, command: list[str] | None = None,
              simulator: RowSimulator | None = None, progress: Progress | None = None) -> CorrelationResult:
    """The correlation document of validated rows (read_measurements): rows, summary, marginal costs, rank
    agreement and physical checks (no fit: see fit_constants)."""
    wall0 = time.perf_counter()
    rows = simulate_rows(measurements, simulator, progress)
    points = [Point.of(m, r) for m, r in zip(measurements, rows) if r.status == "ok"]
    hws = {m.hw.name: m.hw for m in measurements}
    described = {"rows": len(measurements)}
    if source is not None:
        described = {"file": source.name, "sha256": hashlib.sha256(source.read_bytes()).hexdigest(), "format": "jsonl" if
                     source.suffix.lower() in JSON_LINES else "csv"} | described
    return CorrelationResult(
        tool_version=__version__, created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        command=command if command is not None else ["python-api", "correlate"], measurements=described,
        hardware={name: hw.to_dict() for name, hw in hws.items()}, rows=rows, summary=summarize(rows),
        marginal=marginal_costs(points), ranking=rank_agreement(points), flags=physical_flags(measurements),
        wall_time_s=time.perf_counter() - wall0)


assert set(WRAPPERS) >= {"run_radix_sort", "run_scan_batch"}
