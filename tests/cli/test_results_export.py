"""`ascendbench results export`: CSV rows per run, per HGEMM shape and per tuning trial, read back with the csv
module (and pandas, where it is installed) into the expected columns and the documents' values."""

import csv
import io
import json

import pytest

from ascendbench.store.export import RUN_COLUMNS, SHAPE_COLUMNS, TRIAL_COLUMNS

RUNS = {"s.json": ["run", "scan", "--n", "1e5", "--exclusive"],
        "b.json": ["run", "batched-scan", "--batch", "4", "--length", "1000"],
        "g.json": ["run", "segmented-scan", "--n", "1000"],
        "o.json": ["run", "sort", "--n", "1000"],
        "t.json": ["run", "topk", "--n", "1000", "--k", "8"],
        "h.json": ["run", "hgemm", "--m", "64", "--n", "64", "--k", "64"],
        "w.json": ["run", "hgemm", "--workload", "fig6"]}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """R/: a result of every run kind (an HGEMM workload of 3 shapes among them) and a tuning result."""
    from typer.testing import CliRunner

    from ascendbench.cli import app

    folder = tmp_path_factory.mktemp("export")
    (folder / "R").mkdir()
    runner = CliRunner()
    for name, args in RUNS.items():
        out = runner.invoke(app, [*args, "--out", str(folder / "R" / name)])
        assert out.exit_code == 0, out.output
    return folder


def _read(text: str) -> tuple[list[str], list[dict[str, str]]]:
    reader = csv.DictReader(io.StringIO(text))
    return list(reader.fieldnames), list(reader)


def _us(seconds: float) -> str:
    return repr(seconds * 1e6)


def test_runs_a_row_per_run_with_the_documents_values(runs, cli):
    out = cli(["results", "export", "R", "--out", "runs.csv"], runs)
    assert out.exit_code == 0 and out.stdout == "7 row(s) (runs) written to runs.csv\n", out.output
    columns, rows = _read((runs / "runs.csv").read_text())
    assert tuple(columns[:len(RUN_COLUMNS)]) == RUN_COLUMNS
    assert columns[len(RUN_COLUMNS):] == sorted(columns[len(RUN_COLUMNS):])  # the rest by name
    assert all("{" not in cell and "[" not in cell for row in rows for cell in row.values())  # nothing nested
    by = {row["file"]: row for row in rows}
    assert list(by) == [f"R/{name}" for name in sorted(RUNS)]
    docs = {name: json.loads((runs / "R" / name).read_text()) for name in RUNS}
    s, r = docs["s.json"], by["R/s.json"]
    assert (r["kind"], r["kernel"], r["ran"], r["problem"]) == ("scan", "scan", s["kernel"],
                                                                "scan n=100000 fp16 exclusive")
    assert (r["n"], r["dtype"], r["out_dtype"], r["exclusive"], r["verified"]) == ("100000", "fp16", "fp32", "True",
                                                                                 "True")
    assert r["time_us"] == _us(s["metrics"]["time_s"]) and r["bandwidth_gbps"] == repr(s["metrics"]["bandwidth_gbps"])
    assert r["phase_1_us"] == _us(s["metrics"]["phase_1_s"]) and r["elements_per_s"] == repr(s["metrics"]["elements_per_s"])
    assert (r["hardware"], r["tool_version"], r["param_s"], r["param_blocks"]) == ("ascend-910b4", s["tool_version"],
                                                                                 "128", "")
    # named for what they are: a fraction of the HBM bandwidth; the host's steps around the kernel
    assert r["fraction_of_hbm_peak"] == repr(s["metrics"]["fraction_of_peak"]) and r["fraction_of_cube_peak"] == ""
    assert r["host_overhead_us"] == _us(s["metrics"]["host_window_s"])
    assert float(r["call_time_us"]) == pytest.approx(float(r["time_us"]) + float(r["host_overhead_us"]))
    assert not {"fraction_of_peak", "host_window_us", "s", "k", "m"} & set(columns)
    b, r = docs["b.json"], by["R/b.json"]
    assert (r["kind"], r["batch"], r["length"], r["n"], r["param_algorithm"]) == ("batched-scan", "4", "1000", "", "auto")
    assert r["candidate_scanu_us"] == _us(b["candidates_time_s"]["scanu"])
    g, r = docs["g.json"], by["R/g.json"]
    assert (r["segments"], r["ran"], r["time_us"]) == (str(g["problem"]["segments"]), "mcscan",
                                                       _us(g["metrics"]["time_s"]))
    o, r = docs["o.json"], by["R/o.json"]
    assert (r["kind"], r["kernel"], r["ran"], r["problem"], r["dtype"]) == ("operator", "sort", "mcscan", "sort n=1000",
                                                                            "fp16")
    assert r["time_us"] == _us(o["simulated"]["time_s"]) and r["baseline_variant"] == "vector"
    assert r["baseline_speedup"] == repr(o["simulated"]["baseline"]["speedup"]) and r["param_passes"] == "16"
    w, r = docs["w.json"], by["R/w.json"]
    assert (r["problem"], r["workload"], r["shapes"], r["verified"]) == ("fig6", "fig6", "3", "")  # too large to check
    assert r["time_us_total"] == _us(w["summary"]["time_s_total"]) and r["tflops_p50"] == repr(w["summary"]["tflops_p50"])
    assert (r["gemm_m"], r["m0"], r["fraction_of_cube_peak"]) == ("", "", repr(w["metrics"]["fraction_of_peak"]))
    h, r = docs["h.json"], by["R/h.json"]
    assert (r["problem"], r["verified"], r["n"], r["fraction_of_hbm_peak"]) == ("hgemm 64x64x64", "True", "", "")
    (shape,) = h["shapes"]  # one shape: its M, N, K and tiling in the run's row
    assert [r[c] for c in ("gemm_m", "gemm_n", "gemm_k", "gemm_batch", "m0", "n0", "k0")] == [
        str(shape[c]) for c in ("m", "n", "k", "batch")] + [str(shape["tiling"][c]) for c in ("m0", "n0", "k0")]
    assert r["fraction_of_cube_peak"] == repr(shape["fraction_of_peak"])
    t, r = docs["t.json"], by["R/t.json"]  # top-k's k is a parameter, not a GEMM's K
    assert (r["kernel"], r["n"], r["param_k"], r["gemm_k"]) == ("topk", "1000", str(t["problem"]["params"]["k"]), "")
    stdout = cli(["results", "export", "R"], runs)  # - (the default): the same CSV on stdout
    assert stdout.exit_code == 0 and stdout.stdout == (runs / "runs.csv").read_text()


def test_list_and_export_name_kernel_and_ran_alike(runs, cli):
    """A scan run is kernel "scan" (the family) that ran mcscan-ul1 (the document's kernel) in both."""
    rows = json.loads(cli(["results", "list", "R", "--json"], runs).stdout)
    listed = {r["path"]: (r["kernel"], r["ran"]) for r in rows}
    exported = {r["file"]: (r["kernel"], r["ran"]) for r in _read(cli(["results", "export", "R"], runs).stdout)[1]}
    assert listed == exported and len(listed) == len(RUNS)
    docs = {name: json.loads((runs / "R" / name).read_text()) for name in RUNS}
    assert listed["R/s.json"] == ("scan", docs["s.json"]["kernel"]) and docs["s.json"]["kernel"].startswith("mcscan")
    assert listed["R/g.json"] == ("segmented-scan", docs["g.json"]["algorithm"])
    assert listed["R/t.json"] == ("topk", "bisection") and listed["R/h.json"] == ("hgemm", "proposed")


def test_shapes_a_row_per_hgemm_shape(runs, cli):
    out = cli(["results", "export", "R/h.json", "R/w.json", "R/s.json", "--rows", "shapes", "--out", "-"], runs)
    assert out.exit_code == 0
    assert out.stderr == "left out 1 result(s) without shapes (1 scan); only HGEMM runs have shapes\n"
    columns, rows = _read(out.stdout)
    assert tuple(columns[:len(SHAPE_COLUMNS)]) == SHAPE_COLUMNS
    assert columns[len(SHAPE_COLUMNS):] == ["phase_epilogue_us", "phase_gemm_us", "phase_launch_us", "phase_padding_us"]
    shapes = [(f"R/{name}", i, s) for name in ("h.json", "w.json")
              for i, s in enumerate(json.loads((runs / "R" / name).read_text())["shapes"])]
    assert len(rows) == len(shapes) == 4
    for row, (file, i, s) in zip(rows, shapes):
        assert (row["file"], row["shape"], row["m"], row["n"], row["k"], row["batch"]) == (
            file, str(i), str(s["m"]), str(s["n"]), str(s["k"]), str(s["batch"]))
        assert (row["m0"], row["n0"], row["k0"]) == tuple(str(s["tiling"][t]) for t in ("m0", "n0", "k0"))
        assert row["time_us"] == _us(s["time_s"]) and row["tflops"] == repr(s["tflops"])
        assert row["fraction_of_cube_peak"] == repr(s["fraction_of_peak"])
        assert row["phase_gemm_us"] == _us(s["phases_s"]["gemm"])
        assert row["problem"] == f"hgemm {s['m']}x{s['n']}x{s['k']}"


def test_trials_a_row_per_trial_of_the_study(tmp_path, cli):
    args = ["tune", "hgemm", "--m", "512", "--n", "512", "--k", "512", "--trials", "5", "--no-exhaustive"]
    assert cli([*args, "--out", "t.json"], tmp_path).exit_code == 0
    doc = json.loads((tmp_path / "t.json").read_text())
    (problem,) = doc["problems"]
    out = cli(["results", "export", "t.json", "--rows", "trials", "--out", "trials.csv"], tmp_path)
    assert out.exit_code == 0, out.output
    columns, rows = _read((tmp_path / "trials.csv").read_text())
    config = list(problem["heuristic"]["config"])
    assert columns == [*TRIAL_COLUMNS, *sorted(config)]
    counts = problem["trials"]
    assert len(rows) == counts["finished"] and [r["trial"] for r in rows] == [str(i) for i in range(len(rows))]
    assert sum(r["state"] == "complete" for r in rows) == counts["complete"]
    assert sum(r["state"] == "infeasible" and r["infeasible"] != "" for r in rows) == counts["infeasible"]
    (best,) = [r for r in rows if r["best"] == "True"]
    assert best["trial"] == str(problem["best"]["trial"]) and best["time_us"] == _us(problem["best"]["time_s"])
    assert best["tflops"] == repr(problem["best"]["throughput"]) and best["bandwidth_gbps"] == ""
    assert {k: best[k] for k in config} == {k: str(v) for k, v in problem["best"]["config"].items()}
    assert {(r["problem"], r["study"], r["seed"], r["hardware"]) for r in rows} == {
        ("hgemm 512x512x512", problem["study_name"], "0", "atlas-300t-a2")}
    complete = sorted(float(r["time_us"]) for r in rows if r["state"] == "complete")
    assert complete[0] == float(best["time_us"])


def test_a_failed_export_leaves_the_old_file_as_it_was(tmp_path, cli):
    assert cli(["tune", "hgemm", "--m", "256", "--n", "256", "--k", "256", "--trials", "2", "--no-exhaustive",
                "--out", "t.json"], tmp_path).exit_code == 0
    (tmp_path / "old.csv").write_text("kept\n")
    out = cli(["results", "export", "t.json", "--rows", "trials", "--storage", "gone.journal", "--out", "old.csv"],
              tmp_path)
    assert out.exit_code == 2 and out.output.startswith("error: --storage: no journal file 'gone.journal'")
    assert (tmp_path / "old.csv").read_text() == "kept\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.csv", "results", "t.json"]  # no staging file left


def test_a_full_disk_leaves_no_half_written_file(runs, cli, monkeypatch):
    import errno

    from ascendbench.store import io as store_io

    (runs / "full.csv").write_text("kept\n")

    def no_space(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(store_io.os, "fsync", no_space)  # after the CSV's bytes went to the staging file
    out = cli(["results", "export", "R", "--out", "full.csv"], runs)
    assert out.exit_code == 1 and out.output == "error: --out: cannot write 'full.csv': No space left on device\n"
    assert (runs / "full.csv").read_text() == "kept\n"
    assert not [p.name for p in runs.iterdir() if p.name.startswith(".")]  # no staging file left


@pytest.mark.parametrize("args, message", [
    (["--rows", "studies"], "--rows: must be one of runs, shapes, trials, got 'studies'"),
    (["--out", "x.txt"], "--out: must end in .csv, got 'x.txt'"),
    (["--out", "nowhere/x.csv"], "--out: folder 'nowhere' does not exist"),
    (["--storage", "s.journal"], "--storage: only --rows trials reads studies; drop it"),
    (["missing.json"], "PATHS: file not found: missing.json"),
])
def test_user_errors(tmp_path, cli, args, message):
    assert cli(["results", "export"], tmp_path).output == ("error: PATHS: no results/ folder here (`ascendbench "
                                                           "run` and `tune` save there); name result files or "
                                                           "folders\n")
    (tmp_path / "results").mkdir()
    out = cli(["results", "export", *args], tmp_path)
    assert out.exit_code == 2 and out.output == f"error: {message}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results"]


def test_pandas_reads_the_columns_as_numbers(runs, cli):
    pd = pytest.importorskip("pandas")  # not a dependency: checked where it is installed
    out = cli(["results", "export", "R"], runs)
    frame = pd.read_csv(io.StringIO(out.stdout))
    assert list(frame.columns) == _read(out.stdout)[0] and len(frame) == len(RUNS)
    assert frame["time_us"].dtype.kind == "f" and frame["n"].dtype.kind == "f"  # floats: empty cells are NaN
    s = json.loads((runs / "R" / "s.json").read_text())
    assert frame.set_index("file").loc["R/s.json", "time_us"] == s["metrics"]["time_s"] * 1e6
