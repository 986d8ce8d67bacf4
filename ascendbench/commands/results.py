"""`ascendbench results list|show|compare`: browse saved result files and gate on regressions."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ascendbench.commands.common import (
    JsonOption,
    Outputs,
    check_target,
    choice_option,
    dump_json,
    err_console,
    fail,
    format_time,
    out_console,
    stacked,
    whole_keys,
    whole_words_fit,
)
from ascendbench.commands.markdown import MdOption, Report
from ascendbench.redact import mask_url

app = typer.Typer(help="List, show and compare result files (runs and tuning results).", no_args_is_help=True)


def _decode(path: Path) -> tuple[Any, str | None]:
    """(the decoded JSON of file `path`, None), or (None, why it cannot be read, the rest of a sentence that
    starts "... is not readable: "): empty, truncated (a write cut short), not UTF-8, not JSON, nested too
    deeply, or the operating system's reason."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        return None, f"cannot be read ({exc.strerror or exc})"
    if not data.strip():
        return None, "empty (0 bytes)" if not data else f"empty ({len(data)} bytes of white space)"
    try:
        text = data.decode("utf-8")
        return json.loads(text), None
    except UnicodeDecodeError as exc:
        return None, f"not UTF-8 text (byte {exc.start})"
    except json.JSONDecodeError as exc:
        # an error at the very end, a number cut after its point or exponent sign ("1.", "2e-"), a literal cut
        # short ("tr"), or a string that never closes: the document stops before it is complete
        rest = text.rstrip()[exc.pos:]
        if (not rest or _CUT_NUMBER.fullmatch(rest) or any(word.startswith(rest) for word in _LITERALS)
                or exc.msg.startswith("Unterminated string")):
            return None, f"truncated, the JSON stops part way ({len(data)} bytes; {exc})"
        return None, f"not JSON ({exc})"
    except RecursionError:
        return None, "nested too deeply"


_CUT_NUMBER = re.compile(r"[.eE][0-9eE+-]*")
_LITERALS = ("true", "false", "null", "NaN", "Infinity", "-Infinity")


def _read(path: Path, option: str) -> dict[str, Any]:
    """The decoded JSON object of a result file (not yet validated); a one-line error otherwise."""
    if not path.is_file():
        fail(f"{option}: {'not a file' if path.exists() else 'file not found'}: {path}")
    doc, unreadable = _decode(path)
    if unreadable:
        fail(f"{option}: {path} is not a JSON result file: {unreadable}")
    if not isinstance(doc, dict) or "schema_version" not in doc:
        fail(f"{option}: {path} is not an ascendbench result (no schema_version)")
    return doc


def _one_format(json_out: bool, md: bool) -> None:
    if json_out and md:
        fail("--md: cannot be combined with --json; choose one")


@dataclass
class Entry:
    """One simulated problem of a result document, as `compare` matches it.

    key: the problem (kernel family, size or shape, dtype, mode), e.g. "scan n=1000000 fp16 inclusive";
    family: the table it is shown in (scan, hgemm, batched-scan, segmented-scan, an operator's name);
    ran: what ran, in short (kernel or variant, "tuned best"); time_s: simulated time, seconds (None when the
    document has none); params: what ran, in full (algorithm or variant, s, blocks, chunk, tiling, ...);
    conditions: what else the time depends on (L2 at the start, every core simulated); hardware: profile name
    and constant values; tool_version: the ascendbench version that wrote the document."""

    key: str
    family: str
    ran: str
    time_s: float | None
    params: dict[str, Any]
    conditions: dict[str, Any]
    hardware: dict[str, Any]
    path: str
    created_at: str
    tool_version: str = ""

    def signature(self) -> str:
        """The same experiment: problem, what ran, conditions and hardware."""
        return json.dumps([self.key, self.params, self.conditions, self.hardware], sort_keys=True, default=str)


_DEFAULT_OUT = {"fp16": "fp32", "int8": "int32"}


def _scan_key(family: str, size: str, dtype: str, out_dtype: str | None, exclusive: bool) -> str:
    # the output dtype is named only when it is not the default one (fp16 -> fp32, int8 -> int32)
    dtypes = dtype if out_dtype in (None, _DEFAULT_OUT.get(dtype)) else f"{dtype}->{out_dtype}"
    return f"{family} {size} {dtypes} {'exclusive' if exclusive else 'inclusive'}"


def _operator_key(problem: dict[str, Any], sim: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """An operator run's problem name, as `tune <operator>` names the same problem (the kernel's parameters that
    its search space does not tune), and the tuned parameters it ran with (kernels/registry.py)."""
    from ascendbench.kernels.base import ParamError
    from ascendbench.kernels.registry import REGISTRY, problem_name

    spec = REGISTRY.get(problem["operator"])
    tuned = set(spec.tuned()) if spec is not None else set()
    ran = {"variant": sim["variant"], **{k: v for k, v in problem["params"].items() if k in tuned}}
    if spec is not None:
        fields = spec.Params.model_fields
        values = {k: v for k, v in problem["params"].items() if k in fields and k not in tuned}
        if "dtype" in fields and spec.inputs and spec.inputs[0].name in problem["dtypes"]:
            values["dtype"] = problem["dtypes"][spec.inputs[0].name]
        try:
            checked = spec.problem_of(spec.params({spec.size_field: problem["n"], **values}))
            return f"{problem['operator']} {problem_name(spec, checked)}", ran
        except ParamError:  # a document of another version
            pass
    dtypes = ",".join(f"{k}={v}" for k, v in sorted(problem["dtypes"].items()))
    return f"{problem['operator']} n={problem['n']} {dtypes}", ran


def _gemm_key(m: int, n: int, k: int, batch: int, alpha: float = 1.0, beta: float = 0.0) -> str:
    key = f"hgemm {m}x{n}x{k}" + (f"x{batch}" if batch != 1 else "")
    return key if (alpha, beta) == (1.0, 0.0) else f"{key} alpha={alpha:g} beta={beta:g}"


def _time(value: Any) -> float | None:
    """A simulated time in seconds, or None where the document holds none that can be compared (not a number,
    NaN, infinite or negative: an edited or broken file; compare then says "no time", never "same")."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) and value >= 0 else None


def document_entries(doc: dict[str, Any], path: str = "") -> list[Entry]:
    """The simulated problems of a validated result document (parse_result): for runs, the run itself (one per
    shape of an HGEMM workload); for tuning results, the best configuration found; none for validation and
    figure documents. Keys name the problem only, so that runs of two kernels, tilings or versions of the tool
    on the same problem match; what ran, the conditions and the hardware come with each entry."""
    from ascendbench.store.documents import result_kind

    kind = result_kind(doc)
    if kind == "correlation":  # measured rows, not simulated problems of one run: `results show` prints them
        return []
    constants = doc["hardware"].get("constants", {}) if kind not in ("validation", "figure") else {}
    hardware = {"name": doc["hardware"].get("name", "?") if constants else "?",
                "constants": {k: v.get("value") if isinstance(v, dict) else v for k, v in constants.items()}}
    out: list[tuple[str, str, str, Any, dict[str, Any], dict[str, Any]]] = []  # key, family, ran, time, ...
    if kind == "tuning":
        for p in doc["problems"]:
            best, problem, kernel = p.get("best") or {}, p["problem"], doc["kernel"]
            exclusive, dtype = bool(problem.get("exclusive", False)), problem.get("dtype", "fp16")
            if kernel == "hgemm":  # tune hgemm's conditions: cold L2, alpha = 1, beta = 0
                key = _gemm_key(problem["m"], problem["n"], problem["k"], problem.get("batch", 1))
                conditions = {"warm_l2": False, "every_core": bool(problem.get("every_core", False))}
                params = {"variant": "proposed", **(best.get("config") or {})}
            elif kernel == "scan":
                key = _scan_key("scan", f"n={problem['n']}", dtype, None, exclusive)
                conditions, params = {"l2": "flushed"}, dict(best.get("config") or {})
            elif kernel == "batched-scan":
                key = _scan_key("batched-scan", f"{problem['batch']}x{problem['length']}", dtype, None, exclusive)
                conditions, params = {"warm_l2": False}, dict(best.get("config") or {})
            else:
                key, conditions, params = f"{kernel} {p['key']}", {}, dict(best.get("config") or {})
            out.append((key, kernel, "tuned best", best.get("time_s"), params, conditions))
    elif kind == "hgemm":
        run = doc["params"]
        problem = doc.get("problem") or {}
        alpha, beta = problem.get("alpha", run.get("alpha", 1.0)), problem.get("beta", run.get("beta", 0.0))
        conditions = {"warm_l2": bool(run.get("warm_l2", False)), "every_core": bool(run.get("every_core", False))}
        for shape in doc["shapes"]:
            tiling = shape["tiling"]
            params = {"variant": run.get("variant"), **{k: tiling.get(k) for k in ("m0", "n0", "k0")},
                      **{k: run.get(k) for k in ("split_k", "shuffle_k", "padding", "double_buffer")}}
            key = _gemm_key(shape["m"], shape["n"], shape["k"], shape["batch"], alpha, beta)
            out.append((key, "hgemm", str(run.get("variant", "")), shape["time_s"], params, conditions))
    elif kind == "operator":
        problem, sim = doc["problem"], doc["simulated"]
        key, params = _operator_key(problem, sim)
        out.append((key, problem["operator"], sim["variant"], sim["time_s"], params,
                    {"warm_l2": bool(problem["params"].get("warm_l2", False))}))
    elif kind in ("scan", "batched-scan", "segmented-scan"):
        problem, run, model = doc["problem"], doc["params"], doc["model"]
        exclusive, dtype = bool(problem["exclusive"]), problem["dtype"]
        time_s = doc["metrics"].get("time_s")
        if kind == "scan":
            key = _scan_key("scan", f"n={problem['n']}", dtype, problem["out_dtype"], exclusive)
            params = {"algorithm": doc["kernel"], **{k: run.get(k) for k in ("s", "blocks", "chunk")}}
            warm = "warm" if run.get("warm_l2") else "flushed"
            conditions = {"l2": run.get("l2") or model.get("l2") or warm}
        elif kind == "batched-scan":
            key = _scan_key("batched-scan", f"{problem['batch']}x{problem['length']}", dtype, problem["out_dtype"],
                            exclusive)
            params = {"algorithm": run.get("algorithm_run") or doc["kernel"].removeprefix("batched-"),
                      "s": run.get("s")}
            conditions = {"warm_l2": bool(run.get("warm_l2", False))}
        else:
            key = _scan_key("segmented-scan", f"n={problem['n']} segments={problem['segments']}", dtype,
                            problem["out_dtype"], exclusive)
            params = {"algorithm": doc["algorithm"], "s": run.get("s")}
            conditions = {"warm_l2": bool(run.get("warm_l2", False))}
        out.append((key, kind, doc["kernel"], time_s, params, conditions))
    entries, seen = [], set()
    for key, family, ran, time_s, params, conditions in out:
        unique, i = key, 1
        while unique in seen:  # a shape that a workload holds twice
            i += 1
            unique = f"{key} #{i}"
        seen.add(unique)
        entries.append(Entry(unique, family, ran, _time(time_s), params, conditions, hardware, path,
                             str(doc.get("created_at", "")), str(doc.get("tool_version", ""))))
    return entries


def _validated(path: Path, option: str) -> dict[str, Any]:
    from ascendbench.store.documents import parse_result

    doc = _read(path, option)
    try:
        parse_result(doc)
    except ValueError as exc:
        fail(f"{option}: {path} is {exc}")
    return doc


@dataclass
class _Folder:
    """What `_scan_folder` found: results as (path, document, None when it validates, else why not), files
    that cannot be read as (path, why not: _decode), and how many JSON files are another tool's (no
    schema_version)."""

    found: list[tuple[Path, dict[str, Any], str | None]]
    unreadable: list[tuple[Path, str]]
    foreign: int


def _scan_folder(folder: Path) -> _Folder:
    """Every *.json file under `folder` (recursively, sorted by path), as a result, an unreadable file (empty,
    truncated, not JSON: a result file cut short is one) or another tool's JSON (counted only)."""
    from ascendbench.store.documents import parse_result

    found, unreadable, foreign = [], [], 0
    for path in sorted(folder.rglob("*.json")):
        if not path.is_file():  # a folder or a FIFO named *.json would not be a result (and a FIFO blocks)
            continue
        if "ground-truth" in path.relative_to(folder).parts[:-1]:
            continue  # the tuner's cache of whole grids (tuning.study.ground_truth_path), not a result
        doc, reason = _decode(path)
        if reason:
            unreadable.append((path, reason))
            continue
        if not isinstance(doc, dict) or "schema_version" not in doc:
            foreign += 1
            continue
        try:
            parse_result(doc)
            found.append((path, doc, None))
        except ValueError as exc:
            found.append((path, doc, str(exc)))
    return _Folder(found, unreadable, foreign)


def _hardware_name(doc: dict[str, Any]) -> str:
    """The hardware profile a document ran on, by name: a run's or a tuning's profile, the profiles of a
    validation or a correlation (name -> constants) or of a figure (a list of names), comma-separated; "" when
    it names none."""
    hardware = doc.get("hardware")
    if isinstance(hardware, dict):
        return str(hardware["name"]) if isinstance(hardware.get("name"), str) else ", ".join(map(str, hardware))
    return ", ".join(map(str, hardware)) if isinstance(hardware, list) else ""


def kernel_and_ran(doc: dict[str, Any], entries: list[Entry]) -> tuple[str, str]:
    """(kernel family, what ran) of a result document, as `results list` and `results export` name them: the
    family is scan, batched-scan, segmented-scan, hgemm, an operator's name or a tuned kernel's; what ran is
    the scan's algorithm (mcscan, mcscan-ul1, ...), the operator's or GEMM's variant, or "tuned best" ("" for
    documents of no kernel). `entries`: document_entries of the document (empty when it is not valid)."""
    if entries:
        first = entries[0]
        return first.family, str(first.params.get("algorithm") or first.params.get("variant") or first.ran)
    from ascendbench.store.documents import result_kind

    kind = result_kind(doc)
    problem = doc.get("problem") if isinstance(doc.get("problem"), dict) else {}
    kernel = str(doc.get("kernel") or problem.get("operator") or "")
    if kind in ("scan", "batched-scan", "segmented-scan"):  # the document's kernel is the algorithm that ran
        return kind, kernel
    return (kernel or ("hgemm" if kind == "hgemm" else "")), ""


@app.command("list")
def list_results(
    folder: Annotated[Path, typer.Argument(help="Folder searched recursively for result files.")] = Path("results"),
    json_out: JsonOption = False,
    md: MdOption = False,
) -> None:
    """List saved results, newest first: file, kind, kernel (the family: scan, hgemm, topk, ...), what ran (the
    scan's algorithm, the variant; as `results export` names both), creation time, problems, the hardware
    profile and the ascendbench version that wrote it. A file that does not match its kind's schema is listed as not
    valid, and one that cannot be read (empty, truncated, not JSON) as not readable, each with no problems and
    the reason (the "error" field of --json, a line under the table); JSON files of other tools (no
    schema_version) are counted in one line. --md prints the table as Markdown. On the terminal, a version
    that every readable file shares is said once under the table instead of in a column, and where the paths
    do not fit beside the other columns, each is printed whole on a line of its own under its row."""
    from ascendbench.store.documents import result_kind

    _one_format(json_out, md)
    if not folder.exists() and folder == Path("results"):  # nothing run here yet: not an error
        if json_out:
            out_console.file.write("[]\n")
        else:
            out_console.print("no results yet in results/ (`ascendbench run scan` or `tune` saves one there)",
                              highlight=False)
        return
    if not folder.is_dir():
        fail(f"FOLDER: not a folder: {folder}")
    scanned = _scan_folder(folder)
    rows = []
    for path, doc, error in scanned.found:
        entries = [] if error else document_entries(doc, str(path))
        kernel, ran = kernel_and_ran(doc, entries)
        rows.append({"path": str(path), "kind": result_kind(doc), "kernel": kernel, "ran": ran,
                     "created_at": str(doc.get("created_at", "")), "problems": len(entries),
                     "hardware": _hardware_name(doc), "tool_version": str(doc.get("tool_version", "")),
                     "valid": error is None, "readable": True, "error": error})
    rows.sort(key=lambda r: r["created_at"], reverse=True)
    rows += [{"path": str(path), "kind": None, "kernel": "", "ran": "", "created_at": "", "problems": 0,
              "hardware": "", "tool_version": "", "valid": False, "readable": False, "error": f"not readable: {reason}"}
             for path, reason in scanned.unreadable]
    if json_out:
        out_console.file.write(dump_json(rows) + "\n")
        return
    foreign = (f"{scanned.foreign} other JSON file(s) under {folder} left out: not result documents (no "
               "schema_version)") if scanned.foreign else None
    if not rows:
        out_console.print(f"no result files under {folder}", highlight=False, markup=False)
        if foreign:
            out_console.print(foreign, highlight=False, markup=False)
        return
    cells = []
    for r in rows:
        kind = (r["kind"] if r["valid"] else f"{r['kind']} [yellow](not valid)[/]" if r["readable"] else
                "[red](not readable)[/]")
        cells.append([escape(r["created_at"][:16].replace("T", " ")), kind, escape(r["kernel"]), escape(r["ran"]),
                      str(r["problems"]), escape(r["hardware"]), escape(r["tool_version"]), escape(r["path"])])
    report = Report(md)
    columns, versions = _LIST_COLUMNS, {r["tool_version"] for r in rows if r["readable"]}
    one_version = not md and len(versions) == 1 and "" not in versions  # then said once, under the table
    if one_version:
        columns = tuple(c for c in columns if c != "version")
        cells = [row[:6] + row[7:] for row in cells]
    table = _list_table(cells, columns)
    if md or whole_words_fit(table, "file"):
        report.table(table, "file")
    else:  # a path folded over lines cannot be pasted: each on a line of its own under its row
        _print_paths_under_rows(cells, columns)
    if one_version:
        report.lines([f"every readable file was written by ascendbench {versions.pop()}"], bullets=False)
    # the reason of each file left without problems, one line each
    report.lines([f"{r['path']} is {r['error']}" for r in rows if r["error"]])
    if foreign:
        report.lines([foreign], bullets=False)


_LIST_COLUMNS = ("created (UTC)", "kind", "kernel", "ran", "problems", "hardware", "version", "file")


def _list_table(cells: list[list[str]], columns: tuple[str, ...] = _LIST_COLUMNS, **options) -> Table:
    """results list's table of `cells` (rich markup, a row each) under the headers `columns`."""
    table = Table(box=box.SIMPLE_HEAD, padding=(0, 1), **options)
    for col in columns:
        table.add_column(col, justify="right" if col == "problems" else "left")
    for row in cells:
        table.add_row(*row)
    return table


def _print_paths_under_rows(cells: list[list[str]], columns: tuple[str, ...]) -> None:
    """results list on a terminal too narrow for the paths beside the other columns: the table without its
    file column (whole_keys: words and dates whole), each row followed by its path whole on a line of its own
    (one long line the terminal wraps, which still pastes whole); where not even the other columns' longest
    words fit, a block per row (stacked)."""
    narrow = _list_table([row[:-1] for row in cells], columns[:-1])
    if not whole_words_fit(narrow):
        out_console.print(stacked(_list_table(cells, columns), "file"))
        return
    out_console.print()
    whole_keys(narrow)  # sets the widths of the columns that wrap; the others keep their natural width
    widths = [column.width or max(Text.from_markup(str(c)).cell_len for c in [column.header, *column.cells])
              for column in narrow.columns]
    for i, row in enumerate(cells):
        # a table per row, with the same column widths, so that the path can go between the rows
        one = _list_table([row[:-1]], columns[:-1], show_header=i == 0, show_edge=False)
        for column, like, width in zip(one.columns, narrow.columns, widths):
            column.width, column.no_wrap, column.overflow = width, like.no_wrap, like.overflow
        out_console.print(one)
        out_console.print(Text.assemble(" ", Text.from_markup(row[-1])), highlight=False, soft_wrap=True)
    out_console.print()


@app.command("show")
def show(
    file: Annotated[Path, typer.Argument(help="A result JSON file.")],
    json_out: JsonOption = False,
) -> None:
    """Show a result file: its command, hardware and, per problem, what ran, under which conditions and the
    simulated time (--json: the document as it is). A file that cannot be read or does not match its kind's
    schema is refused (exit status 2) with one line: the first mismatch."""
    from ascendbench.store.documents import result_kind

    doc = _validated(file, "FILE")
    if json_out:
        out_console.file.write(dump_json(doc) + "\n")
        return
    if result_kind(doc) == "tuning":
        from ascendbench.commands.tune import _print

        _print(doc, None)
        return
    if result_kind(doc) == "correlation":
        from ascendbench.commands.correlate import _print as print_correlation
        from ascendbench.store.correlation import CorrelationResult

        print_correlation(CorrelationResult.model_validate(doc), None, None)
        return
    c = out_console
    c.rule(f"[bold]{escape(str(file))}")
    hardware = doc.get("hardware") if isinstance(doc.get("hardware"), dict) else {}
    command = doc.get("command") if isinstance(doc.get("command"), list) else []
    c.print(f"{result_kind(doc)} result, created {doc.get('created_at', '?')} by ascendbench "
            f"{doc.get('tool_version', '?')} on {hardware.get('name', '?')}", highlight=False, markup=False)
    # a file of an earlier version may hold a database password in its command: printed as ***
    _labelled("command:", " ".join(mask_url(str(a)) for a in command))
    entries = document_entries(doc, str(file))
    if not entries:
        c.print("no simulated problem times in this file (a validation or figure result); --json prints it whole")
        return
    table = Table()
    for col in ("problem", "ran", "parameters", "conditions", "simulated time"):
        table.add_column(col, justify="right" if col == "simulated time" else "left")
    for e in entries:
        table.add_row(escape(e.key), escape(e.ran), escape(_pairs(e.params)), escape(_pairs(e.conditions)),
                      format_time(e.time_s))
    c.print(whole_keys(table, "problem"))
    metrics = doc.get("metrics") if isinstance(doc.get("metrics"), dict) else {}
    if metrics:
        _labelled("metrics:", ", ".join(f"{k}={v:.4g}" for k, v in metrics.items() if isinstance(v, (int, float))))


def _labelled(label: str, text: str) -> None:
    """`label text` wrapped at the terminal's width between words (a word wider than the room folds), the
    lines after the first indented under the text's start."""
    lines = Text(text).wrap(out_console, max(out_console.width - len(label) - 1, 8), overflow="fold")
    for i, line in enumerate(lines):
        line.rstrip()
        out_console.print(Text.assemble(label if i == 0 else " " * len(label), " ", line), highlight=False,
                          soft_wrap=True)


def _value(v: Any) -> str:
    return "default" if v is None else str(v)


def _pairs(values: dict[str, Any]) -> str:
    return " ".join(f"{k}={_value(v)}" for k, v in values.items())


def _collect(path: Path, option: str) -> tuple[list[Entry], dict[str, Any]]:
    """The entries of a result file (validated: a one-line error otherwise) or of every valid result under a
    folder (the newest of the same experiment kept), with what was left out: {"skipped": [{file, reason}]
    (files that are not valid or not readable, by path; reason completes "<file> is ..."), "superseded":
    count of older results of the same experiment}."""
    if not path.is_dir():
        return document_entries(_validated(path, option), str(path)), {"skipped": [], "superseded": 0}
    scanned = _scan_folder(path)
    skipped = sorted([{"file": str(p), "reason": error} for p, _doc, error in scanned.found if error] +
                     [{"file": str(p), "reason": f"not readable: {why}"} for p, why in scanned.unreadable],
                     key=lambda s: s["file"])
    newest: dict[str, Entry] = {}
    total = 0
    for p, doc, error in scanned.found:
        if error:
            continue
        for e in document_entries(doc, str(p)):
            total += 1
            kept = newest.get(e.signature())
            if kept is None or e.created_at > kept.created_at:
                newest[e.signature()] = e
    entries = sorted(newest.values(), key=lambda e: (e.path, e.key))
    return entries, {"skipped": skipped, "superseded": total - len(entries)}


def _pair(a: list[Entry], b: list[Entry]) -> tuple[list[tuple[Entry, Entry]], list[Entry], list[Entry]]:
    """Match A's entries with B's: first the same experiment (problem, what ran, conditions, hardware), then
    the same problem with the same parameters, then the same problem where one entry of it is left on each
    side. Returns (pairs in A's order, left in A, left in B)."""
    pairs: dict[int, Entry] = {}
    left_b = list(b)
    for match in (Entry.signature, lambda e: json.dumps([e.key, e.params], sort_keys=True, default=str),
                  lambda e: e.key):
        left_a = [i for i in range(len(a)) if i not in pairs]
        keys_a: dict[str, list[int]] = {}
        for i in left_a:
            keys_a.setdefault(match(a[i]), []).append(i)
        keys_b: dict[str, list[Entry]] = {}
        for e in left_b:
            keys_b.setdefault(match(e), []).append(e)
        for key, ia in keys_a.items():
            eb = keys_b.get(key, [])
            if len(ia) == 1 and len(eb) == 1:  # unambiguous
                pairs[ia[0]] = eb[0]
                left_b.remove(eb[0])
    ordered = [(a[i], pairs[i]) for i in range(len(a)) if i in pairs]
    return ordered, [a[i] for i in range(len(a)) if i not in pairs], left_b


def _differences(ea: Entry, eb: Entry) -> dict[str, Any]:
    """What differs between two matched entries: the hardware (a sentence or None), the conditions recorded
    on both sides and the parameters of what ran ([{name, a, b}])."""
    hardware = None
    if ea.hardware["name"] != eb.hardware["name"]:
        hardware = f"hardware: {ea.hardware['name']} in A, {eb.hardware['name']} in B"
    else:
        ca, cb = ea.hardware["constants"], eb.hardware["constants"]
        changed = [k for k in sorted(set(ca) | set(cb)) if ca.get(k) != cb.get(k)]
        if changed:
            shown = ", ".join(f"{k} {_value(ca.get(k))} in A, {_value(cb.get(k))} in B" for k in changed[:3])
            more = f" and {len(changed) - 3} more" if len(changed) > 3 else ""
            hardware = f"hardware {ea.hardware['name']} with other constants: {shown}{more}"
    conditions = [{"name": k, "a": ea.conditions[k], "b": eb.conditions[k]} for k in ea.conditions
                  if k in eb.conditions and ea.conditions[k] != eb.conditions[k]]
    params = [{"name": k, "a": ea.params.get(k), "b": eb.params.get(k)}
              for k in dict.fromkeys([*ea.params, *eb.params]) if ea.params.get(k) != eb.params.get(k)]
    return {"hardware": hardware, "conditions": conditions, "params": params}


def _unlike(d: dict[str, Any]) -> list[str]:
    """The differences that make two times not comparable as they are (hardware, conditions), as sentences."""
    out = [d["hardware"]] if d["hardware"] else []
    out += [f"{_CONDITIONS.get(c['name'], c['name'])}: {_value(c['a'])} in A, {_value(c['b'])} in B"
            for c in d["conditions"]]
    return out


_CONDITIONS = {"l2": "L2 at the start", "warm_l2": "warm L2", "every_core": "every core simulated"}


@app.command("compare")
def compare(
    baseline: Annotated[Path, typer.Argument(metavar="A", help="The reference (A): a result file or a folder of "
                                             "them.", show_default=False)],
    candidate: Annotated[Path, typer.Argument(metavar="B", help="What is compared with it (B): a result file or a "
                                              "folder.", show_default=False)],
    threshold: Annotated[float, typer.Option("--threshold", help="Relative change below which times count as "
                                             "the same (0.02 = 2%).")] = 0.02,
    allow_different: Annotated[bool, typer.Option("--allow-different", help="Compare problems run on other "
                                                  "hardware or under other conditions (L2 at the start, every "
                                                  "core simulated) too, with the differences shown.")] = False,
    json_out: JsonOption = False,
    md: MdOption = False,
) -> None:
    """Per problem found in both A and B: time B / time A, marked faster, slower or same, and the parameters
    that differ (algorithm, variant, s, blocks, chunk, tiling). A and B are result files or folders of them
    (matched problem by problem, one table per kernel; problems in only one are listed). Refused (exit status
    2) when a matched problem ran on other hardware or under other conditions, unless --allow-different.
    Results written by other ascendbench versions are compared with a warning above the tables (--json: in
    "warnings" and on stderr): their timing models may differ. --md prints the report as Markdown. Exit
    status 1 when any problem is slower than the threshold (for CI gates), 0 otherwise."""
    _one_format(json_out, md)
    if not (0 <= threshold < 1):
        fail(f"--threshold: must be in [0, 1), got {threshold}")
    a, left_out_a = _collect(baseline, "A")
    b, left_out_b = _collect(candidate, "B")
    pairs, only_a, only_b = _pair(a, b)
    if not pairs:
        left = [f"{len(s['skipped'])} file(s) of {side} left out, first {s['skipped'][0]['file']} is "
                f"{s['skipped'][0]['reason']}" for side, s in (("A", left_out_a), ("B", left_out_b)) if s["skipped"]]
        fail(f"B: no problem of {candidate} is also in A ({baseline}" + (f"; {'; '.join(left)})" if left else ")"))
    rows, unlike = [], []
    for ea, eb in pairs:
        diff = _differences(ea, eb)
        unlike += [(ea.key, text) for text in _unlike(diff)]
        ta, tb = ea.time_s, eb.time_s
        if ta is None or tb is None or ta <= 0:
            verdict, ratio = "no time", None
        else:
            ratio = tb / ta
            verdict = "slower" if ratio > 1 + threshold else "faster" if ratio < 1 - threshold else "same"
        rows.append({"kernel": ea.family, "problem": ea.key, "a": ea.ran, "b": eb.ran, "time_a_s": ta,
                     "time_b_s": tb, "ratio": ratio, "verdict": verdict, "file_a": ea.path, "file_b": eb.path,
                     "params_a": ea.params, "params_b": eb.params, "conditions_a": ea.conditions,
                     "conditions_b": eb.conditions, "differences": diff})
    if unlike and not allow_different:
        first_key, first = unlike[0]
        others = len({key for key, _ in unlike}) - 1
        more = f" and {others} more problem(s)" if others else ""
        fail(f"A and B were not run alike: {first} (for {first_key}{more}); give --allow-different to compare "
             "them anyway")
    slower = sum(r["verdict"] == "slower" for r in rows)
    warnings = _version_warnings(pairs)
    if json_out:
        def listed(entries: list[Entry]) -> list[dict[str, Any]]:
            return [{"problem": e.key, "ran": e.ran, "file": e.path} for e in entries]

        out_console.file.write(dump_json({
            "threshold": threshold, "a": str(baseline), "b": str(candidate), "rows": rows, "slower": slower,
            "not_like_for_like": sorted({text for _, text in unlike}), "only_in_a": listed(only_a),
            "only_in_b": listed(only_b), "skipped_a": left_out_a["skipped"], "skipped_b": left_out_b["skipped"],
            "superseded_a": left_out_a["superseded"], "superseded_b": left_out_b["superseded"],
            "tool_versions": {"a": sorted({ea.tool_version for ea, _ in pairs}),
                              "b": sorted({eb.tool_version for _, eb in pairs})},
            "warnings": warnings}) + "\n")
        for text in warnings:
            err_console.print(f"[bold yellow]warning:[/] {escape(text)}", highlight=False, soft_wrap=True)
    else:
        _print_comparison(rows, unlike, only_a, only_b, left_out_a, left_out_b, threshold, warnings, md)
    if slower:
        raise typer.Exit(1)


def _version_warnings(pairs: list[tuple[Entry, Entry]]) -> list[str]:
    """A sentence when matched problems were written by other ascendbench versions in A and B (a "same" then
    compares two timing models); none otherwise. Result documents carry no fingerprint of the timing model,
    so the tool version is what tells."""
    differ = [(ea, eb) for ea, eb in pairs if ea.tool_version != eb.tool_version]
    if not differ:
        return []

    def versions(entries) -> str:
        return ", ".join(sorted({e.tool_version or "?" for e in entries}))

    return [f"written by other ascendbench versions, {versions(ea for ea, _ in differ)} in A and "
            f"{versions(eb for _, eb in differ)} in B ({len(differ)} of {len(pairs)} compared problem(s)): "
            "the timing model may differ between them, so a ratio mixes in the tool's changes"]


def _print_comparison(rows, unlike, only_a, only_b, left_out_a, left_out_b, threshold, warnings, md) -> None:
    report = Report(md)
    for text in warnings:
        report.note(f"[bold yellow]Warning:[/] {escape(text)}")
    if unlike:  # --allow-different: say so before any number
        report.note("[bold yellow]Not run alike (--allow-different), the ratios mix in these differences:[/] "
                    + escape("; ".join(sorted({text for _, text in unlike}))))
    colour = {"slower": "red", "faster": "green", "same": "white", "no time": "yellow"}
    for kernel in dict.fromkeys(r["kernel"] for r in rows):
        table = Table(title=f"{kernel}: B / A simulated time (threshold {threshold * 100:g}%)", title_justify="left")
        for col in ("problem", "A", "B", "time A", "time B", "B / A", "verdict", "differs (A → B)"):
            table.add_column(col, justify="right" if col.startswith(("time", "B /")) else "left")
        for r in (r for r in rows if r["kernel"] == kernel):
            d = r["differences"]
            differs = [f"{p['name']} {_value(p['a'])} → {_value(p['b'])}" for p in d["params"]]
            differs += [f"[yellow]{escape(text)}[/]" for text in _unlike(d)]
            table.add_row(escape(r["problem"]), escape(r["a"]), escape(r["b"]), format_time(r["time_a_s"]),
                          format_time(r["time_b_s"]), f"{r['ratio']:.4f}" if r["ratio"] is not None else "-",
                          f"[{colour[r['verdict']]}]{r['verdict']}[/]",
                          "\n".join(d if d.startswith("[yellow]") else escape(d) for d in differs) or "-")
        report.table(table, "problem")
    for side, entries in (("A", only_a), ("B", only_b)):
        report.lines([f"{e.key}  ({e.ran}; {e.path})" for e in entries],
                     f"only in {side} ({len(entries)}, not compared):")
    for side, left in (("A", left_out_a), ("B", left_out_b)):
        # a line per file: a truncated or empty result must not pass unnoticed
        report.lines([f"{s['file']} is {s['reason']}" for s in left["skipped"]],
                     f"{len(left['skipped'])} file(s) of {side} left out, not valid or not readable:")
        if left["superseded"]:
            report.note(f"{left['superseded']} older result(s) of the same experiments in {side} left out (the "
                        "newest is compared)")


@app.command("export")
def export(
    paths: Annotated[list[Path] | None, typer.Argument(metavar="PATHS", help="Result files, or folders searched "
                                                      "recursively for them (default: results/).",
                                                      show_default=False)] = None,
    rows: Annotated[str, choice_option("--rows", choices=("runs", "shapes", "trials"), help="runs: a row per run (scan, "
                                      "batched-scan, segmented-scan, operator and HGEMM runs); shapes: a row per "
                                      "shape of the HGEMM runs; trials: a row per trial of each tuned problem's "
                                      "study (read from the tuning's storage).")] = "runs",
    out: Annotated[str, typer.Option("--out", metavar="<path.csv|->", help="CSV file, written whole or not at "
                                     "all; - prints the CSV on stdout.")] = "-",
    storage: Annotated[str | None, typer.Option("--storage", help="With --rows trials: where the studies live, "
                                                "if not where the tuning result says (a journal file path or an "
                                                "RDB URL).")] = None,
) -> None:
    """Export results as CSV, a row per run, per HGEMM shape or per tuning trial (--rows), with flat columns
    that pandas.read_csv and the csv module read as they are: numbers, True/False or empty cells, units in the
    names (time_us microseconds, bandwidth_gbps GB/s, tflops), the fixed columns first, then the metrics and
    parameters the documents hold, by name (ascendbench/store/export.py). Files of other kinds, and in folders
    files that are not valid results, are left out with a line on stderr."""
    from ascendbench.store import export as ex
    from ascendbench.store.documents import parse_result, result_kind

    if out != "-":
        check_target(Path(out), "out", ".csv", {})
    if storage is not None and rows != "trials":
        fail("--storage: only --rows trials reads studies; drop it")
    if not paths and not Path("results").is_dir():
        fail("PATHS: no results/ folder here (`ascendbench run` and `tune` save there); name result files or "
             "folders")
    docs: list[tuple[str, dict[str, Any]]] = []
    skipped: list[str] = []
    for path in paths or [Path("results")]:
        if path.is_dir():
            scanned = _scan_folder(path)
            docs += [(str(p), doc) for p, doc, error in scanned.found if not error]
            skipped += [f"{p} is {error}" for p, _, error in scanned.found if error]
            skipped += [f"{p} is not readable: {why}" for p, why in scanned.unreadable]
        else:
            docs.append((str(path), _validated(path, "PATHS")))
    seen: set[Path] = set()  # a file named twice, or also found in a folder given, is one row (or set of rows)
    docs = [(file, doc) for file, doc in docs
            if (real := Path(file).resolve()) not in seen and not seen.add(real)]
    wanted = {"runs": ("scan", "batched-scan", "segmented-scan", "operator", "hgemm"), "shapes": ("hgemm",),
              "trials": ("tuning",)}[rows]
    table: list[dict[str, Any]] = []
    other: dict[str, int] = {}
    studies = _Studies(storage)
    for file, doc in docs:
        kind = result_kind(doc)
        if kind not in wanted:
            other[kind] = other.get(kind, 0) + 1
            continue
        model = parse_result(doc)
        entries = document_entries(doc, file)
        if rows == "trials":  # an entry per tuned problem, in order
            table += [ex.trial_row(model, file, doc["problems"][i], entries[i].key, name, seed, trial)
                      for i, name, seed, trial in studies.trials(doc)]
            continue
        if rows == "shapes":
            table += ex.shape_rows(model, file, [e.key for e in entries])
            continue
        first = entries[0] if entries else None
        problem = (doc.get("workload") or "") if kind == "hgemm" and (doc.get("workload") or not first) else (
            first.key if first else "")
        # as `results list` names them: the family (scan), and what ran (mcscan-ul1; not batched-scanul1)
        table.append(ex.run_row(model, file, *kernel_and_ran(doc, entries), problem))
    text = ex.to_csv(table, ex.columns_of(table, {"runs": ex.RUN_COLUMNS, "shapes": ex.SHAPE_COLUMNS,
                                                  "trials": ex.TRIAL_COLUMNS}[rows]))
    for line in skipped:
        err_console.print(f"left out: {line}", highlight=False, markup=False, soft_wrap=True)
    if other:
        kinds = ", ".join(f"{count} {kind}" for kind, count in sorted(other.items(), key=lambda kv: str(kv[0])))
        hint = {"runs": "--rows trials exports tuning results", "shapes": "only HGEMM runs have shapes",
                "trials": "only tuning results have trials"}[rows]
        err_console.print(f"left out {sum(other.values())} result(s) without {rows} ({kinds}); {hint}",
                          highlight=False, markup=False, soft_wrap=True)
    if out == "-":
        out_console.file.write(text)
        return
    from ascendbench.store.io import atomic_write_text

    with Outputs() as outputs:
        outputs.write("out", Path(out), lambda target: atomic_write_text(target, text))
    out_console.print(f"{len(table)} row(s) ({rows}) written to {out}", highlight=False, markup=False)


class _Studies:
    """The trials of tuning results' studies, each storage opened once. Where a storage is not there (run from
    another folder, a database whose password the result does not keep), a one-line error names --storage."""

    def __init__(self, storage: str | None):
        self.storage = storage
        self.opened: dict[str, Any] = {}

    def _open(self, target: str):
        from ascendbench.tuning.study import TuneError, open_result_storage

        if target not in self.opened:
            try:
                self.opened[target] = open_result_storage(target)  # an export only reads
            except TuneError as exc:
                fail(str(exc))
        return self.opened[target]

    def trials(self, doc: dict[str, Any]):
        """(index of the problem, study name, seed, trial) for every trial this tool made in each problem's
        studies (one per seed with --seeds), by study and trial number; trials that plain Optuna added are left
        out."""
        import optuna

        from ascendbench.tuning.study import describe_storage

        target = self.storage if self.storage is not None else doc["storage"]
        opened = self._open(target)
        for i, problem in enumerate(doc["problems"]):
            runs = (problem.get("seeds") or {}).get("runs") or [{"seed": doc["seed"],
                                                                 "study_name": problem["study_name"]}]
            names = set((problem["heuristic"].get("config") or (problem.get("best") or {}).get("config") or {}))
            for run in runs:
                try:
                    study = optuna.load_study(study_name=run["study_name"], storage=opened)
                except KeyError:
                    fail(f"--storage: {describe_storage(target)} holds no study {run['study_name']!r}")
                for trial in study.get_trials(deepcopy=False):
                    config = trial.user_attrs.get("config")
                    if isinstance(config, dict) and config.keys() == names:
                        yield i, run["study_name"], run["seed"], trial
