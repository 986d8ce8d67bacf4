"""`ascendbench results list|show|compare`."""

import csv
import io
import json
import re

import pytest

from ascendbench.store.documents import FigureResult, parse_result
from ascendbench.store.operators import OperatorRunResult
from ascendbench.store.rows import BatchedScanResult, SegmentedScanResult
from ascendbench.store.schema import HgemmRunResult, RunResult


@pytest.fixture
def two_scans(tmp_path, cli):
    for name, algorithm in (("a.json", "mcscan-ul1"), ("b.json", "mcscan")):
        out = cli(["run", "scan", "--n", "1e6", "--algorithm", algorithm, "--out", name], tmp_path)
        assert out.exit_code == 0, out.output
    return tmp_path


def test_compare_marks_slower_and_exits_1(two_scans, cli):
    a = json.loads((two_scans / "a.json").read_text())["metrics"]["time_s"]
    b = json.loads((two_scans / "b.json").read_text())["metrics"]["time_s"]
    out = cli(["results", "compare", "a.json", "b.json", "--json"], two_scans)
    doc = json.loads(out.stdout)
    (row,) = doc["rows"]
    assert row["problem"] == "scan n=1000000 fp16 inclusive" and row["ratio"] == pytest.approx(b / a)
    assert row["verdict"] == ("slower" if b / a > 1.02 else "faster" if b / a < 0.98 else "same")
    assert out.exit_code == (1 if row["verdict"] == "slower" else 0)
    back = cli(["results", "compare", "b.json", "a.json", "--threshold", "0.5"], two_scans)
    assert back.exit_code == 0 and "same" in back.output  # within 50%


def test_compare_same_file_is_same_and_exit_0(two_scans, cli):
    out = cli(["results", "compare", "a.json", "a.json"], two_scans)
    assert out.exit_code == 0 and "same" in out.output and "1.0000" in out.output


def test_compare_tuning_and_hgemm_results(tmp_path, cli):
    assert cli(["run", "hgemm", "--m", "512", "--n", "512", "--k", "512", "--out", "h.json"], tmp_path).exit_code == 0
    assert cli(["tune", "hgemm", "--m", "512", "--n", "512", "--k", "512", "--trials", "5", "--no-exhaustive", "--out", "t.json"],
               tmp_path).exit_code == 0
    out = cli(["results", "compare", "h.json", "t.json", "--json"], tmp_path)
    (row,) = json.loads(out.stdout)["rows"]
    assert row["problem"] == "hgemm 512x512x512" and row["b"] == "tuned best"


def test_list_and_show(two_scans, cli):
    (two_scans / "results").mkdir()
    (two_scans / "a.json").rename(two_scans / "results" / "a.json")
    (two_scans / "results" / "notes.json").write_text('{"not": "a result"}')
    out = cli(["results", "list", "--json"], two_scans)
    rows = json.loads(out.stdout)
    assert [r["path"] for r in rows] == ["results/a.json"] and rows[0]["kind"] == "scan"
    shown = cli(["results", "show", "b.json"], two_scans)
    assert shown.exit_code == 0 and "scan n=1000000 fp16 inclusive" in shown.output and "mcscan" in shown.output


@pytest.mark.parametrize("args, message", [
    (["show", "nope.json"], "FILE: file not found: nope.json"),
    (["show", "bad.json"], "is not a JSON result file"),
    (["show", "other.json"], "is not an ascendbench result"),
    (["compare", "a.json", "nope.json"], "B: file not found"),  # A and B, as the help names them
    (["compare", "nope.json", "a.json"], "A: file not found"),
    (["compare", "a.json", "a.json", "--threshold", "2"], "--threshold: must be in [0, 1)"),
    (["list", "missing"], "FOLDER: not a folder"),
])
def test_user_errors(two_scans, cli, args, message):
    (two_scans / "bad.json").write_text("{")
    (two_scans / "other.json").write_text("[1]")
    out = cli(["results", *args], two_scans)
    assert out.exit_code == 2 and out.output.strip().startswith("error:") and message in out.output, out.output


def test_compare_without_common_problems(two_scans, cli):
    assert cli(["run", "scan", "--n", "1000", "--out", "c.json"], two_scans).exit_code == 0
    out = cli(["results", "compare", "a.json", "c.json"], two_scans)
    assert out.exit_code == 2 and out.output == "error: B: no problem of c.json is also in A (a.json)\n"


def test_every_run_kind_is_listed_with_its_problem(tmp_path, cli):
    runs = {"s.json": ["run", "scan", "--n", "1000"],
            "b.json": ["run", "batched-scan", "--batch", "4", "--length", "1000"],
            "g.json": ["run", "segmented-scan", "--n", "1000"],
            "o.json": ["run", "sort", "--n", "1000"],
            "h.json": ["run", "hgemm", "--m", "64", "--n", "64", "--k", "64"]}
    (tmp_path / "results").mkdir()
    for name, args in runs.items():
        out = cli([*args, "--out", f"results/{name}"], tmp_path)
        assert out.exit_code == 0, out.output
    rows = json.loads(cli(["results", "list", "--json"], tmp_path).stdout)
    assert sorted(r["kind"] for r in rows) == ["batched-scan", "hgemm", "operator", "scan", "segmented-scan"]
    assert all(r["valid"] and r["error"] is None for r in rows)
    models = {name: type(parse_result(json.loads((tmp_path / "results" / name).read_text()))) for name in runs}
    assert models == {"s.json": RunResult, "b.json": BatchedScanResult, "g.json": SegmentedScanResult,
                      "o.json": OperatorRunResult, "h.json": HgemmRunResult}
    for name in runs:
        same = cli(["results", "compare", f"results/{name}", f"results/{name}"], tmp_path)
        assert same.exit_code == 0 and "same" in same.output, same.output


def test_foreign_and_figure_files_do_not_crash(tmp_path, cli):
    folder = tmp_path / "results"
    folder.mkdir()
    (folder / "other.json").write_text('{"schema_version": 2, "name": "x", "problem": [1]}')
    (folder / "figure.json").write_text('{"schema_version": 2, "kind": "figure", "data": [1, 2]}')
    (folder / "dir.json").mkdir()
    rows = json.loads(cli(["results", "list", "--json"], tmp_path).stdout)
    assert sorted(r["path"] for r in rows) == ["results/figure.json", "results/other.json"]
    assert all(r["problems"] == 0 for r in rows)
    assert {r["path"]: r["error"] for r in rows} == {
        "results/figure.json": "not a valid figure result: figure: Field required (and 8 more)",
        "results/other.json": "not a valid scan result: schema_version: Input should be 1 (and 15 more)"}
    shown = cli(["results", "show", "results/figure.json"], tmp_path)
    assert shown.exit_code == 2 and shown.output == ("error: FILE: results/figure.json is not a valid figure result: "
                                                     "figure: Field required (and 8 more)\n")
    figure = FigureResult(figure="fig1", paper="p", caption="c", source="s", tool_version="0", created_at="t",
                          hardware=[], compute_time_s=0.0, data={})
    (folder / "figure.json").write_text(figure.model_dump_json())
    shown = cli(["results", "show", "results/figure.json"], tmp_path)
    assert shown.exit_code == 0 and "no simulated problem times" in shown.output
    out = cli(["results", "compare", "results/other.json", "results/other.json"], tmp_path)
    assert out.exit_code == 2 and out.output == ("error: A: results/other.json is not a valid scan result: "
                                                 "schema_version: Input should be 1 (and 15 more)\n")


def test_tuned_scan_matches_a_run_of_the_same_problem(tmp_path, cli):
    assert cli(["run", "scan", "--n", "100000", "--out", "r.json"], tmp_path).exit_code == 0
    assert cli(["tune", "scan", "--n", "100000", "--trials", "3", "--no-exhaustive", "--out", "t.json"], tmp_path).exit_code == 0
    out = cli(["results", "compare", "r.json", "t.json", "--json"], tmp_path)
    (row,) = json.loads(out.stdout)["rows"]
    assert row["problem"] == "scan n=100000 fp16 inclusive" and row["b"] == "tuned best"


def test_results_list_before_any_run_says_so(tmp_path, cli):
    out = cli(["results", "list"], tmp_path)
    assert out.exit_code == 0 and "no results yet in results/" in out.output
    doc = cli(["results", "list", "--json"], tmp_path)
    assert doc.exit_code == 0 and json.loads(doc.stdout) == []
    missing = cli(["results", "list", "elsewhere"], tmp_path)  # a folder the user names must exist
    assert missing.exit_code == 2 and "FOLDER: not a folder: elsewhere" in missing.output


def _refused_then_allowed(two_scans, cli, extra: list[str], name: str, difference: str) -> dict:
    """Run scan n=1e6 with `extra` options into `name`, check that comparing a.json with it is refused naming
    `difference`, and return the comparison's --allow-different JSON."""
    out = cli(["run", "scan", "--n", "1e6", "--algorithm", "mcscan-ul1", *extra, "--out", name], two_scans)
    assert out.exit_code == 0, out.output
    refused = cli(["results", "compare", "a.json", name], two_scans)
    assert refused.exit_code == 2 and refused.output == (
        f"error: A and B were not run alike: {difference} (for scan n=1000000 fp16 inclusive); give "
        "--allow-different to compare them anyway\n")
    allowed = cli(["results", "compare", "a.json", name, "--allow-different", "--json"], two_scans)
    return json.loads(allowed.stdout) | {"exit_code": allowed.exit_code}


def test_compare_refuses_other_hardware_unless_allowed(two_scans, cli):
    difference = "hardware: ascend-910b4 in A, atlas-300t-a2 in B"
    doc = _refused_then_allowed(two_scans, cli, ["--hardware", "atlas-300t-a2"], "atlas.json", difference)
    assert doc["not_like_for_like"] == [difference]
    (row,) = doc["rows"]
    assert row["differences"] == {"hardware": difference, "conditions": [], "params": []}
    shown = cli(["results", "compare", "a.json", "atlas.json", "--allow-different"], two_scans)
    assert shown.output.startswith(f"Not run alike (--allow-different), the ratios mix in these differences: "
                                   f"{difference}\n")


def test_compare_refuses_another_l2_start_unless_allowed(two_scans, cli):
    doc = _refused_then_allowed(two_scans, cli, ["--l2", "warm"], "warm.json",
                                "L2 at the start: flushed in A, warm in B")
    (row,) = doc["rows"]
    assert row["differences"]["conditions"] == [{"name": "l2", "a": "flushed", "b": "warm"}]
    assert row["verdict"] == "faster" and doc["exit_code"] == 0


def test_compare_names_the_parameters_that_differ(two_scans, cli):
    assert cli(["run", "scan", "--n", "1e6", "--algorithm", "mcscan", "--s", "64", "--out", "c.json"],
               two_scans).exit_code == 0
    out = cli(["results", "compare", "a.json", "c.json", "--json"], two_scans)
    (row,) = json.loads(out.stdout)["rows"]
    assert row["differences"]["params"] == [{"name": "algorithm", "a": "mcscan-ul1", "b": "mcscan"},
                                            {"name": "s", "a": 128, "b": 64}]
    assert row["params_a"] == {"algorithm": "mcscan-ul1", "s": 128, "blocks": None, "chunk": None}
    text = cli(["results", "compare", "a.json", "c.json"], two_scans).output
    # one difference a line, whole, in the last column
    assert re.search(r"│ algorithm mcscan-ul1 → mcscan +│\n", text) and re.search(r"│ s 128 → 64 +│\n", text), text


def test_compare_folders_shape_by_shape(tmp_path, cli):
    runs = {"A/s1.json": ["run", "scan", "--n", "1e6"], "A/s2.json": ["run", "scan", "--n", "1000"],
            "A/h.json": ["run", "hgemm", "--m", "256", "--n", "256", "--k", "256"],
            "B/s1.json": ["run", "scan", "--n", "1e6"], "B/deep/h.json": ["run", "hgemm", "--m", "256", "--n", "256",
                                                                          "--k", "256", "--m0", "32", "--n0", "32"],
            "B/o.json": ["run", "sort", "--n", "1000"]}
    for name, args in runs.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        assert cli([*args, "--out", name], tmp_path).exit_code == 0, name
    (tmp_path / "B" / "broken.json").write_text('{"schema_version": 1, "kernel": "hgemm"}')
    out = cli(["results", "compare", "A", "B", "--json"], tmp_path)
    doc = json.loads(out.stdout)
    assert [(r["kernel"], r["problem"], r["file_a"], r["file_b"]) for r in doc["rows"]] == [
        ("hgemm", "hgemm 256x256x256", "A/h.json", "B/deep/h.json"),
        ("scan", "scan n=1000000 fp16 inclusive", "A/s1.json", "B/s1.json")]
    assert doc["rows"][1]["ratio"] == 1.0 and doc["rows"][1]["verdict"] == "same"
    assert [(d["name"], d["b"]) for d in doc["rows"][0]["differences"]["params"]] == [("m0", 32), ("n0", 32)]
    assert doc["only_in_a"] == [{"problem": "scan n=1000 fp16 inclusive", "ran": "mcscan-ul1", "file": "A/s2.json"}]
    assert doc["only_in_b"] == [{"problem": "sort n=1000", "ran": "mcscan", "file": "B/o.json"}]  # as tune names it
    assert doc["skipped_b"] == [{"file": "B/broken.json", "reason": "not a valid hgemm result: tool_version: Field "
                                                                      "required (and 11 more)"}]
    text = cli(["results", "compare", "A", "B"], tmp_path).output
    assert "hgemm: B / A simulated time" in text and "scan: B / A simulated time" in text
    assert "only in A (1, not compared):\n  scan n=1000 fp16 inclusive  (mcscan-ul1; A/s2.json)" in text


def test_operator_runs_match_by_their_problem_as_tune_names_it(tmp_path, cli):
    for name, args in {"a.json": ["run", "topp", "--vocab", "1000", "--s", "64"],
                       "b.json": ["run", "topp", "--vocab", "1000", "--s", "128"],
                       "s.json": ["run", "sort", "--n", "1e4"],
                       "t.json": ["tune", "sort", "--n", "1e4", "--trials", "2", "--storage", "st.journal"]}.items():
        assert cli([*args, "--out", name], tmp_path).exit_code == 0, name
    doc = json.loads(cli(["results", "compare", "a.json", "b.json", "--json"], tmp_path).stdout)
    (row,) = doc["rows"]
    assert row["problem"] == "topp vocab=1000" and row["differences"]["params"] == [{"name": "s", "a": 64, "b": 128}]
    doc = json.loads(cli(["results", "compare", "s.json", "t.json", "--json"], tmp_path).stdout)
    (row,) = doc["rows"]
    assert row["problem"] == "sort n=10000" and row["ratio"] == 1.0  # the tuned best is the heuristic here


def test_a_deeply_nested_file_is_not_a_result(tmp_path, cli):
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    out = cli(["results", "show", "deep.json"], tmp_path)
    assert out.exit_code == 2 and "nested too deeply" in out.output and "Traceback" not in out.output
    out = cli(["results", "list", "."], tmp_path)
    assert out.exit_code == 0 and "deep.json is not readable: nested too deeply" in out.output


@pytest.fixture
def damaged(tmp_path, cli):
    """R/a.json, a valid scan result, and beside it the files a full disk, a kill or another tool leave: the
    result cut at 10 offsets, an empty file, white space, bytes that are not UTF-8, text that is not JSON, a
    result with a field removed, and a trace (JSON without schema_version)."""
    folder = tmp_path / "R"
    folder.mkdir()
    assert cli(["run", "scan", "--n", "1000", "--out", "R/a.json"], tmp_path).exit_code == 0
    data = (folder / "a.json").read_bytes()
    for i in range(10):
        (folder / f"cut{i}.json").write_bytes(data[:1 + i * (len(data) - 3) // 9])
    (folder / "empty.json").write_bytes(b"")
    (folder / "blank.json").write_bytes(b" \n")
    (folder / "latin.json").write_bytes(b'{"a": "\xe9"}')
    (folder / "text.json").write_text("{} and more")
    doc = json.loads(data)
    del doc["metrics"]
    (folder / "invalid.json").write_text(json.dumps(doc))
    (folder / "trace.json").write_text('{"traceEvents": []}')
    return tmp_path


REASONS = {"R/empty.json": "not readable: empty (0 bytes)",
           "R/blank.json": "not readable: empty (2 bytes of white space)",
           "R/latin.json": "not readable: not UTF-8 text (byte 7)",
           "R/text.json": "not readable: not JSON (Extra data: line 1 column 4 (char 3))",
           "R/invalid.json": "not a valid scan result: metrics: Field required"}


def test_list_names_every_unreadable_or_invalid_file_with_its_reason(damaged, cli):
    out = cli(["results", "list", "R", "--json"], damaged)
    assert out.exit_code == 0
    rows = {r["path"]: r for r in json.loads(out.stdout)}
    assert sorted(rows) == sorted(["R/a.json", *REASONS, *(f"R/cut{i}.json" for i in range(10))])  # not trace
    assert rows["R/a.json"]["valid"] and rows["R/a.json"]["problems"] == 1 and rows["R/a.json"]["error"] is None
    assert {p: rows[p]["error"] for p in REASONS} == REASONS
    for i in range(10):
        r = rows[f"R/cut{i}.json"]
        assert (r["valid"], r["readable"], r["kind"], r["problems"]) == (False, False, None, 0)
        assert r["error"].startswith("not readable: truncated, the JSON stops part way ("), r["error"]
    assert not rows["R/invalid.json"]["valid"] and rows["R/invalid.json"]["readable"]
    text = cli(["results", "list", "R"], damaged).output
    for path, reason in REASONS.items():
        assert f"\n{path} is {reason}\n" in text
    assert text.count("(not readable)") == 14 and text.count(" is not readable: truncated") == 10
    assert text.endswith("\n1 other JSON file(s) under R left out: not result documents (no schema_version)\n")


def test_list_passes_over_the_tuners_ground_truth_caches(tmp_path, cli):
    cache = tmp_path / "results" / "tuning" / "ground-truth" / "scan"
    cache.mkdir(parents=True)
    (cache / "0123abcd.json").write_text('{"points": []}')
    out = cli(["results", "list"], tmp_path)
    assert out.exit_code == 0 and "other JSON" not in out.output and "no result files under results" in out.output


def test_compare_lists_every_file_it_left_out(damaged, cli):
    (damaged / "A").mkdir()
    assert cli(["run", "scan", "--n", "1000", "--out", "A/a.json"], damaged).exit_code == 0
    out = cli(["results", "compare", "A", "R", "--json"], damaged)
    doc = json.loads(out.stdout)
    assert out.exit_code == 0 and [r["verdict"] for r in doc["rows"]] == ["same"]
    skipped = {s["file"]: s["reason"] for s in doc["skipped_b"]}
    assert len(skipped) == 15 and {p: skipped[p] for p in REASONS} == REASONS
    text = cli(["results", "compare", "A", "R"], damaged).output
    assert "\n15 file(s) of B left out, not valid or not readable:\n  R/blank.json is not readable: empty" in text
    assert all(f"\n  {path} is {reason}\n" in text for path, reason in REASONS.items())
    assert text.count("\n  R/cut") == 10
    (damaged / "E").mkdir()
    (damaged / "E" / "empty.json").write_bytes(b"")
    out = cli(["results", "compare", "A", "E"], damaged)
    assert out.exit_code == 2 and out.output == ("error: B: no problem of E is also in A (A; 1 file(s) of B left "
                                                 "out, first E/empty.json is not readable: empty (0 bytes))\n")


@pytest.mark.parametrize("name, message", [
    ("invalid.json", "R/invalid.json is not a valid scan result: metrics: Field required"),
    ("empty.json", "R/empty.json is not a JSON result file: empty (0 bytes)"),
    ("cut4.json", "R/cut4.json is not a JSON result file: truncated, the JSON stops part way ("),
])
@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_show_refuses_a_file_that_is_not_a_valid_result(damaged, cli, name, message, json_flag):
    out = cli(["results", "show", f"R/{name}", *json_flag], damaged)
    assert out.exit_code == 2 and out.output.startswith(f"error: FILE: {message}") and out.output.count("\n") == 1
    assert cli(["results", "show", "R/a.json", *json_flag], damaged).exit_code == 0


@pytest.mark.parametrize("text, truncated", [
    ('{"a": 1.', True), ('{"a": 2e-', True), ('{"a": 1.5', True), ('{"a": tr', True), ('{"a": [nu', True),
    ('{"a": "x', True), ('{"a": 1x}', False), ('{"a": yes}', False), ('{"a": 1} x', False)])
def test_a_document_cut_inside_a_number_or_a_literal_is_called_truncated(tmp_path, text, truncated):
    from ascendbench.commands.results import _decode

    path = tmp_path / "r.json"
    path.write_text(text)
    doc, why = _decode(path)
    assert doc is None and why.startswith("truncated, the JSON stops part way") == truncated, why


def md_tables(text: str) -> list[list[list[str]]]:
    """The GitHub pipe tables of Markdown `text`, parsed by markdown-it (rich's Markdown parser) with its table
    rule: per table its rows (the header first) of cells as they render, as text (<br> a line break)."""
    import html

    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark").enable("table")
    tables, row = [], None
    for token in md.parse(text):
        if token.type == "table_open":
            tables.append([])
        elif token.type == "tr_open":
            row = []
            tables[-1].append(row)
        elif token.type == "inline" and row is not None:
            row.append(html.unescape(md.renderInline(token.content).replace("<br>", "\n")))
        elif token.type == "tr_close":
            row = None
    return tables


def test_list_shows_hardware_and_tool_version_as_text_json_and_markdown(two_scans, cli, columns):
    columns(132)
    (two_scans / "results").mkdir()
    for name in ("a.json", "b.json"):
        (two_scans / name).rename(two_scans / "results" / name)
    doc = json.loads((two_scans / "results" / "b.json").read_text())
    doc["tool_version"], doc["hardware"]["name"], doc["created_at"] = "0.0.9", "my|chip", "2020-01-01T00:00:00+00:00"
    (two_scans / "results" / "old.json").write_text(json.dumps(doc))
    (two_scans / "results" / "cut.json").write_text('{"schema_version": 1, "ker')
    rows = json.loads(cli(["results", "list", "--json"], two_scans).stdout)
    assert [(r["path"], r["hardware"], r["tool_version"]) for r in rows][2:] == [
        ("results/old.json", "my|chip", "0.0.9"), ("results/cut.json", "", "")]
    assert {r["hardware"] for r in rows[:2]} == {"ascend-910b4"}
    text = cli(["results", "list"], two_scans).stdout
    assert re.search(r"hardware +version +file", text) and re.search(r"ascend-910b4 +0\.1\.0 +results/a\.json", text)
    out = cli(["results", "list", "--md"], two_scans)
    assert out.exit_code == 0
    (table,) = md_tables(out.stdout)
    assert table[0] == ["created (UTC)", "kind", "kernel", "ran", "problems", "hardware", "version", "file"]
    assert table[3] == ["2020-01-01 00:00", "scan", "scan", "mcscan", "1", "my|chip", "0.0.9", "results/old.json"]
    assert table[4] == ["", "(not readable)", "", "", "0", "", "", "results/cut.json"]
    assert "my\\|chip" in out.stdout and "- results/cut.json is not readable: truncated" in out.stdout
    both = cli(["results", "list", "--md", "--json"], two_scans)
    assert both.exit_code == 2 and both.output == "error: --md: cannot be combined with --json; choose one\n"


def test_compare_warns_when_tool_versions_differ(two_scans, cli, columns):
    columns(132)
    doc = json.loads((two_scans / "a.json").read_text())
    doc["tool_version"] = "0.0.9"
    (two_scans / "old.json").write_text(json.dumps(doc))
    warning = ("written by other ascendbench versions, 0.0.9 in A and 0.1.0 in B (1 of 1 compared problem(s)): the "
               "timing model may differ between them, so a ratio mixes in the tool's changes")
    out = cli(["results", "compare", "old.json", "a.json"], two_scans)
    assert out.exit_code == 0 and out.stdout.startswith(f"Warning: {warning}\n") and "same" in out.stdout
    js = cli(["results", "compare", "old.json", "a.json", "--json"], two_scans)
    doc = json.loads(js.stdout)
    assert doc["warnings"] == [warning] and doc["tool_versions"] == {"a": ["0.0.9"], "b": ["0.1.0"]}
    assert js.stderr == f"warning: {warning}\n"
    md = cli(["results", "compare", "old.json", "a.json", "--md"], two_scans).stdout
    assert md.startswith("Warning: written by other ascendbench versions, 0.0.9 in A")
    same = cli(["results", "compare", "a.json", "a.json", "--json"], two_scans)
    assert json.loads(same.stdout)["warnings"] == [] and same.stderr == ""
    assert "Warning" not in cli(["results", "compare", "a.json", "a.json"], two_scans).output


def test_compare_as_markdown(two_scans, cli):
    assert cli(["run", "scan", "--n", "1000", "--out", "c.json"], two_scans).exit_code == 0
    (two_scans / "A").mkdir()
    (two_scans / "B").mkdir()
    (two_scans / "a.json").rename(two_scans / "A" / "a.json")
    (two_scans / "c.json").rename(two_scans / "A" / "c.json")
    (two_scans / "b.json").rename(two_scans / "B" / "b.json")
    (two_scans / "B" / "empty.json").write_bytes(b"")
    out = cli(["results", "compare", "A", "B", "--md", "--threshold", "0.5"], two_scans)
    a = json.loads((two_scans / "A" / "a.json").read_text())["metrics"]["time_s"]
    b = json.loads((two_scans / "B" / "b.json").read_text())["metrics"]["time_s"]
    verdict = "slower" if b / a > 1.5 else "faster" if b / a < 0.5 else "same"
    assert out.exit_code == (1 if verdict == "slower" else 0)
    (table,) = md_tables(out.stdout)
    assert table == [["problem", "A", "B", "time A", "time B", "B / A", "verdict", "differs (A → B)"],
                     ["scan n=1000000 fp16 inclusive", "mcscan-ul1", "mcscan", f"{a * 1e6:,.2f} µs",
                      f"{b * 1e6:,.2f} µs", f"{b / a:.4f}", verdict, "algorithm mcscan-ul1 → mcscan"]]
    assert out.stdout.startswith("**scan: B / A simulated time (threshold 50%)**\n\n| problem | A |")
    assert "|---|---|---|---:|---:|---:|---|---|\n" in out.stdout
    assert ("only in A (1, not compared):\n\n- scan n=1000 fp16 inclusive  (mcscan-ul1; A/c.json)\n" in out.stdout)
    assert "- B/empty.json is not readable: empty (0 bytes)\n" in out.stdout


def test_show_wraps_command_and_metrics_at_the_terminal_width(tmp_path, cli, columns):
    args = ["run", "scan", "--n", "1e6", "--algorithm", "mcscan", "--s", "64", "--blocks", "20", "--dtype", "int8",
            "--exclusive", "--seed", "12345", "--out", "a-result-file-with-a-long-name-of-many-words.json"]
    assert cli(args, tmp_path).exit_code == 0
    doc = json.loads((tmp_path / args[-1]).read_text())
    doc["command"] = ["ascendbench", *args]  # under pytest, the command saved is pytest's
    (tmp_path / args[-1]).write_text(json.dumps(doc))
    for width in (80, 60):
        columns(width)
        text = cli(["results", "show", args[-1]], tmp_path).stdout
        lines = text.splitlines()
        assert max(len(line) for line in lines) <= width, text
        start = next(i for i, line in enumerate(lines) if line.startswith("command: "))
        command = [lines[start]]
        while lines[start + len(command)].startswith(" " * 9):  # continuation lines under the text
            command.append(lines[start + len(command)])
        assert len(command) > 1 and " ".join(line[9:] for line in command) == " ".join(doc["command"])
        start = next(i for i, line in enumerate(lines) if line.startswith("metrics: "))
        metrics = " ".join(line[9:] for line in lines[start:])
        assert len(lines) - start > 1 and metrics == ", ".join(f"{k}={v:.4g}" for k, v in doc["metrics"].items())


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -1.0], ids=["nan", "inf", "negative"])
def test_a_time_that_is_no_time_is_never_compared_or_exported_as_a_number(two_scans, cli, bad):
    # an edited or broken file: compare says "no time" (not "same", not a ratio); export leaves a NaN or an
    # infinity out (its cells are numbers) and writes a negative number as the file has it
    doc = json.loads((two_scans / "a.json").read_text())
    doc["metrics"]["time_s"] = bad
    (two_scans / "bad.json").write_text(json.dumps(doc))
    out = cli(["results", "compare", "a.json", "bad.json", "--json"], two_scans)
    (row,) = json.loads(out.stdout)["rows"]
    assert row["verdict"] == "no time" and row["ratio"] is None and row["time_b_s"] is None
    export = cli(["results", "export", "bad.json", "--rows", "runs"], two_scans)
    (cells,) = list(csv.DictReader(io.StringIO(export.stdout)))
    assert export.exit_code == 0 and cells["time_us"] == ("-1000000.0" if bad == -1.0 else "")


def test_export_takes_a_file_named_twice_or_also_in_a_folder_once(two_scans, cli):
    export = cli(["results", "export", "a.json", "./a.json", ".", "--rows", "runs"], two_scans)
    files = [row["file"] for row in csv.DictReader(io.StringIO(export.stdout))]
    assert export.exit_code == 0 and sorted(files) == ["a.json", "b.json"], files


@pytest.mark.parametrize("width", [80, 132])
def test_list_keeps_headers_dates_and_paths_whole_on_a_narrow_terminal(tmp_path, cli, columns, width):
    # a newcomer's three runs (default paths such as results/runs/mcscan-ul1/<stamp>-<id>.json): at 132 columns
    # "problems" was printed one letter per line, at 80 the paths folded over 8 lines and dates broke as
    # "2026-1" / "2-04"
    for args in (["scan", "--n", "1e4"], ["sort", "--n", "1e4"], ["hgemm", "--m", "256", "--n", "256", "--k", "256"]):
        assert cli(["run", *args], tmp_path).exit_code == 0
    rows = json.loads(cli(["results", "list", "--json"], tmp_path).stdout)
    columns(width)
    out = cli(["results", "list"], tmp_path)
    assert out.exit_code == 0
    lines = out.stdout.splitlines()
    assert max(len(line.rstrip()) for line in lines) <= width, out.stdout
    words = [w for line in lines for w in line.split()]
    for header in ("created", "(UTC)", "kind", "kernel", "ran", "problems", "hardware", "file"):
        assert header in words or (header == "file" and width == 80), (header, out.stdout)
    assert len(rows) == 3 and all(len(r["path"]) >= 46 for r in rows)
    for r in rows:
        assert r["path"] in words, (r["path"], out.stdout)  # whole on one line: it can be pasted
        assert r["created_at"][:10] in words, out.stdout
    assert lines[-1] == f"every readable file was written by ascendbench {rows[0]['tool_version']}"
