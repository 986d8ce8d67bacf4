"""`ascendbench run sample` through typer's CliRunner: success paths and every user-error path."""

import json
from pathlib import Path

import numpy as np
import pytest

from ascendbench.kernels.sampling import weighted_sample
from ascendbench.store.operators import OperatorRunResult


def result_files(cwd: Path) -> list[Path]:
    return sorted((cwd / "results").rglob("*.json")) if (cwd / "results").exists() else []


def test_generated_weights_report_and_result(tmp_path, cli):
    out = cli(["run", "sample", "--n", "1e5", "--samples", "4"], tmp_path)
    assert out.exit_code == 0, out.output
    for text in ("simulated time", "other variant", "baseline:", "scan", "split", "passed"):
        assert text in out.output
    files = result_files(tmp_path)
    assert len(files) == 1 and files[0].parent == tmp_path / "results" / "runs" / "sample"
    doc = OperatorRunResult.model_validate_json(files[0].read_text())
    assert doc.problem.n == 100000 and doc.problem.params["samples"] == 4
    assert doc.simulated.counters["scans"] == 1 + 4 and len(doc.outputs["indices"]) == 4
    assert doc.verification.passed and doc.simulated.baseline["variant"] == "baseline"


def test_input_file_outputs_and_zero_weights(tmp_path, cli):
    w = np.zeros(1000, np.float16)
    w[[3, 500, 999]] = [1, 2, 3]
    np.save(tmp_path / "w.npy", w)
    out = cli(["run", "sample", "--input", "w.npy", "--samples", "1e4", "--seed", "5", "--output-file", "i.npy",
               "--no-save"], tmp_path)
    assert out.exit_code == 0, out.output
    got = np.load(tmp_path / "i.npy")
    np.testing.assert_array_equal(got, weighted_sample(w, 10_000, seed=5))
    assert set(np.unique(got)) == {3, 500, 999}
    np.savez(tmp_path / "w.npz", weights=w)
    out = cli(["run", "sample", "--input", "w.npz", "--output-file", "i.npz", "--no-save"], tmp_path)
    assert out.exit_code == 0 and np.load(tmp_path / "i.npz")["indices"].shape == (1,)


def test_beyond_2_to_the_24_the_scan_runs_and_the_baseline_refuses(tmp_path, cli):
    out = cli(["run", "sample", "--n", "2**24", "--model-only", "--json", "--no-save"], tmp_path)
    assert out.exit_code == 0 and json.loads(out.stdout)["simulated"]["baseline"] is not None
    out = cli(["run", "sample", "--n", "16777217", "--samples", "3", "--json", "--no-save"], tmp_path)
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    assert doc["simulated"]["baseline"] is None and doc["verification"]["passed"]
    assert doc["simulated"]["counters"]["scans"] == 4
    out = cli(["run", "sample", "--n", "16777217", "--variant", "baseline", "--model-only"], tmp_path)
    assert out.exit_code == 2 and "supports at most 2**24" in out.output


ERRORS = [
    (["--n", "-3"], "--n: expected a non-negative integer"),
    (["--n", "100", "--samples", "lots"], "--samples: expected a non-negative integer"),
    (["--n", "100", "--variant", "alias"], "--variant: must be one of scan, baseline"),
    (["--n", "100", "--s", "48"], "--s: must be one of 16, 32, 64, 128"),
    (["--n", "100", "--seed", "-1"], "--seed: expected a non-negative integer"),
    (["--n", "100", "--output-file", "i.txt"], "--output-file: must end in .npy or .npz"),
    (["--n", "100", "--model-only", "--output-file", "i.npy"], "--output-file: there is no output"),
    (["--n", "100", "--hardware", "tpu-v9"], "--hardware: unknown profile 'tpu-v9'"),
    (["--samples", "3"], "--n: is required without --input"),
    (["--n", "0"], "--n: at least one category is needed"),
    (["--n", "1e5", "--samples", "2**60"], "--samples: the functional run needs"),
    (["--input", "missing.npy"], "--input: file not found"),
    (["--input", "neg.npy"], "--input: weights: element 1 is negative (-1.0)"),
    (["--input", "nan.npy"], "--input: weights: element 2 is NaN"),
    (["--input", "inf.npy"], "--input: weights: element 0 is infinite"),
    (["--input", "zero.npy"], "--input: weights: the total weight is zero"),
    (["--input", "empty.npy"], "--input: weights of shape (0,) hold no categories; at least one is needed"),
    (["--input", "f32.npy"], "--input: weights must be float16"),
    (["--input", "two.npy"], "--input: array 'weights' must be 1-D"),
    (["--input", "other.npz"], "--input: unexpected array 'probs'"),
    (["--input", "ok.npy", "--n", "7"], "--n: 7 disagrees with the input's length 4"),
    (["--input", "ok.npy", "--output-file", "ok.npy"], "is also the --input file"),
]


@pytest.mark.parametrize("args, message", ERRORS)
def test_user_errors_are_one_line_exit_2_and_write_nothing(tmp_path, cli, args, message):
    ok = np.ones(4, np.float16)
    np.save(tmp_path / "ok.npy", ok)
    np.save(tmp_path / "neg.npy", np.array([1, -1, 2], np.float16))
    np.save(tmp_path / "nan.npy", np.array([1, 1, np.nan], np.float16))
    np.save(tmp_path / "inf.npy", np.array([np.inf, 1], np.float16))
    np.save(tmp_path / "zero.npy", np.zeros(5, np.float16))
    np.save(tmp_path / "empty.npy", np.zeros(0, np.float16))
    np.save(tmp_path / "f32.npy", ok.astype(np.float32))
    np.save(tmp_path / "two.npy", np.ones((2, 2), np.float16))
    np.savez(tmp_path / "other.npz", probs=ok)
    before = sorted(p.name for p in tmp_path.iterdir())
    out = cli(["run", "sample", *args], tmp_path)
    assert out.exit_code == 2, out.output
    lines = [line for line in out.output.strip().splitlines() if line.strip()]
    assert len(lines) == 1 and message in lines[0], out.output
    assert "Traceback" not in out.output
    assert sorted(p.name for p in tmp_path.iterdir()) == before
