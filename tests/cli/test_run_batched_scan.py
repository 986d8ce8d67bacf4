"""`ascendbench run batched-scan` through typer's CliRunner: the happy paths and every user-error path."""

import json
from pathlib import Path

import numpy as np
import pytest

from ascendbench.store.rows import BATCHED_SCHEMA_PATH, BatchedScanResult


def result_files(cwd: Path) -> list[Path]:
    return sorted((cwd / "results").rglob("*.json")) if (cwd / "results").exists() else []


def test_writes_a_valid_result_and_prints_the_report(tmp_path, cli):
    out = cli(["run", "batched-scan", "--batch", "41", "--length", "2e4", "--s", "64"], tmp_path)
    assert out.exit_code == 0, out.output
    for text in (
        "simulated time",
        "auto compared",
        "bandwidth",
        "matmuls",
        "passed",
        "sum|x[row,:i]|",
        "CUBE",
    ):
        assert text in out.output
    files = result_files(tmp_path)
    assert len(files) == 1
    doc = BatchedScanResult.model_validate_json(files[0].read_text())
    assert files[0].parent.name == doc.kernel == f"batched-{doc.params['algorithm_run']}"
    assert doc.algorithm == "auto" and set(doc.candidates_time_s) == {"scanu", "scanul1"}
    assert doc.problem.batch == 41 and doc.problem.length == 20000 and doc.verification.passed
    assert doc.metrics["time_s"] == min(doc.candidates_time_s.values())


def test_json_output_is_the_document_only(tmp_path, cli):
    out = cli(
        [
            "run",
            "batched-scan",
            "--batch",
            "8",
            "--length",
            "2**14",
            "--algorithm",
            "scanu",
            "--exclusive",
            "--dtype",
            "int8",
            "--json",
            "--no-save",
        ],
        tmp_path,
    )
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    assert (
        doc["kernel"] == "batched-scanu"
        and doc["problem"]["exclusive"]
        and doc["problem"]["out_dtype"] == "int32"
    )
    assert doc["counters"]["matmuls"] == 8 and doc["verification"]["passed"]
    assert result_files(tmp_path) == []


def test_vector_baseline_and_model_only(tmp_path, cli):
    out = cli(
        [
            "run",
            "batched-scan",
            "--batch",
            "1000",
            "--length",
            "2**20",
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
    assert doc["kernel"] == "batched-vector" and doc["verification"]["performed"] is False
    assert doc["problem"]["data"] == "none" and "matmuls" not in doc["counters"]


def test_no_verify_skips_the_check(tmp_path, cli):
    out = cli(
        ["run", "batched-scan", "--batch", "3", "--length", "100", "--no-verify", "--json", "--no-save"],
        tmp_path,
    )
    assert out.exit_code == 0 and json.loads(out.stdout)["verification"]["performed"] is False


def test_empty_shapes_are_valid(tmp_path, cli):
    for args in (["--batch", "0", "--length", "10"], ["--batch", "3", "--length", "0"]):
        out = cli(["run", "batched-scan", *args, "--json", "--no-save"], tmp_path)
        assert out.exit_code == 0, out.output
        assert json.loads(out.stdout)["verification"]["passed"] is True


def test_input_output_and_trace_files(tmp_path, cli):
    x = np.random.default_rng(0).integers(-128, 128, (5, 3000)).astype(np.int8)
    np.save(tmp_path / "x.npy", x)
    out = cli(
        [
            "run",
            "batched-scan",
            "--input",
            "x.npy",
            "--output-file",
            "y.npy",
            "--trace",
            "t.json",
            "--out",
            "r.json",
            "--s",
            "32",
        ],
        tmp_path,
    )
    assert out.exit_code == 0, out.output
    np.testing.assert_array_equal(
        np.load(tmp_path / "y.npy"), np.cumsum(x, axis=1, dtype=np.int64).astype(np.int32)
    )
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["problem"]["data"] == "file" and len(doc["problem"]["input_sha256"]) == 64
    assert doc["kernel"] == "batched-scanu"  # int8: auto has only scanu
    trace = json.loads((tmp_path / "t.json").read_text())
    assert any(e["ph"] == "X" for e in trace["traceEvents"])


ERROR_CASES = [
    (["--batch", "-5", "--length", "10"], "--batch: expected a non-negative integer"),
    (["--batch", "4", "--length", "lots"], "--length: expected a non-negative integer"),
    (["--batch", "4"], "--length: is required without --input"),
    (["--length", "4"], "--batch: is required without --input"),
    (["--batch", "4", "--length", "10", "--s", "48"], "--s: must be one of 16, 32, 64, 128"),
    (["--batch", "4", "--length", "10", "--algorithm", "bogo"], "--algorithm: must be one of auto, scanu, scanul1, vector, got 'bogo'"),
    (["--batch", "4", "--length", "10", "--dtype", "bf16"], "--dtype: must be one of fp16, int8, got 'bf16'"),
    (
        ["--batch", "4", "--length", "10", "--dtype", "int8", "--algorithm", "scanul1"],
        "--dtype: scanul1 supports fp16",
    ),
    (["--batch", "4", "--length", "10", "--seed", "-1"], "--seed: expected a non-negative integer"),
    (["--batch", "4", "--length", "10", "--hardware", "tpu-v9"], "--hardware: unknown profile 'tpu-v9'"),
    (["--batch", "4", "--length", "10", "--output-file", "y.txt"], "--output-file: must end in .npy"),
    (
        ["--batch", "4", "--length", "10", "--model-only", "--output-file", "y.npy"],
        "--output-file: there is no output",
    ),
    (
        ["--batch", "4", "--length", "10", "--out", "r.json", "--no-save"],
        "--out: cannot be combined with --no-save",
    ),
    (["--batch", "4", "--length", "10", "--trace", "t.npy"], "--trace: must end in .json"),
    (["--input", "missing.npy"], "--input: file not found"),
    (["--batch", "2**30", "--length", "2**30"], "--length: the functional run of"),
]


@pytest.mark.parametrize("args, message", ERROR_CASES)
def test_user_errors_are_one_line_exit_2_and_write_nothing(tmp_path, args, message, cli):
    out = cli(["run", "batched-scan", *args], tmp_path)
    assert out.exit_code == 2, out.output
    lines = [line for line in out.output.strip().splitlines() if line.strip()]
    assert len(lines) == 1 and message in lines[0], out.output
    assert result_files(tmp_path) == [] and not (tmp_path / "y.npy").exists()


def test_input_file_errors(tmp_path, cli):
    cases = {
        "one_d.npy": (
            np.zeros(10, dtype=np.float16),
            "--input: array must be 2-D (batch, length), got shape (10,)",
        ),
        "f32.npy": (
            np.zeros((2, 3), dtype=np.float32),
            "--input: array dtype must be float16 or int8, got float32",
        ),
    }
    for name, (array, message) in cases.items():
        np.save(tmp_path / name, array)
        out = cli(["run", "batched-scan", "--input", name], tmp_path)
        assert out.exit_code == 2 and message in out.output, out.output
    (tmp_path / "junk.npy").write_bytes(b"not numpy")
    out = cli(["run", "batched-scan", "--input", "junk.npy"], tmp_path)
    assert out.exit_code == 2 and "--input: junk.npy is not a .npy file (bad magic" in out.output
    np.save(tmp_path / "ok.npy", np.ones((4, 100), dtype=np.float16))
    for args, message in (
        (["--batch", "3"], "--batch: 3 disagrees with the input's shape (4, 100)"),
        (["--length", "99"], "--length: 99 disagrees"),
        (["--dtype", "int8"], "--dtype: int8 disagrees with the input array's fp16"),
        (["--output-file", "ok.npy"], "is also the --input file"),
    ):
        out = cli(["run", "batched-scan", "--input", "ok.npy", *args], tmp_path)
        assert out.exit_code == 2 and message in out.output, (args, out.output)
    assert result_files(tmp_path) == []


def test_shipped_json_schema_is_generated_from_the_model():
    # Regenerate with: python -c "from ascendbench.store.rows import write_row_schemas; write_row_schemas()"
    assert json.loads(BATCHED_SCHEMA_PATH.read_text()) == json.loads(
        json.dumps(BatchedScanResult.model_json_schema())
    )


@pytest.mark.parametrize("width", [80, 132])
def test_title_fits_or_wraps_at_the_terminal_width(tmp_path, cli, columns, width):
    columns(width)
    out = cli(["run", "batched-scan", "--batch", "4", "--length", "1000", "--no-save"], tmp_path)
    assert out.exit_code == 0, out.output
    lines = out.stdout.splitlines()
    assert "…" not in out.stdout and all(len(line) <= width for line in lines)
    title = "batched-scan scanul1 (auto)  4 x 1,000  fp16->fp32  inclusive  s=128  on ascend-910b4"
    if width == 80:  # 86 characters: the parts wrap between them, above a plain rule
        assert lines[:3] == ["batched-scan scanul1 (auto)  4 x 1,000  fp16->fp32  inclusive  s=128",
                             "on ascend-910b4", "─" * 80]
    else:
        assert lines[0].strip("─") == f" {title} "


def test_the_memory_refusal_formats_its_counts(tmp_path, cli, monkeypatch):
    from ascendbench import pipeline

    monkeypatch.setattr(pipeline, "available_memory", lambda: 8 * 2**30)
    out = cli(["run", "batched-scan", "--batch", "2**40", "--length", "2**40", "--no-save"], tmp_path)
    assert out.exit_code == 2, out.output
    # 2**80 elements at 16 bytes each, plus 1 GiB: 2**54 + 1 GiB (printed as the float it rounds to)
    assert out.output.strip() == ("error: --length: the functional run of 1,208,925,819,614,629,174,706,176 elements "
                                  "needs about 18,014,398,509,481,984.0 GiB, more than the 8.0 GiB available; use "
                                  "--model-only for timings at this size")
