"""`ascendbench run scan` through typer's CliRunner: the happy paths and every user-error path."""

import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from ascendbench.store.schema import RunResult


def result_files(cwd: Path) -> list[Path]:
    return sorted((cwd / "results").rglob("*.json")) if (cwd / "results").exists() else []


def test_run_scan_writes_a_valid_result_and_prints_the_report(tmp_path, cli):
    out = cli(["run", "scan", "--n", "1e5"], tmp_path)
    assert out.exit_code == 0, out.output
    for text in ("simulated time", "bandwidth", "fraction of HBM peak", "fraction of memcpy", "phase I", "phase II",
                 "matmuls", "vector instructions", "passed", "host wall time", "CUBE"):
        assert text in out.output
    files = result_files(tmp_path)
    assert len(files) == 1 and files[0].parent == tmp_path / "results" / "runs" / "mcscan-ul1"
    doc = RunResult.model_validate_json(files[0].read_text())
    assert doc.problem.n == 100000 and doc.verification.passed and doc.metrics["bandwidth_gbps"] > 0
    assert doc.counters["matmuls"] == 3 * -(-100000 // 16384)


def test_json_output_is_the_document_only(tmp_path, cli):
    out = cli(["run", "scan", "--n", "2**14", "--algorithm", "scanu", "--s", "64", "--exclusive", "--json",
                  "--no-save"], tmp_path)
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    assert doc["kernel"] == "scanu" and doc["params"]["s"] == 64 and doc["problem"]["exclusive"] is True
    assert set(doc) >= {"schema_version", "tool_version", "created_at", "command", "hardware", "kernel", "params",
                        "problem", "metrics", "counters", "verification", "host"}
    assert doc["metrics"]["time_s"] > 0 and "bandwidth_gbps" in doc["metrics"]
    assert result_files(tmp_path) == []


@pytest.mark.parametrize("spelling", ["100000", "100_000", "1e5", "1.0e5"])
def test_n_spellings(tmp_path, spelling, cli):
    out = cli(["run", "scan", "--n", spelling, "--model-only", "--json", "--no-save"], tmp_path)
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["problem"]["n"] == 100000


def test_empty_scan_is_valid(tmp_path, cli):
    out = cli(["run", "scan", "--n", "0", "--json", "--no-save"], tmp_path)
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    assert doc["problem"]["n"] == 0 and doc["verification"]["passed"] is True


def test_model_only_at_huge_n(tmp_path, cli):
    out = cli(["run", "scan", "--n", "2**40", "--model-only", "--json", "--no-save"], tmp_path)
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    assert doc["verification"]["performed"] is False and doc["problem"]["n"] == 2**40
    assert doc["counters"]["matmuls"] == 3 * 2**40 // 16384


def test_input_and_output_files(tmp_path, cli):
    x = np.random.default_rng(0).integers(-128, 128, 50_000).astype(np.int8)
    np.save(tmp_path / "x.npy", x)
    out = cli(["run", "scan", "--input", "x.npy", "--algorithm", "mcscan", "--output-file", "y.npy", "--out",
                  "r.json"], tmp_path)
    assert out.exit_code == 0, out.output
    y = np.load(tmp_path / "y.npy")
    np.testing.assert_array_equal(y, np.cumsum(x, dtype=np.int64).astype(np.int32))
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["problem"]["data"] == "file" and len(doc["problem"]["input_sha256"]) == 64
    assert doc["problem"]["dtype"] == "int8" and doc["problem"]["out_dtype"] == "int32"


def test_trace_is_chrome_trace_format(tmp_path, cli):
    out = cli(["run", "scan", "--n", "1e5", "--trace", "t.json", "--no-save"], tmp_path)
    assert out.exit_code == 0, out.output
    trace = json.loads((tmp_path / "t.json").read_text())
    spans = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    names = {e["args"]["name"] for e in trace["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"}
    assert spans and all(e["dur"] >= 0 and e["ts"] >= 0 for e in spans)
    assert {"aic CUBE", "aic MTE2", "aiv0 VECTOR", "aiv0 MTE3"} <= names


def test_hardware_option_takes_a_profile_or_a_file(tmp_path, cli):
    out = cli(["run", "scan", "--n", "1e5", "--model-only", "--hardware", "atlas-300t-a2", "--json", "--no-save"],
                 tmp_path)
    assert out.exit_code == 0 and json.loads(out.stdout)["hardware"]["name"] == "atlas-300t-a2"


def _write_npy(tmp_path, name, array):
    np.save(tmp_path / name, array)
    return name


ERROR_CASES = [
    (["--n", "-5"], "--n: expected a non-negative integer"),
    (["--n", "1.5"], "--n: expected a non-negative integer"),
    (["--n", "lots"], "--n: expected a non-negative integer"),
    (["--n", "1e5", "--s", "48"], "--s: must be one of 16, 32, 64, 128"),
    (["--n", "1e5", "--algorithm", "bogo"], ("--algorithm: must be one of mcscan-ul1, mcscan, scanu, scanul1, "
                                             "vec-cumsum, memcpy, got 'bogo'")),
    (["--n", "1e5", "--blocks", "0"], "--blocks: must be at least 1"),
    (["--n", "1e5", "--chunk", "sometimes"], "--chunk: expected 'auto', 'off'"),
    (["--n", "1e5", "--dtype", "bf16"], "--dtype: must be one of fp16, int8, got 'bf16'"),
    (["--n", "1e5", "--dtype", "int8", "--out-dtype", "fp16"], "--out-dtype: for int8 input must be one of int32"),
    (["--n", "1e5", "--dtype", "int8", "--algorithm", "scanul1"], "--dtype: scanul1 supports fp16 only"),
    (["--n", "1e5", "--hardware", "tpu-v9"], "--hardware: unknown profile 'tpu-v9'"),
    (["--n", "1e5", "--output-file", "y.txt"], "--output-file: must end in .npy"),
    (["--n", "1e5", "--output-file", "nowhere/y.npy"], "--output-file: folder 'nowhere' does not exist"),
    (["--n", "1e5", "--model-only", "--output-file", "y.npy"], "--output-file: there is no output with --model-only"),
    (["--input", "missing.npy"], "--input: file not found"),
    (["--n", "2**60"], "--n: the functional run of"),
    (["--n", "1e5", "--l2", "warm", "--no-warm-l2"], "--l2: --no-warm-l2 means a start without the input in L2; "
                                                     "it disagrees with --l2 warm"),
    (["--n", "1e5", "--no-warm-l2", "--l2", "warm"], "--l2: --no-warm-l2 means a start without the input in L2"),
    (["--n", "1e5", "--l2", "flushed", "--warm-l2"], "--l2: --warm-l2 means --l2 warm; it disagrees with --l2 flushed"),
]


@pytest.mark.parametrize("args, start", [(["--l2", "clean", "--no-warm-l2"], "clean"), (["--no-warm-l2"], "flushed"),
                                         (["--l2", "warm", "--warm-l2"], "warm"), (["--warm-l2"], "warm"), ([], "flushed")])
def test_l2_and_warm_l2_that_agree_run(tmp_path, cli, args, start):
    out = cli(["run", "scan", "--n", "1e3", *args, "--json", "--no-save"], tmp_path)
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["model"]["l2"] == start


@pytest.mark.parametrize("args, message", ERROR_CASES)
def test_user_errors_are_one_line_exit_2_and_write_nothing(tmp_path, args, message, cli):
    out = cli(["run", "scan", *args], tmp_path)
    assert out.exit_code == 2, out.output
    lines = [line for line in out.output.strip().splitlines() if line.strip()]
    assert len(lines) == 1 and message in lines[0], out.output
    assert "Traceback" not in out.output
    assert result_files(tmp_path) == [] and not (tmp_path / "y.npy").exists()


def test_input_file_errors(tmp_path, cli):
    cases = {
        "two_d.npy": (np.zeros((3, 4), dtype=np.float16), "--input: array must be 1-D, got shape (3, 4)"),
        "float32.npy": (np.zeros(10, dtype=np.float32), "--input: array dtype must be float16 or int8, got float32"),
    }
    for name, (array, message) in cases.items():
        _write_npy(tmp_path, name, array)
        out = cli(["run", "scan", "--input", name], tmp_path)
        assert out.exit_code == 2 and message in out.output, out.output
    (tmp_path / "junk.npy").write_bytes(b"not numpy")
    out = cli(["run", "scan", "--input", "junk.npy"], tmp_path)
    assert out.exit_code == 2 and "--input: junk.npy is not a .npy file (bad magic" in out.output
    _write_npy(tmp_path, "ok.npy", np.ones(100, dtype=np.float16))
    out = cli(["run", "scan", "--input", "ok.npy", "--n", "99"], tmp_path)
    assert out.exit_code == 2 and "--n: 99 disagrees with the input's length 100" in out.output
    out = cli(["run", "scan", "--input", "ok.npy", "--dtype", "int8"], tmp_path)
    assert out.exit_code == 2 and "--dtype: int8 disagrees with the input array's fp16" in out.output
    np.savez(tmp_path / "one.npz", x=np.ones(10, np.float16))  # one array: the message said "several"
    out = cli(["run", "scan", "--input", "one.npz"], tmp_path)
    assert out.exit_code == 2 and out.output.strip() == ("error: --input: one.npz is a .npz archive (arrays: 'x'); "
                                                         "give one 1-D .npy array"), out.output
    assert result_files(tmp_path) == []


def test_bad_hardware_file_names_the_field(tmp_path, cli):
    (tmp_path / "chip.toml").write_text('name = "x"\ndescription = "y"\n')
    out = cli(["run", "scan", "--n", "10", "--hardware", "chip.toml"], tmp_path)
    assert out.exit_code == 2 and "field 'ai_cores' is missing" in out.output


def test_tile_that_does_not_fit_is_a_user_error(tmp_path, cli):
    from importlib import resources

    src = (resources.files("ascendbench.hardware") / "profiles" / "ascend-910b4.toml").read_text()
    small = "\n".join('l0c_bytes = { value = 32768, source = "test" }' if line.startswith("l0c_bytes") else line
                      for line in src.splitlines())
    (tmp_path / "small.toml").write_text(small)
    out = cli(["run", "scan", "--n", "1e5", "--hardware", "small.toml"], tmp_path)
    assert out.exit_code == 2 and "L0C:" in out.output and "32768 bytes available" in out.output


def test_console_script_turns_usage_errors_into_one_line(tmp_path):
    import subprocess
    import sys

    for args in (["run", "scan", "--s", "abc"], ["run", "scan", "--bogus"], ["hardware", "show"]):
        proc = subprocess.run([sys.executable, "-m", "ascendbench.cli", *args], capture_output=True, text=True,
                              cwd=tmp_path, check=False)
        assert proc.returncode == 2, proc
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in proc.stderr


def test_output_targets_are_checked_before_the_run(tmp_path, cli):
    (tmp_path / "adir.json").mkdir()
    np.save(tmp_path / "x.npy", np.ones(10, np.float16))
    cases = [
        (["--n", "1e4", "--out", "adir.json"], "--out: 'adir.json' exists and is not a regular file"),
        (["--n", "1e4", "--out", "r.txt"], "--out: must end in .json"),
        (["--n", "1e4", "--trace", "t.npy"], "--trace: must end in .json"),
        (["--n", "1e4", "--out", "same.json", "--trace", "same.json"], "is also the --trace file"),
        (["--input", "x.npy", "--output-file", "x.npy"], "is also the --input file"),
        (["--n", "1e4", "--seed", "-1"], "--seed: expected a non-negative integer"),
    ]
    for args, message in cases:
        out = cli(["run", "scan", *args], tmp_path)
        assert out.exit_code == 2 and message in out.output, (args, out.output)
    assert np.load(tmp_path / "x.npy").shape == (10,)
    assert result_files(tmp_path) == []


def test_failed_write_removes_the_files_of_the_run(tmp_path, monkeypatch, cli):
    from ascendbench.store import io

    real = io.atomic_write_text

    def broken(path, text):
        if '"schema_version"' in text:  # the result document (files are staged under hidden names)
            raise OSError(28, "No space left on device")
        return real(path, text)

    monkeypatch.setattr(io, "atomic_write_text", broken)
    out = cli(["run", "scan", "--n", "1e4", "--output-file", "y.npy", "--trace", "t.json", "--out", "r.json"],
                 tmp_path)
    # a full disk is no bad input: exit 1 (2 is for a path that cannot be written, below)
    assert out.exit_code == 1 and "--out: cannot write 'r.json': No space left on device" in out.output
    assert not (tmp_path / "y.npy").exists() and not (tmp_path / "t.json").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no staging file left either


@pytest.mark.parametrize(("errno_name", "code"), [("ENOSPC", 1), ("EFBIG", 1), ("EDQUOT", 1), ("EIO", 1),
                                                 ("EACCES", 2), ("ENOENT", 2), ("EROFS", 2), ("ENOTDIR", 2)])
def test_a_failed_write_exits_1_for_a_full_disk_and_2_for_a_bad_path(tmp_path, monkeypatch, cli, errno_name, code):
    import errno

    from ascendbench.store import io

    def broken(path, text):
        number = getattr(errno, errno_name)
        raise OSError(number, os.strerror(number))

    monkeypatch.setattr(io, "atomic_write_text", broken)
    out = cli(["run", "scan", "--n", "1e4", "--trace", "t.json", "--no-save"], tmp_path)
    assert out.exit_code == code and "--trace: cannot write 't.json'" in out.output, out.output
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_FSIZE semantics")
@pytest.mark.parametrize(("limit", "args", "option"), [
    (2000, [], "--out"),  # the result document under results/
    (3000, ["--trace", "t.json", "--no-save"], "--trace"),
])
def test_a_file_size_limit_under_the_outputs_exits_1_in_one_line_and_leaves_no_file(tmp_path, limit, args, option):
    import resource
    import subprocess

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))

    done = subprocess.run([sys.executable, "-m", "ascendbench.cli", "run", "scan", "--n", "1e5", *args],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120, preexec_fn=limited,
                          env=dict(os.environ, COLUMNS="200"))
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {option}: cannot write ") and "File too large" in lines[0]
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


def test_an_interrupted_write_keeps_the_files_of_the_previous_run(tmp_path):
    # Outputs stages every file and renames them only when all are written: an interrupt between two writes
    # (reproduce writes a PNG, then its JSON) leaves the earlier pair as it was.
    from ascendbench.commands.common import Outputs
    from ascendbench.store.io import atomic_write_text

    png, js = tmp_path / "f.png", tmp_path / "f.json"
    png.write_text("old png")
    js.write_text("old json")

    def interrupted(path):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt), Outputs() as outputs:
        outputs.write("out-dir", png, lambda path: atomic_write_text(path, "new png"))
        outputs.write("out-dir", js, interrupted)
    assert (png.read_text(), js.read_text()) == ("old png", "old json")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.json", "f.png"]
    with Outputs() as outputs:
        outputs.write("out-dir", png, lambda path: atomic_write_text(path, "new png"))
        outputs.write("out-dir", js, lambda path: atomic_write_text(path, "new json"))
    assert (png.read_text(), js.read_text()) == ("new png", "new json")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.json", "f.png"]


def test_over_long_output_names_are_refused_before_the_run(tmp_path, cli):
    out = cli(["run", "scan", "--n", "1e4", "--out", "a" * 300 + ".json"], tmp_path)
    assert out.exit_code == 2 and "--out: file name too long" in out.output and "Traceback" not in out.output
    name = "b" * 245 + ".json"  # a legal name: its temporary files must fit the limit too
    out = cli(["run", "scan", "--n", "1e4", "--out", name], tmp_path)
    assert out.exit_code == 0 and (tmp_path / name).is_file()


def test_empty_and_non_finite_inputs(tmp_path, cli):
    (tmp_path / "empty.npy").write_bytes(b"")
    out = cli(["run", "scan", "--input", "empty.npy"], tmp_path)
    assert out.exit_code == 2 and "--input: empty.npy is empty (0 bytes), not a .npy array" in out.output
    np.save(tmp_path / "nan.npy", np.array([1, np.nan, 2] * 100, np.float16))
    out = cli(["run", "scan", "--input", "nan.npy", "--algorithm", "mcscan", "--json", "--no-save"], tmp_path)
    assert out.exit_code == 1  # verification fails, with the reason, and the JSON is still valid
    doc = json.loads(out.stdout)
    assert doc["verification"]["passed"] is False and "NaN" in doc["verification"]["tolerance"]
    assert doc["verification"]["max_abs_error"] is None  # inf is not JSON: written as null


def test_piped_report_width_follows_columns(tmp_path):
    # Piped output is 132 columns wide unless the user sets COLUMNS, which rich honours as on a terminal.
    import os
    import subprocess
    import sys

    code = "from ascendbench.commands.common import out_console; print(out_console.width)"
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    widths = []
    for extra in ({}, {"COLUMNS": "200"}):
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                              env={**env, **extra}, check=True)
        widths.append(int(proc.stdout))
    assert widths == [132, 200]


# ----- issue 16 item 1: the ScanUL1 variants' fp16 C1 (each row's sum of s inputs) must fit fp16 -------------
def _overflowing_input(path: Path) -> np.ndarray:
    x = np.random.default_rng(0).uniform(0, 1024, 100_000).astype(np.float16)  # rows of 128 sum to about 65,500
    np.save(path, x)
    return x


def test_the_default_scan_takes_mcscan_where_fp16_row_sums_overflow(tmp_path, cli):
    x = _overflowing_input(tmp_path / "x.npy")
    out = cli(["run", "scan", "--input", "x.npy", "--json", "--no-save"], tmp_path)
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    assert doc["kernel"] == "mcscan" and doc["verification"]["passed"] is True
    first = next(r for r in range(len(x) // 128) if x[r * 128:(r + 1) * 128].astype(np.float32).sum() >= 65520)
    assert f"row {first:,} (elements {first * 128:,} to {first * 128 + 127:,})" in doc["model"]["algorithm_choice"]
    assert "ran mcscan instead" in doc["model"]["algorithm_choice"]


def test_a_forced_scanul1_variant_on_overflowing_rows_is_refused(tmp_path, cli):
    _overflowing_input(tmp_path / "x.npy")
    for algorithm in ("mcscan-ul1", "scanul1"):
        out = cli(["run", "scan", "--input", "x.npy", "--algorithm", algorithm, "--no-save"], tmp_path)
        assert out.exit_code == 2, out.output
        line = out.output.strip()
        assert line.startswith(f"error: --algorithm: {algorithm} rounds each row's sum of s = 128 inputs to fp16")
        assert "past fp16's 65504" in line and "use --algorithm mcscan" in line and "\n" not in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.npy"]


def test_the_default_keeps_mcscan_ul1_where_rows_fit(tmp_path, cli):
    out = cli(["run", "scan", "--n", "1e5", "--json", "--no-save"], tmp_path)
    doc = json.loads(out.stdout)
    assert doc["kernel"] == "mcscan-ul1" and doc["model"]["algorithm_choice"].startswith("mcscan-ul1: the scan paper")
    out = cli(["run", "scan", "--n", "1e5", "--generator", "counting", "--json", "--no-save"], tmp_path)
    doc = json.loads(out.stdout)  # counting fp16 runs 0..2047: rows of 128 reach 253,888
    assert doc["kernel"] == "mcscan" and doc["verification"]["passed"] is True


def test_ul1_overflow_finds_the_first_row_and_ignores_rows_with_non_finite_inputs():
    from ascendbench.kernels.scan import first_overflowing_row, ul1_overflow

    x = np.zeros(16 * 10, np.float16)
    x[3 * 16: 4 * 16] = np.float16(np.inf)  # row 3: inf input, not an fp16 C1 overflow
    x[5 * 16: 6 * 16] = np.float16(4096)  # row 5 sums to 65536
    x[7 * 16: 8 * 16] = [4094] * 14 + [4100, 4104]  # row 7 sums to 65520: rounds to inf too
    assert ul1_overflow(lambda lo, hi: x[lo:hi], x.size, 16) == (5, 65536.0)
    assert ul1_overflow(lambda lo, hi: x[lo:hi], x.size, 16, block=16) == (5, 65536.0)
    assert first_overflowing_row(x[7 * 16:].reshape(-1, 16)) == (0, 65520.0)
    x[5 * 16: 8 * 16] = np.float16(4094)  # 65504 fits
    assert ul1_overflow(lambda lo, hi: x[lo:hi], x.size, 16) is None


def test_batched_auto_leaves_out_scanul1_where_rows_overflow(tmp_path, cli):
    np.save(tmp_path / "rows.npy", np.random.default_rng(0).uniform(0, 1024, (4, 20000)).astype(np.float16))
    out = cli(["run", "batched-scan", "--input", "rows.npy", "--json", "--no-save"], tmp_path)
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    assert doc["params"]["algorithm_run"] == "scanu" and doc["verification"]["passed"] is True
    assert doc["model"]["algorithm_choice"].endswith("auto compared scanu only")
    out = cli(["run", "batched-scan", "--input", "rows.npy", "--algorithm", "scanul1", "--no-save"], tmp_path)
    assert out.exit_code == 2 and "past fp16's 65504" in out.output and "use --algorithm scanu" in out.output


# ----- issue 16 item 2: no NumPy RuntimeWarning reaches a user; results that would be inf are refused first -------
WARNING_CASES = [
    ["run", "scan", "--input", "inf.npy"],
    ["run", "scan", "--input", "nan.npy", "--algorithm", "scanul1"],
    ["run", "scan", "--input", "inf.npy", "--algorithm", "mcscan", "--out-dtype", "fp16"],
    ["run", "scan", "--input", "inf.npy", "--algorithm", "vec-cumsum"],
    ["run", "scan", "--n", "1e5", "--generator", "counting", "--out-dtype", "fp16"],
    ["run", "batched-scan", "--input", "inf2d.npy"],
    ["run", "segmented-scan", "--input", "inf.npy"],
    ["run", "sort", "--input", "inf.npy"],
    ["run", "topk", "--input", "inf.npy", "--k", "5"],
    ["run", "split", "--input", "inf.npy"],
    ["run", "compress", "--input", "inf.npy"],
    ["run", "hgemm", "--m", "16", "--n", "16", "--k", "16", "--alpha", "70000"],
]


@pytest.mark.parametrize("args", WARNING_CASES, ids=lambda a: " ".join(a[1:4]))
def test_no_numpy_runtime_warning_reaches_the_user(tmp_path, cli, args):
    import warnings

    x = np.ones(5000, np.float16)
    x[7] = np.inf
    np.save(tmp_path / "inf.npy", x)
    np.save(tmp_path / "inf2d.npy", x.reshape(2, 2500))
    x[7] = np.nan
    np.save(tmp_path / "nan.npy", x)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = cli([*args, "--no-save"], tmp_path)
    assert out.exit_code in (0, 1, 2) and "Traceback" not in out.output
    assert [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)] == []


def test_an_fp16_output_past_65504_is_refused_before_running(tmp_path, cli):
    out = cli(["run", "scan", "--n", "1e6", "--out-dtype", "fp16", "--no-save"], tmp_path)  # uniform [0, 1)
    assert out.exit_code == 2
    x = np.random.default_rng(0).random(1_000_000, dtype=np.float32).astype(np.float16)
    first = int(np.argmax(np.cumsum(x, dtype=np.float64) >= 65520))
    assert out.output.strip().startswith("error: --out-dtype: the scan reaches ")
    assert f" at element {first:,}, past fp16's 65504" in out.output and out.output.strip().endswith(
        "use --out-dtype fp32")
    out = cli(["run", "scan", "--n", "1e5", "--out-dtype", "fp16", "--json", "--no-save"], tmp_path)  # fits
    assert out.exit_code == 0 and json.loads(out.stdout)["verification"]["passed"] is True
    # memcpy copies each fp16 value as it is: nothing to refuse, however large the running sum would be
    out = cli(["run", "scan", "--n", "3e5", "--algorithm", "memcpy", "--out-dtype", "fp16", "--generator", "constant",
               "--json", "--no-save"], tmp_path)
    assert out.exit_code == 0 and json.loads(out.stdout)["verification"]["passed"] is True


def test_segmented_scan_refuses_non_finite_values_before_running(tmp_path, cli):
    x = np.ones(3000, np.float16)
    x[2500] = np.nan
    np.save(tmp_path / "x.npy", x)
    out = cli(["run", "segmented-scan", "--input", "x.npy", "--no-save"], tmp_path)
    assert out.exit_code == 2 and out.output.strip() == (
        "error: --input: values[2,500] is nan: the segmented scan subtracts global prefix sums (scan paper B.2), "
        "so a non-finite value would spoil every later segment; give finite values")


def test_the_host_window_is_reported_beside_the_kernel_time_never_in_it(tmp_path, cli):
    from ascendbench.hardware import load_profile

    hw = load_profile("ascend-910b4")
    out = cli(["run", "scan", "--n", "1e5", "--algorithm", "mcscan", "--chunk", "off", "--json", "--no-save"], tmp_path)
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    m, window = doc["metrics"], doc["model"]["host_window"]
    assert window["wrapper"] == "run_scan_multi_core_no_l2" and window["kernel_s"] == m["time_s"]
    no_split_steps = 2 * hw.host_tensor_alloc_us + hw.host_acl_malloc_us + hw.host_memcpy_h2d_us + hw.host_launch_us
    assert m["host_window_s"] == pytest.approx((no_split_steps + hw.host_sync_return_us) * 1e-6, rel=1e-12)
    assert m["call_time_s"] == pytest.approx(m["time_s"] + m["host_window_s"], rel=1e-12)
    assert m["bandwidth_gbps"] == pytest.approx(100000 * 6 / m["time_s"] / 1e9, rel=1e-9)  # from the kernel alone
