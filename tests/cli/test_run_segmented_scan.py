"""`ascendbench run segmented-scan` through typer's CliRunner: the happy paths and every user-error path."""

import json
from pathlib import Path

import numpy as np
import pytest

from ascendbench.kernels.segmented_scan import reference_segmented
from ascendbench.store.rows import SEGMENTED_SCHEMA_PATH, SegmentedScanResult


def result_files(cwd: Path) -> list[Path]:
    return sorted((cwd / "results").rglob("*.json")) if (cwd / "results").exists() else []


def test_writes_a_valid_result_and_prints_the_report(tmp_path, cli):
    out = cli(["run", "segmented-scan", "--n", "1e5", "--segment-length", "100"], tmp_path)
    assert out.exit_code == 0, out.output
    for text in (
        "simulated time",
        "flag scan",
        "value scan",
        "compact heads",
        "subtract",
        "passed",
        "sum|x[:i]|",
    ):
        assert text in out.output
    files = result_files(tmp_path)
    assert len(files) == 1 and files[0].parent.name == "segmented-scan"
    doc = SegmentedScanResult.model_validate_json(files[0].read_text())
    assert doc.problem.n == 100000 and doc.problem.flags == "random" and doc.verification.passed
    assert 800 < doc.problem.segments < 1200 and doc.algorithm == "mcscan"


def test_npz_input_and_output_file(tmp_path, cli):
    rng = np.random.default_rng(0)
    values = rng.integers(-128, 128, 30000).astype(np.int8)
    flags = (rng.random(30000) < 0.01).astype(np.bool_)
    np.savez(tmp_path / "in.npz", values=values, flags=flags)
    out = cli(
        [
            "run",
            "segmented-scan",
            "--input",
            "in.npz",
            "--exclusive",
            "--output-file",
            "r.npy",
            "--out",
            "res.json",
        ],
        tmp_path,
    )
    assert out.exit_code == 0, out.output
    r = np.load(tmp_path / "r.npy")
    np.testing.assert_array_equal(r, reference_segmented(values, flags, True, "int8"))
    doc = json.loads((tmp_path / "res.json").read_text())
    assert doc["problem"]["flags"] == "file" and doc["problem"]["segments"] == int(flags[1:].sum()) + 1
    assert doc["problem"]["dtype"] == "int8" and doc["problem"]["data"] == "file"


def test_npy_values_with_regular_heads(tmp_path, cli):
    np.save(tmp_path / "v.npy", np.ones(1000, np.float16))
    out = cli(
        [
            "run",
            "segmented-scan",
            "--input",
            "v.npy",
            "--heads",
            "regular",
            "--segment-length",
            "10",
            "--output-file",
            "r.npy",
            "--json",
            "--no-save",
        ],
        tmp_path,
    )
    assert out.exit_code == 0, out.output
    np.testing.assert_array_equal(
        np.load(tmp_path / "r.npy"), np.tile(np.arange(1, 11, dtype=np.float32), 100)
    )
    assert json.loads(out.stdout)["problem"]["segments"] == 100


def test_vector_baseline_model_only_at_large_n(tmp_path, cli):
    out = cli(
        [
            "run",
            "segmented-scan",
            "--n",
            "2**30",
            "--algorithm",
            "vector",
            "--model-only",
            "--json",
            "--no-save",
        ],
        tmp_path,
    )
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    assert doc["verification"]["performed"] is False and doc["problem"]["segments"] == 1 + round(
        (2**30 - 1) / 1024
    )
    assert doc["model"]["segments_expected"] is True


def test_trace_and_empty(tmp_path, cli):
    out = cli(["run", "segmented-scan", "--n", "5e4", "--trace", "t.json", "--no-save"], tmp_path)
    assert out.exit_code == 0 and any(
        e["ph"] == "X" for e in json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    )
    out = cli(["run", "segmented-scan", "--n", "0", "--json", "--no-save"], tmp_path)
    assert out.exit_code == 0 and json.loads(out.stdout)["verification"]["passed"] is True


ERROR_CASES = [
    ([], "--n: is required without --input"),
    (["--n", "lots"], "--n: expected a non-negative integer"),
    (["--n", "100", "--segment-length", "0"], "--segment-length: must be at least 1"),
    (["--n", "100", "--segment-length", "x"], "--segment-length: expected a non-negative integer"),
    (["--n", "100", "--heads", "some"], "--heads: must be one of random, regular, got 'some'"),
    (["--n", "100", "--algorithm", "bogo"], "--algorithm: must be one of mcscan, mcscan-ul1, vector"),
    (["--n", "100", "--s", "48"], "--s: must be one of 16, 32, 64, 128"),
    (["--n", "100", "--dtype", "bf16"], "--dtype: must be one of fp16, int8, got 'bf16'"),
    (
        ["--n", "100", "--dtype", "int8", "--algorithm", "mcscan-ul1"],
        "--dtype: mcscan-ul1 supports fp16 only",
    ),
    (["--n", "100", "--seed", "-2"], "--seed: expected a non-negative integer"),
    (["--n", "100", "--hardware", "tpu-v9"], "--hardware: unknown profile 'tpu-v9'"),
    (["--n", "100", "--output-file", "r.txt"], "--output-file: must end in .npy"),
    (["--n", "100", "--model-only", "--output-file", "r.npy"], "--output-file: there is no output"),
    (["--n", "100", "--out", "a.json", "--no-save"], "--out: cannot be combined with --no-save"),
    (["--input", "missing.npz"], "--input: file not found"),
    (["--input", "x.csv"], "--input: must be a .npz (values and flags) or a .npy"),
    (["--n", "2**40"], "--n: the functional run of"),
]


@pytest.mark.parametrize("args, message", ERROR_CASES)
def test_user_errors_are_one_line_exit_2_and_write_nothing(tmp_path, args, message, cli):
    out = cli(["run", "segmented-scan", *args], tmp_path)
    assert out.exit_code == 2, out.output
    lines = [line for line in out.output.strip().splitlines() if line.strip()]
    assert len(lines) == 1 and message in lines[0], out.output
    assert result_files(tmp_path) == [] and not (tmp_path / "r.npy").exists()


def test_input_file_errors(tmp_path, cli):
    v = np.ones(10, np.float16)
    np.savez(tmp_path / "extra.npz", values=v, flags=np.zeros(10, np.uint8), more=v)
    np.savez(tmp_path / "short.npz", values=v, flags=np.zeros(9, np.uint8))
    np.savez(tmp_path / "f32flags.npz", values=v, flags=np.zeros(10, np.float32))
    np.savez(tmp_path / "f32.npz", values=v.astype(np.float32), flags=np.zeros(10, np.uint8))
    np.save(tmp_path / "two_d.npy", np.ones((2, 5), np.float16))
    (tmp_path / "junk.npz").write_bytes(b"junk")
    cases = {
        "extra.npz": "--input: the .npz must hold exactly the arrays 'values' and 'flags', got flags, more, values",
        "short.npz": "--input: flags shape (9,) differs from values shape (10,)",
        "f32flags.npz": "--input: flags dtype must be bool, int8 or uint8, got float32",
        "f32.npz": "--input: values dtype must be float16 or int8, got float32",
        "two_d.npy": "--input: values must be 1-D, got shape (2, 5)",
        "junk.npz": "--input: junk.npz is not a .npy or .npz file (bad magic",
    }
    for name, message in cases.items():
        out = cli(["run", "segmented-scan", "--input", name], tmp_path)
        assert out.exit_code == 2 and message in out.output, (name, out.output)
    np.save(tmp_path / "ok.npy", v)
    for args, message in (
        (["--n", "9"], "--n: 9 disagrees with the input's length 10"),
        (["--dtype", "int8"], "--dtype: int8 disagrees with the input array's fp16"),
        (["--output-file", "ok.npy"], "is also the --input file"),
    ):
        out = cli(["run", "segmented-scan", "--input", "ok.npy", *args], tmp_path)
        assert out.exit_code == 2 and message in out.output, (args, out.output)
    assert result_files(tmp_path) == []


def test_shipped_json_schema_is_generated_from_the_model():
    # Regenerate with: python -c "from ascendbench.store.rows import write_row_schemas; write_row_schemas()"
    expected = json.loads(json.dumps(SegmentedScanResult.model_json_schema()))
    assert json.loads(SEGMENTED_SCHEMA_PATH.read_text()) == expected


@pytest.mark.parametrize("width", [80, 132])
def test_title_fits_or_wraps_at_the_terminal_width(tmp_path, cli, columns, width):
    columns(width)
    out = cli(["run", "segmented-scan", "--n", "1000", "--no-save"], tmp_path)
    assert out.exit_code == 0, out.output
    lines = out.stdout.splitlines()
    assert "…" not in out.stdout and all(len(line) <= width for line in lines)
    title = "segmented-scan mcscan  n=1,000  2 segments  fp16->fp32  inclusive  s=128  on ascend-910b4"
    if width == 80:
        assert lines[:3] == ["segmented-scan mcscan  n=1,000  2 segments  fp16->fp32  inclusive  s=128",
                             "on ascend-910b4", "─" * 80]
    else:
        assert lines[0].strip("─") == f" {title} "
