"""Result documents as flat table rows for `ascendbench results export`: one row per run, per HGEMM shape or per
tuning trial, written as CSV that pandas (`pandas.read_csv`) and the csv module read directly.

Every cell is a number, a string, True/False or empty (None); nothing nested. Units are in the column names:
*_us microseconds (converted from the documents' seconds), *_gbps GB/s (1e9 B/s), tflops 1e12 FLOP/s,
fraction_* in [0, 1] (fraction_of_hbm_peak: of the profile's HBM bandwidth, for scans; fraction_of_cube_peak:
of its fp16 cube TFLOPS, for HGEMM), *_per_s per second, *_bytes bytes. Columns come in a fixed order
(RUN_COLUMNS, SHAPE_COLUMNS, TRIAL_COLUMNS), then the ones that depend on what the documents hold (other metrics,
the run's parameters as param_<name>, tuned configurations) sorted by name. A column means one thing in every
row: n is a scan's or an operator's element count, gemm_m/gemm_n/gemm_k an HGEMM run's M, N, K, param_k a
top-k's k.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Mapping
from typing import Any

from ascendbench.store.operators import OperatorRunResult
from ascendbench.store.rows import BatchedScanResult, SegmentedScanResult
from ascendbench.store.schema import HgemmRunResult, RunResult, TuningResult

__all__ = ["ROW_KINDS", "RUN_COLUMNS", "SHAPE_COLUMNS", "TRIAL_COLUMNS", "columns_of", "run_row", "shape_rows",
           "to_csv", "trial_row"]

ROW_KINDS = ("runs", "shapes", "trials")

# Who ran what, on which problem, with what result: the first columns of every row of their kind
RUN_COLUMNS = ("file", "kind", "kernel", "ran", "problem", "hardware", "tool_version", "created_at", "dtype",
               "out_dtype", "exclusive", "n", "batch", "length", "segments", "workload", "shapes", "gemm_m",
               "gemm_n", "gemm_k", "gemm_batch", "m0", "n0", "k0", "time_us", "bandwidth_gbps",
               "fraction_of_hbm_peak", "elements_per_s", "tflops", "fraction_of_cube_peak", "verified",
               "extrapolated", "warm_l2")
SHAPE_COLUMNS = ("file", "shape", "problem", "workload", "hardware", "tool_version", "created_at", "variant", "m",
                 "n", "k", "batch", "alpha", "beta", "m0", "n0", "k0", "k1", "tiling_source", "split_k",
                 "shuffle_k", "padding", "double_buffer", "warm_l2", "every_core", "time_us", "tflops",
                 "fraction_of_cube_peak", "verified")
TRIAL_COLUMNS = ("file", "kernel", "problem", "study", "seed", "hardware", "tool_version", "trial", "state",
                 "time_us", "tflops", "bandwidth_gbps", "infeasible", "repeat", "replayed", "best")

RunDocument = RunResult | BatchedScanResult | SegmentedScanResult | OperatorRunResult | HgemmRunResult


def _us(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1e6


def _unit_name(name: str) -> str:
    """A metric's column name: seconds become microseconds (time_s -> time_us, time_s_total -> time_us_total);
    rates per second keep their name (elements_per_s)."""
    if name.endswith("_s") and not name.endswith("_per_s"):
        return name[:-2] + "_us"
    return name.replace("_s_", "_us_") if "_s_" in name and "_per_s" not in name else name


def _in_unit(name: str, value: Any) -> Any:
    return _us(value) if _unit_name(name) != name and isinstance(value, (int, float)) else value


def _flat(prefix: str, value: Any, out: dict[str, Any]) -> None:
    """`value` as scalar cells: a dict's items as prefix_key, a list's items space-separated."""
    if isinstance(value, Mapping):
        for k, v in value.items():
            _flat(f"{prefix}_{k}", v, out)
    elif isinstance(value, (list, tuple)):
        out[prefix] = " ".join(str(v) for v in value)
    else:
        out[prefix] = value


def _extras(row: dict[str, Any], values: Mapping[str, Any], fixed: Iterable[str], units: bool = True) -> None:
    """Add `values` (metrics, parameters) to `row` where the fixed columns do not already name them; with
    `units`, seconds become microseconds (metrics; not parameters: a scan's s is a count)."""
    taken = set(fixed)
    flat: dict[str, Any] = {}
    for name, value in values.items():
        _flat(name, value, flat)
    for name, value in ((_unit_name(k), _in_unit(k, v)) if units else (k, v) for k, v in flat.items()):
        if name in taken:
            if row.get(name) is None:
                row[name] = value
        else:
            row.setdefault(name, value)


# Metrics whose documents' names do not say what they are relative to, or name a span as a window
_RUN_METRIC_NAMES = {"host_window_s": "host_overhead_s"}  # call_time_s = time_s + host_window_s


def _metrics(metrics: Mapping[str, Any], peak: str) -> dict[str, Any]:
    """A document's metrics under the export's names: fraction_of_peak as `peak`, host_window_s as
    host_overhead_s (the host's steps around the kernel: call_time_s - time_s)."""
    return {(peak if k == "fraction_of_peak" else _RUN_METRIC_NAMES.get(k, k)): v for k, v in metrics.items()}


def _params(params: Mapping[str, Any]) -> dict[str, Any]:
    """The run's parameters as param_<name>, but for those a fixed column holds (dtype, exclusive, warm_l2, m0,
    ...): a parameter's name then cannot meet a metric's or another kernel's column."""
    return {f"param_{k}": v for k, v in params.items() if k not in RUN_COLUMNS}


def run_row(doc: RunDocument, file: str, kernel: str, ran: str, problem: str) -> dict[str, Any]:
    """One run document as a row (RUN_COLUMNS, then its other metrics and its parameters as param_<name>).
    `kernel` is the kernel family (scan, batched-scan, segmented-scan, hgemm, or the operator's name), `ran` what
    ran (the algorithm or variant) and `problem` the problem's name as `results compare` matches it; for an
    HGEMM workload the workload's name. An HGEMM run of one shape fills gemm_m, gemm_n, gemm_k, gemm_batch and
    the tiling it ran with (m0, n0, k0); a run of several shapes (a workload) leaves them empty: shape_rows
    has a row per shape."""
    row: dict[str, Any] = {"file": file, "kernel": kernel, "ran": ran, "problem": problem,
                           "hardware": doc.hardware.get("name"), "tool_version": doc.tool_version,
                           "created_at": doc.created_at, "extrapolated": doc.model.get("extrapolated")}
    if isinstance(doc, OperatorRunResult):
        p, sim = doc.problem, doc.simulated
        row |= {"kind": "operator", "n": p.n, "dtype": next(iter(p.dtypes.values()), None), "time_us": _us(sim.time_s),
                "bandwidth_gbps": sim.bandwidth_gbps, "verified": doc.verification.passed,
                "warm_l2": p.params.get("warm_l2")}
        _extras(row, {"dtype": p.dtypes, "bandwidth_bytes": sim.bandwidth_bytes, "baseline": sim.baseline or {}},
                RUN_COLUMNS)
        _extras(row, _params(p.params), RUN_COLUMNS, units=False)
        return row
    if isinstance(doc, HgemmRunResult):
        row |= {"kind": "hgemm", "workload": doc.workload, "shapes": len(doc.shapes), "dtype": "fp16",
                "warm_l2": doc.params.get("warm_l2"),
                "verified": _all([s.verification.passed for s in doc.shapes])}
        if len(doc.shapes) == 1:
            s = doc.shapes[0]
            row |= {"gemm_m": s.m, "gemm_n": s.n, "gemm_k": s.k, "gemm_batch": s.batch,
                    **{t: s.tiling.get(t) for t in ("m0", "n0", "k0")}}
        metrics = {**doc.metrics, **{k: v for k, v in doc.summary.items() if k != "shapes"}}
        _extras(row, _metrics(metrics, "fraction_of_cube_peak"), RUN_COLUMNS)
        _extras(row, _params(doc.params), RUN_COLUMNS, units=False)
        return row
    p = doc.problem
    kind = {RunResult: "scan", BatchedScanResult: "batched-scan", SegmentedScanResult: "segmented-scan"}[type(doc)]
    row |= {"kind": kind, "dtype": p.dtype, "out_dtype": p.out_dtype, "exclusive": p.exclusive,
            "verified": doc.verification.passed, "warm_l2": doc.params.get("warm_l2")}
    if isinstance(doc, BatchedScanResult):
        row |= {"batch": p.batch, "length": p.length}
        _extras(row, {f"candidate_{k}_s": v for k, v in doc.candidates_time_s.items()}, RUN_COLUMNS)
    else:
        row["n"] = p.n
        if isinstance(doc, SegmentedScanResult):
            row["segments"] = p.segments
    _extras(row, _metrics(doc.metrics, "fraction_of_hbm_peak"), RUN_COLUMNS)
    _extras(row, _params(doc.params), RUN_COLUMNS, units=False)
    return row


def _all(passed: list[bool | None]) -> bool | None:
    """Whether every checked shape passed (None when none was checked)."""
    checked = [p for p in passed if p is not None]
    return all(checked) if checked else None


def shape_rows(doc: HgemmRunResult, file: str, problems: list[str]) -> list[dict[str, Any]]:
    """One row per shape of an HGEMM run (SHAPE_COLUMNS, then its phases as phase_<name>_us); `problems`: each
    shape's name as `results compare` matches it, in order. shape is the index in the document's shapes."""
    run = doc.params
    alpha = doc.problem.alpha if doc.problem else run.get("alpha")
    beta = doc.problem.beta if doc.problem else run.get("beta")
    rows = []
    for i, (s, problem) in enumerate(zip(doc.shapes, problems, strict=True)):
        t = s.tiling
        row = {"file": file, "shape": i, "problem": problem, "workload": doc.workload,
               "hardware": doc.hardware.get("name"), "tool_version": doc.tool_version, "created_at": doc.created_at,
               "variant": run.get("variant"), "m": s.m, "n": s.n, "k": s.k, "batch": s.batch, "alpha": alpha,
               "beta": beta, "m0": t.get("m0"), "n0": t.get("n0"), "k0": t.get("k0"), "k1": t.get("k1"),
               "tiling_source": t.get("source"), **{k: run.get(k) for k in ("split_k", "shuffle_k", "padding",
                                                                         "double_buffer", "warm_l2", "every_core")},
               "time_us": _us(s.time_s), "tflops": s.tflops, "fraction_of_cube_peak": s.fraction_of_peak,
               "verified": s.verification.passed}
        _extras(row, {f"phase_{_slug(k)}_s": v for k, v in s.phases_s.items()}, SHAPE_COLUMNS)
        rows.append(row)
    return rows


def _slug(name: str) -> str:
    return "_".join(name.lower().split())


def trial_row(doc: TuningResult, file: str, problem: Mapping[str, Any], key: str, study: str, seed: int | None,
              trial: Any) -> dict[str, Any]:
    """One Optuna trial (a FrozenTrial made by this tool: its "config" user attribute) of a tuned problem's
    study (`problem`: an item of the document's problems; `key`: its name as `results compare` matches it) as
    a row (TRIAL_COLUMNS, then the configuration's parameters). state: complete, infeasible (pruned
    with the kernel's reason), failed, running or waiting; time_us and the throughput (tflops or bandwidth_gbps,
    by the result's unit) for complete trials; repeat: the study already held the configuration; replayed: read
    from the evaluation store; best: the trial is the problem's best."""
    state = trial.state.name.lower()
    attrs = trial.user_attrs
    throughput = attrs.get("throughput") if state == "complete" else None
    best = problem.get("best") or {}
    row = {"file": file, "kernel": doc.kernel, "problem": key, "study": study, "seed": seed,
           "hardware": doc.hardware.get("name"), "tool_version": doc.tool_version, "trial": trial.number,
           "state": {"pruned": "infeasible", "fail": "failed"}.get(state, state),
           "time_us": _us(trial.value) if state == "complete" else None,
           "tflops": throughput if doc.unit == "TFLOPS" else None,
           "bandwidth_gbps": throughput if doc.unit == "GB/s" else None,
           "infeasible": attrs.get("infeasible"), "repeat": bool(attrs.get("repeat")),
           "replayed": bool(attrs.get("replayed")),
           "best": best.get("source") == "study" and best.get("trial") == trial.number and study == problem["study_name"]}
    config = {k if k not in TRIAL_COLUMNS else f"config_{k}": v for k, v in attrs["config"].items()}
    _extras(row, config, TRIAL_COLUMNS)
    return row


def columns_of(rows: list[dict[str, Any]], fixed: tuple[str, ...]) -> list[str]:
    """The columns of `rows`: the fixed ones in their order, then every other one found, sorted by name."""
    extra = sorted({name for row in rows for name in row} - set(fixed))
    return [*fixed, *extra]


def to_csv(rows: list[dict[str, Any]], columns: list[str]) -> str:
    """`rows` as CSV text (csv module, excel dialect, "\\n" line ends): a header, then a line per row; a cell a
    row does not have, or holds None, NaN or an infinity (an edited or broken file), is empty; floats are
    written in full (repr: read back exactly)."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, restval="", lineterminator="\n")
    writer.writeheader()
    writer.writerows({k: "" if isinstance(v, float) and not math.isfinite(v) else v for k, v in row.items()}
                     for row in rows)
    return buffer.getvalue()
