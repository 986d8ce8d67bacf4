"""`ascendbench results list|show|compare`: browse saved result files and gate on regressions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from ascendbench.commands.common import JsonOption, dump_json, fail, out_console

app = typer.Typer(help="List, show and compare result files (runs and tuning results).", no_args_is_help=True)


def _load(path: Path, option: str) -> dict[str, Any]:
    if not path.is_file():
        fail(f"{option}: {'not a file' if path.exists() else 'file not found'}: {path}")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        fail(f"{option}: {path} is not a JSON result file: {exc}")
    if not isinstance(doc, dict) or "schema_version" not in doc:
        fail(f"{option}: {path} is not an ascendbench result (no schema_version)")
    return doc


def result_kind(doc: dict[str, Any]) -> str:
    """"tuning", "validation" (validate), "figure" (reproduce), "hgemm" (run hgemm), "operator" (run
    split/sort/...), "batched-scan", "segmented-scan" or "scan" (run scan)."""
    if doc.get("kind") in ("tuning", "validation", "figure"):
        return doc["kind"]
    if doc.get("kernel") == "hgemm" and "shapes" in doc:
        return "hgemm"
    problem = doc.get("problem") if isinstance(doc.get("problem"), dict) else {}
    if "operator" in problem:
        return "operator"
    if "length" in problem:
        return "batched-scan"
    if "segments" in problem:
        return "segmented-scan"
    return "scan"


def problem_times(doc: dict[str, Any]) -> dict[str, tuple[float | None, str]]:
    """As _problem_times; a document that does not have the fields of its kind (another tool's JSON with a
    schema_version key, a hand-edited file) has no comparable problems."""
    try:
        times = _problem_times(doc)
    except (KeyError, TypeError, AttributeError, ValueError):
        return {}
    return {k: (t if isinstance(t, (int, float)) and not isinstance(t, bool) else None, what)
            for k, (t, what) in times.items()}


def _problem_times(doc: dict[str, Any]) -> dict[str, tuple[float | None, str]]:
    """Simulated time (seconds) per problem of a result, with what was run: for runs, the run itself; for
    tuning results, the best configuration found. Keys name the problem only, so that runs of two kernels or
    two versions on the same problem match."""
    kind = result_kind(doc)
    out: dict[str, tuple[float | None, str]] = {}
    if kind in ("validation", "figure"):  # no simulated problem times to compare
        return out
    if kind == "tuning":
        for p in doc["problems"]:
            best = p.get("best") or {}
            out[f"{doc['kernel']} {p['key']}"] = (best.get("time_s"), "tuned best")
    elif kind == "hgemm":
        variant = doc.get("params", {}).get("variant", "")
        for s in doc["shapes"]:
            key = f"hgemm {s['m']}x{s['n']}x{s['k']}" + (f"x{s['batch']}" if s["batch"] != 1 else "")
            out[key] = (s["time_s"], variant)
    elif kind == "operator":
        p = doc["problem"]
        params = ",".join(f"{k}={v}" for k, v in sorted(p.get("params", {}).items()))
        key = f"{p['operator']} n={p['n']}" + (f" {params}" if params else "")
        sim = doc.get("simulated", {})
        out[key] = (sim.get("time_s"), sim.get("variant", ""))
    else:
        p = doc["problem"]
        mode = "exclusive" if p.get("exclusive") else "inclusive"
        if kind == "batched-scan":
            key = f"batched-scan {p['batch']}x{p['length']} {p['dtype']} {mode}"
        elif kind == "segmented-scan":
            key = f"segmented-scan n={p['n']} segments={p['segments']} {p['dtype']} {mode}"
        else:
            key = f"scan n={p['n']} {p['dtype']} {mode}"
        out[key] = (doc.get("metrics", {}).get("time_s"), doc.get("kernel", ""))
    return out


@app.command("list")
def list_results(
    folder: Annotated[Path, typer.Argument(help="Folder searched recursively for result files.")] = Path("results"),
    json_out: JsonOption = False,
) -> None:
    """List saved results, newest first: file, kind, kernel, creation time, problems and what they report."""
    if not folder.exists() and folder == Path("results"):  # nothing run here yet: not an error
        if json_out:
            out_console.file.write("[]\n")
        else:
            out_console.print("no results yet in results/ (`ascendbench run scan` or `tune` saves one there)",
                              highlight=False)
        return
    if not folder.is_dir():
        fail(f"FOLDER: not a folder: {folder}")
    rows = []
    for path in sorted(folder.rglob("*.json")):
        if not path.is_file():  # a folder or a FIFO named *.json would not be a result (and a FIFO blocks)
            continue
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            continue
        if not isinstance(doc, dict) or "schema_version" not in doc:
            continue
        kind = result_kind(doc)
        times = problem_times(doc)
        problem = doc.get("problem") if isinstance(doc.get("problem"), dict) else {}
        kernel = doc.get("kernel") or problem.get("operator", "")
        rows.append({"path": str(path), "kind": kind, "kernel": str(kernel),
                     "created_at": str(doc.get("created_at", "")), "problems": len(times)})
    rows.sort(key=lambda r: r["created_at"], reverse=True)
    if json_out:
        out_console.file.write(dump_json(rows) + "\n")
        return
    if not rows:
        out_console.print(f"no result files under {folder}")
        return
    table = Table()
    for col in ("created (UTC)", "kind", "kernel", "problems", "file"):
        table.add_column(col, justify="right" if col == "problems" else "left")
    for r in rows:
        table.add_row(r["created_at"], r["kind"], r["kernel"], str(r["problems"]), r["path"])
    out_console.print(table)


@app.command("show")
def show(
    file: Annotated[Path, typer.Argument(help="A result JSON file.")],
    json_out: JsonOption = False,
) -> None:
    """Show a result file: its command, hardware and, per problem, the simulated time."""
    doc = _load(file, "FILE")
    if json_out:
        out_console.file.write(dump_json(doc) + "\n")
        return
    if result_kind(doc) == "tuning":
        from ascendbench.commands.tune import _print

        try:
            _print(doc, None)
            return
        except (KeyError, TypeError, AttributeError, ValueError):
            pass  # not the shape a tuning result has: shown as a generic document below
    c = out_console
    c.rule(f"[bold]{file}")
    hardware = doc.get("hardware") if isinstance(doc.get("hardware"), dict) else {}
    command = doc.get("command") if isinstance(doc.get("command"), list) else []
    c.print(f"{result_kind(doc)} result, created {doc.get('created_at', '?')} by ascendbench "
            f"{doc.get('tool_version', '?')} on {hardware.get('name', '?')}", highlight=False, markup=False)
    c.print(f"command: {' '.join(map(str, command))}", highlight=False, soft_wrap=True, markup=False)
    times = problem_times(doc)
    if not times:
        c.print("no simulated problem times in this file (a validation or figure result, or not one of ours); "
                "--json prints it whole")
        return
    table = Table()
    for col in ("problem", "ran", "simulated time"):
        table.add_column(col)
    for key, (seconds, what) in times.items():
        table.add_row(key, str(what), f"{seconds * 1e6:,.2f} µs" if seconds is not None else "-")
    c.print(table)
    metrics = doc.get("metrics") if isinstance(doc.get("metrics"), dict) else {}
    if metrics:
        c.print("metrics: " + ", ".join(f"{k} {v:.4g}" for k, v in metrics.items() if isinstance(v, (int, float))),
                highlight=False, soft_wrap=True)


@app.command("compare")
def compare(
    baseline: Annotated[Path, typer.Argument(help="The reference result (A).")],
    candidate: Annotated[Path, typer.Argument(help="The result compared with it (B).")],
    threshold: Annotated[float, typer.Option("--threshold", help="Relative change below which times count as "
                                             "the same (0.02 = 2%).")] = 0.02,
    json_out: JsonOption = False,
) -> None:
    """Per problem found in both files: time B / time A, marked faster, slower or same. Exit status 1 when
    any problem is slower than the threshold (for CI gates), 0 otherwise."""
    if not (0 <= threshold < 1):
        fail(f"--threshold: must be in [0, 1), got {threshold}")
    a, b = problem_times(_load(baseline, "BASELINE")), problem_times(_load(candidate, "CANDIDATE"))
    common = [key for key in a if key in b]
    if not common:
        fail(f"CANDIDATE: no problem of {candidate} is also in {baseline}")
    rows = []
    for key in common:
        ta, tb = a[key][0], b[key][0]
        if ta is None or tb is None or ta <= 0:
            verdict, ratio = "no time", None
        else:
            ratio = tb / ta
            verdict = "slower" if ratio > 1 + threshold else "faster" if ratio < 1 - threshold else "same"
        rows.append({"problem": key, "a": a[key][1], "b": b[key][1], "time_a_s": ta, "time_b_s": tb,
                     "ratio": ratio, "verdict": verdict})
    slower = sum(r["verdict"] == "slower" for r in rows)
    if json_out:
        out_console.file.write(dump_json({"threshold": threshold, "rows": rows, "slower": slower,
                                          "only_in_a": [k for k in a if k not in b],
                                          "only_in_b": [k for k in b if k not in a]}) + "\n")
    else:
        table = Table(title=f"B / A simulated time (threshold {threshold * 100:g}%)", title_justify="left")
        for col in ("problem", "A", "B", "time A", "time B", "B / A", "verdict"):
            table.add_column(col, justify="right" if col.startswith(("time", "B /")) else "left")
        colour = {"slower": "red", "faster": "green", "same": "white", "no time": "yellow"}
        for r in rows:
            table.add_row(r["problem"], r["a"], r["b"], _us(r["time_a_s"]), _us(r["time_b_s"]),
                          f"{r['ratio']:.4f}" if r["ratio"] is not None else "-",
                          f"[{colour[r['verdict']]}]{r['verdict']}[/]")
        out_console.print(table)
        missing = len(a) + len(b) - 2 * len(common)
        if missing:
            out_console.print(f"{missing} problem(s) appear in only one of the files and are not compared")
    if slower:
        raise typer.Exit(1)


def _us(seconds: float | None) -> str:
    return f"{seconds * 1e6:,.2f} µs" if seconds is not None else "-"
