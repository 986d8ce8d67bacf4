"""`ascendbench run topp` through typer's CliRunner: success paths and every user-error path."""

import json
from pathlib import Path

import numpy as np
import pytest

from ascendbench.kernels.topp import top_p_sample
from ascendbench.store.operators import OperatorRunResult


def result_files(cwd: Path) -> list[Path]:
    return sorted((cwd / "results").rglob("*.json")) if (cwd / "results").exists() else []


def test_generated_rows_report_and_result(tmp_path, cli):
    out = cli(["run", "topp", "--vocab", "32000", "--batch", "3", "--p", "0.5"], tmp_path)
    assert out.exit_code == 0, out.output
    for text in ("simulated time", "other variant", "baseline:", "sort", "cumsum", "multinomial", "scans_per_row", "passed"):
        assert text in out.output
    files = result_files(tmp_path)
    assert len(files) == 1 and files[0].parent == tmp_path / "results" / "runs" / "topp"
    doc = OperatorRunResult.model_validate_json(files[0].read_text())
    assert doc.problem.operator == "topp" and doc.problem.n == 32000 and doc.problem.params["batch"] == 3
    assert doc.outputs["scans_per_row"] == 17 and doc.simulated.counters["scans"] == 3 * 17
    assert len(doc.outputs["tokens"]) == 3 and doc.verification.passed
    assert doc.simulated.baseline["speedup"] > 1


def test_input_file_and_outputs_match_the_python_api(tmp_path, cli):
    probs = np.random.default_rng(3).random((5, 300)).astype(np.float16)
    probs[:, 10:] = 0
    np.savez(tmp_path / "p.npz", probs=probs)
    out = cli(["run", "topp", "--input", "p.npz", "--p", "0.3", "--seed", "9", "--output-file", "t.npz", "--out",
               "r.json", "--variant", "baseline"], tmp_path)
    assert out.exit_code == 0, out.output
    saved = np.load(tmp_path / "t.npz")
    expected = top_p_sample(probs, 0.3, seed=9)
    np.testing.assert_array_equal(saved["tokens"], expected.tokens)
    np.testing.assert_array_equal(saved["kept"], expected.kept)
    assert (saved["tokens"] < 10).all()
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["problem"]["data"] == "file" and len(doc["problem"]["input_sha256"]) == 64
    np.save(tmp_path / "one.npy", probs[0])
    out = cli(["run", "topp", "--input", "one.npy", "--output-file", "t.npy", "--no-save"], tmp_path)
    assert out.exit_code == 0, out.output
    assert np.load(tmp_path / "t.npy").shape == ()


def test_json_model_only_and_trace(tmp_path, cli):
    out = cli(["run", "topp", "--n", "2**24", "--batch", "64", "--model-only", "--json", "--no-save", "--trace",
               "t.json"], tmp_path)
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    assert doc["problem"]["data"] == "none" and doc["verification"]["performed"] is False
    assert doc["simulated"]["counters"]["scans"] == 64 * 17
    assert json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    assert result_files(tmp_path) == []


ERRORS = [
    (["--vocab", "-3"], "--vocab: expected a non-negative integer"),
    (["--vocab", "100", "--p", "1.5"], "--p: must be in [0, 1], got 1.5"),
    (["--vocab", "100", "--p", "nan"], "--p: must be in [0, 1]"),
    (["--vocab", "100", "--batch", "-1"], "--batch: expected a non-negative integer"),
    (["--vocab", "100", "--variant", "bitonic"], "--variant: must be one of radix, baseline"),
    (["--vocab", "100", "--s", "48"], "--s: must be one of 16, 32, 64, 128"),
    (["--vocab", "100", "--seed", "-1"], "--seed: expected a non-negative integer"),
    (["--vocab", "100", "--output-file", "t.txt"], "--output-file: must end in .npy or .npz"),
    (["--vocab", "100", "--model-only", "--output-file", "t.npy"], "--output-file: there is no output"),
    (["--vocab", "100", "--hardware", "tpu-v9"], "--hardware: unknown profile 'tpu-v9'"),
    (["--p", "0.5"], "--vocab: is required without --input"),
    (["--vocab", "0"], "--vocab: a probability row needs at least one token"),
    (["--vocab", "2**40", "--batch", "1000"], "--vocab: a functional run of 1,000 x 1,099,511,627,776 probabilities"),
    (["--input", "missing.npy"], "--input: file not found"),
    (["--input", "neg.npy"], "--input: probs: row 1: token 2 is negative (-0.5)"),
    (["--input", "nan.npy"], "--input: probs: row 0: token 0 is NaN"),
    (["--input", "zero.npy"], "--input: probs: row 1 is all zero"),
    (["--input", "huge.npy"], "--input: probs: row 1 sums to 6e+38, past float32's largest 3.40282e+38 (the "
                              "running sum would be inf); scale the row down"),
    (["--input", "empty.npy"], "--input: probs of shape (0,) has no tokens; a probability row needs at least one"),
    (["--input", "i16.npy"], "--input: probs must be float16, float32 or float64, got int16"),
    (["--input", "three.npy"], "--input: probs must have shape (vocab,) or (batch, vocab)"),
    (["--input", "other.npz"], "--input: a .npz must hold one array named 'probs'"),
    (["--input", "junk.npy"], "--input: junk.npy is not a .npy or .npz file (bad magic"),
    (["--input", "ok.npy", "--vocab", "7"], "--vocab: 7 disagrees with the input's 4 tokens per row"),
    (["--input", "ok.npy", "--batch", "3"], "--batch: 3 disagrees with the input's 2 rows"),
    (["--input", "ok.npy", "--output-file", "ok.npy"], "is also the --input file"),
]


@pytest.mark.parametrize("args, message", ERRORS)
def test_user_errors_are_one_line_exit_2_and_write_nothing(tmp_path, cli, args, message):
    ok = np.full((2, 4), 0.25, np.float16)
    np.save(tmp_path / "ok.npy", ok)
    np.save(tmp_path / "neg.npy", np.array([[0.5, 0.5, 0], [0.5, 1, -0.5]], np.float16))
    np.save(tmp_path / "nan.npy", np.array([[np.nan, 0.5]], np.float16))
    np.save(tmp_path / "zero.npy", np.array([[0.5, 0.5], [0, 0]], np.float16))
    np.save(tmp_path / "i16.npy", ok.astype(np.int16))
    np.save(tmp_path / "huge.npy", np.array([[1, 1], [3e38, 3e38]], np.float32))
    np.save(tmp_path / "empty.npy", np.zeros(0, np.float32))
    np.save(tmp_path / "three.npy", np.ones((2, 2, 2), np.float16))
    np.savez(tmp_path / "other.npz", weights=ok)
    (tmp_path / "junk.npy").write_bytes(b"not numpy")
    before = sorted(p.name for p in tmp_path.iterdir())
    out = cli(["run", "topp", *args], tmp_path)
    assert out.exit_code == 2, out.output
    lines = [line for line in out.output.strip().splitlines() if line.strip()]
    assert len(lines) == 1 and message in lines[0], out.output
    assert "Traceback" not in out.output
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written


def test_p_1_keeps_every_token_even_where_an_fp16_row_sums_past_1():
    from ascendbench.kernels.topp import top_p_draw

    probs = np.array([0.5, 0.5, 2**-7, 2**-7], np.float16)  # sums to 1.015625 in fp16
    for variant in ("radix", "baseline"):
        res = top_p_draw(probs, 1.0, np.array([0.999]), variant=variant)
        assert int(res.kept) == 4 and int(res.tokens) == 3  # the last token stays in the nucleus
    assert int(top_p_draw(probs, 0.99, np.array([0.5])).kept) == 2  # below 1 the rule is Llama's: c - p <= 0.99


FP32_NOTE = ("fp32 probabilities, not the paper's fp16 kernel: fp32 sort keys (32 radix passes) and the cumsum by "
             "the vector-only CumSum in fp32 (the hardware model has no fp32 cube rate for MCScan)")


def test_float32_probabilities_are_scanned_in_fp32_and_said(tmp_path, cli):
    # issue 26 item 13: rounded to fp16, 0.3 became 0.30005 and the nucleus of p = 0.8 lost its third token
    np.save(tmp_path / "p.npy", np.array([0.3, 0.1, 0.1, 0.5], np.float32))
    out = cli(["run", "topp", "--input", "p.npy", "--p", "0.8", "--json", "--no-save"], tmp_path)
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    assert doc["outputs"]["nucleus size"] == 3 and doc["outputs"]["scans_per_row"] == 33
    assert doc["outputs"]["cumsum"] == "vector-only CumSum fp32" and doc["problem"]["dtypes"]["probs"] == "fp32"
    assert doc["notes"][-1] == FP32_NOTE and not any("rounded" in note for note in doc["notes"])
    assert doc["verification"]["passed"] is True and doc["problem"]["n"] == 4
    assert doc["simulated"]["bandwidth_bytes"] == 4 * 4 + 8  # fp32 probabilities read once, the token written
    # the paper's fp16 kernel when asked for, with the rounding said
    out = cli(["run", "topp", "--input", "p.npy", "--p", "0.8", "--dtype", "fp16", "--json", "--no-save"], tmp_path)
    doc = json.loads(out.stdout)
    assert doc["outputs"]["nucleus size"] == 2 and doc["outputs"]["cumsum"] == "MCScan fp16 -> fp32"
    assert doc["notes"][0] == "probs: float32 input rounded to float16 as --dtype fp16 asks (the paper's kernel)"
    assert doc["problem"]["dtypes"]["probs"] == "fp16" and doc["outputs"]["scans_per_row"] == 17
    # float64 rows: rounded to float32, said; fp32 without an input: generated in float32, timed in fp32
    np.save(tmp_path / "p64.npy", np.array([0.3, 0.1, 0.1, 0.5]))
    doc = json.loads(cli(["run", "topp", "--input", "p64.npy", "--p", "0.8", "--json", "--no-save"], tmp_path).stdout)
    assert doc["notes"][0] == "probs: float64 input rounded to float32" and doc["outputs"]["nucleus size"] == 3
    out = cli(["run", "topp", "--vocab", "1000", "--dtype", "fp32", "--model-only", "--json", "--no-save"], tmp_path)
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["simulated"]["counters"]["scans"] == 33


def test_a_dtype_outside_fp16_and_fp32_is_one_line(tmp_path, cli):
    out = cli(["run", "topp", "--vocab", "100", "--dtype", "bf16"], tmp_path)
    assert out.exit_code == 2 and out.output.strip().startswith("error: --dtype: ")
    assert "fp16" in out.output and "fp32" in out.output and result_files(tmp_path) == []


def test_the_float32_running_sum_is_guarded_where_the_row_check_cannot_see_it(monkeypatch):
    from ascendbench.kernels import topp
    from ascendbench.kernels.sampling import DistributionError

    monkeypatch.setattr(topp, "check_probs", lambda probs: None)  # as if rounding alone passed float32's largest
    with pytest.raises(DistributionError, match=r"^probs: row 1 sums to 6e\+38, past float32's largest"):
        topp.top_p_draw(np.array([[1, 1], [3e38, 3e38]], np.float32), 0.5, np.zeros(2))
