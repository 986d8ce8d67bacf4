"""`ascendbench run hgemm` through typer's CliRunner."""

import json

import numpy as np
import pytest

from ascendbench.store.schema import HgemmRunResult


def test_single_shape_report_and_result(tmp_path, cli):
    out = cli(["run", "hgemm", "--m", "2048", "--n", "128", "--k", "2048", "--out", "r.json"], tmp_path)
    assert out.exit_code == 0, out.output
    for text in ("TFLOPS", "% of the 280 TFLOPS", "128 x 128 x 256", "from: selector", "aicore_num", "padding",
                 "gemm", "epilogue", "passed", "CUBE"):
        assert text in out.output, text
    doc = HgemmRunResult.model_validate_json((tmp_path / "r.json").read_text())
    s = doc.shapes[0]
    assert (s.m, s.n, s.k) == (2048, 128, 2048) and s.tiling["k0"] == 256 and s.verification.passed
    assert doc.counters["aicore_num"] == 16 and doc.counters["acc_loop"] == 8  # claim G-1's tiling


def test_json_and_options(tmp_path, cli):
    out = cli(["run", "hgemm", "--m", "300", "--n", "301", "--k", "77", "--alpha", "0.5", "--beta", "-1",
                  "--m0", "64", "--n0", "64", "--k0", "32", "--split-k", "2", "--no-shuffle-k", "--no-padding",
                  "--no-double-buffer", "--json", "--no-save"], tmp_path)
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    assert doc["params"]["split_k"] == 2 and doc["params"]["shuffle_k"] is False
    assert doc["shapes"][0]["tiling"]["source"] == "user" and doc["shapes"][0]["verification"]["passed"]


def test_every_core_is_recorded_and_gives_the_every_core_simulation(tmp_path, cli):
    from ascendbench.hardware import load_profile
    from ascendbench.kernels.hgemm import GemmShape, HgemmParams, simulate_hgemm

    shape = ["--m", "5120", "--n", "5120", "--k", "640", "--alpha", "0.5", "--beta", "0.5", "--no-verify"]
    runs = {}
    for flag in ([], ["--every-core"]):
        out = cli(["run", "hgemm", *shape, *flag, "--json", "--no-save"], tmp_path)
        assert out.exit_code == 0, out.output
        runs[bool(flag)] = json.loads(out.stdout)
    assert runs[True]["params"]["every_core"] is True and runs[False]["params"]["every_core"] is False
    assert "every core simulated" in runs[True]["model"]["note"]
    params = HgemmParams(alpha=0.5, beta=0.5)
    every = simulate_hgemm(GemmShape(5120, 5120, 640), params, load_profile("atlas-300t-a2"), every_core=True)[0]
    assert runs[True]["shapes"][0]["time_s"] == pytest.approx(every.time_s, rel=1e-12)


def test_report_names_the_slow_nd2nz_loads_of_unaligned_rows(tmp_path, cli):
    from ascendbench.commands.common import format_bytes
    from ascendbench.hardware import load_profile

    hw = load_profile("atlas-300t-a2")
    out = cli(["run", "hgemm", "--m", "1024", "--n", "4095", "--k", "1024", "--no-padding", "--no-verify",
               "--out", "r.json"], tmp_path)
    assert out.exit_code == 0, out.output
    counters = json.loads((tmp_path / "r.json").read_text())["counters"]
    # B's rows (8190 bytes) are not 256-byte aligned: every B panel load goes through the slow ND2NZ path
    assert counters["bytes_nd2nz_unaligned"] > 0
    text = " ".join(out.output.split())
    assert (f"slow GM transfers {format_bytes(counters['bytes_nd2nz_unaligned'])} of A/B panels loaded GM -> L1 "
            f"with ND2NZ at {hw.nd2nz_unaligned_efficiency * 100:.1f} % of the rate (rows not 256-byte aligned)") in text
    # the 70% rate is left to C's rows (8190 bytes), written only (beta = 0)
    assert f"{format_bytes(counters['bytes_unaligned'])} of C (writes) at 70 % (rows not 512-byte aligned)" in text
    aligned = cli(["run", "hgemm", "--m", "1024", "--n", "4096", "--k", "1024", "--no-verify", "--no-save"], tmp_path)
    assert aligned.exit_code == 0 and "slow GM transfers" not in aligned.output


def test_files_in_and_out(tmp_path, cli):
    rng = np.random.default_rng(0)
    a = (rng.random((40, 30)) - 0.5).astype(np.float16)
    b = (rng.random((30, 20)) - 0.5).astype(np.float16)
    c = (rng.random((40, 20)) - 0.5).astype(np.float16)
    for name, arr in (("a", a), ("b", b), ("c", c)):
        np.save(tmp_path / f"{name}.npy", arr)
    out = cli(["run", "hgemm", "--a", "a.npy", "--b", "b.npy", "--c", "c.npy", "--beta", "1", "--output-file",
                  "out.npy", "--no-save"], tmp_path)
    assert out.exit_code == 0, out.output
    got = np.load(tmp_path / "out.npy")
    ref = a.astype(np.float64) @ b.astype(np.float64) + c
    assert got.shape == (40, 20) and got.dtype == np.float16 and np.abs(got - ref).max() < 0.01


def test_workload_rows_and_summary(tmp_path, cli):
    out = cli(["run", "hgemm", "--workload", "opt-ffn", "--out", "w.json"], tmp_path)
    assert out.exit_code == 0, out.output
    assert "TFLOPS: avg" in out.output and "28672" in out.output
    # every OPT FFN shape is above the workload's verification limit: nothing verified, and said so
    assert "verified 0 of 7 shapes against NumPy; in a workload" in " ".join(out.output.split())
    doc = json.loads((tmp_path / "w.json").read_text())
    assert doc["workload"] == "opt-ffn" and len(doc["shapes"]) == 7
    assert doc["summary"]["tflops_max"] >= doc["summary"]["tflops_avg"]


def test_gemm_example_variant(tmp_path, cli):
    out = cli(["run", "hgemm", "--m", "512", "--n", "512", "--k", "512", "--variant", "gemm-example", "--json",
                  "--no-save"], tmp_path)
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["shapes"][0]["tiling"]["source"] == "gemm-example"


ERRORS = [
    (["--m", "-1", "--n", "4", "--k", "4"], "--m: expected a non-negative integer"),
    (["--m", str(2**41), "--n", "4", "--k", "4"], "--m: must be an integer from 0 to 2**40"),
    (["--m", str(10**20), "--n", "4", "--k", "4"], ("--m: too large, got '100000000000000000000' (no count option "
                                                    "takes more than 2**60)")),
    (["--m", "4", "--n", "4", "--k", "4", "--batch", str(2**40 + 1)], "--batch: must be from 1 to 2**40"),
    (["--m", "4", "--n", "4"], "--k: is required"),
    (["--m", "4", "--n", "4", "--k", "4", "--alpha", "nan"], "--alpha: must be a finite number"),
    (["--m", "4", "--n", "4", "--k", "4", "--alpha", "70000"], "--alpha: must be representable in fp16"),
    (["--m", "4", "--n", "4", "--k", "4", "--beta", "-1e5"], "--beta: must be representable in fp16"),
    (["--m", "4", "--n", "4", "--k", "4", "--m0", "24"], "--m0: must be a positive multiple of 16"),
    (["--m", "64", "--n", "64", "--k", "64", "--m0", "256", "--n0", "16", "--k0", "256"], "--m0: L0A:"),
    (["--m", "64", "--n", "64", "--k", "64", "--m0", "4096"], ("--m0: L0A: 4096x128x128 tiling: A block M0 x K0 fp16 "
                                                               "(1 slot(s)) needs 1048576 bytes in total")),
    (["--m", "64", "--n", "64", "--k", "64", "--m0", "16", "--n0", "16", "--k0", "4096"], "--k0: L0A:"),
    (["--m", "4", "--n", "4", "--k", "4", "--variant", "cublas"], "--variant: must be one of"),
    (["--workload", "nope"], "--workload: unknown workload 'nope'"),
    (["--workload", "fig6", "--m", "4"], "--workload: cannot be combined"),
    (["--m", "4", "--n", "4", "--k", "4", "--split-k", "0"], "--split-k: must be at least 1"),
    (["--m", "256", "--n", "256", "--k", "256", "--split-k", "1000"],
     "--split-k: must be at most 1 for K = 256 with K0 = 256 (its ceil(K / K0) K blocks: more splits would be "
     "empty; a smaller --k0 allows more), got 1,000"),
    (["--m", "4", "--n", "4", "--k", "4", "--batch", "0"], "--batch: must be from 1 to 2**40"),
    (["--m", "4", "--n", "4", "--k", "4", "--output-file", "o.txt"], "--output-file: must end in .npy"),
]


@pytest.mark.parametrize("args, message", ERRORS)
def test_user_errors(tmp_path, args, message, cli):
    out = cli(["run", "hgemm", *args], tmp_path)
    assert out.exit_code == 2, out.output
    lines = [line for line in out.output.strip().splitlines() if line.strip()]
    assert len(lines) == 1 and message in lines[0], out.output
    assert not (tmp_path / "results").exists()


def test_disagreeing_files(tmp_path, cli):
    np.save(tmp_path / "a.npy", np.zeros((4, 5), np.float16))
    np.save(tmp_path / "b.npy", np.zeros((6, 3), np.float16))
    out = cli(["run", "hgemm", "--a", "a.npy", "--b", "b.npy"], tmp_path)
    assert out.exit_code == 2 and "--b: shape (1, 6, 3) disagrees" in out.output
    np.save(tmp_path / "f.npy", np.zeros((4, 5), np.float32))
    out = cli(["run", "hgemm", "--a", "f.npy", "--b", "b.npy"], tmp_path)
    assert out.exit_code == 2 and "--a: array dtype must be float16" in out.output
    np.save(tmp_path / "a2.npy", np.zeros((2, 4, 6), np.float16))  # a batch of 2 A beside one B
    out = cli(["run", "hgemm", "--a", "a2.npy", "--b", "b.npy"], tmp_path)
    assert out.exit_code == 2 and "--a/--b/--c: batch sizes differ: [1, 2]; every matrix takes the same " in out.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.npy", "a2.npy", "b.npy", "f.npy"]


def test_workload_on_worker_processes_gives_the_same_result():
    import ascendbench

    one = ascendbench.run("hgemm", workload="fig6", jobs=1, verify=False).result
    two = ascendbench.run("hgemm", workload="fig6", jobs=2, verify=False).result
    assert [s.time_s for s in one.shapes] == [s.time_s for s in two.shapes]
    assert one.counters == two.counters and two.model["worker_processes"] == 2


def test_fp16_overflow_of_c_is_refused_before_anything_is_written(tmp_path, cli):
    from ascendbench.kernels.hgemm import GemmShape
    from ascendbench.kernels.hgemm_run import _gemm_inputs

    args = ["--output-file", "c.npy", "--out", "r.json", "--trace", "t.json"]
    out = cli(["run", "hgemm", "--m", "256", "--n", "256", "--k", "1024", "--alpha", "65504", *args], tmp_path)
    assert out.exit_code == 2, out.output
    a, b, _ = _gemm_inputs(GemmShape(256, 256, 1024), 0, 0.0, 65504.0)
    first = 65504.0 * float(a[0, 0].astype(np.float64) @ b[0, :, 0].astype(np.float64))  # C[0, 0] overflows
    assert out.output.strip() == (f"error: --alpha: alpha * A @ B + beta * C is {first:,.6g} at C[0, 0]; a step of "
                                  "the kernel's fp16 arithmetic (alpha * A @ B, beta * C, their sum) passes 65504 "
                                  "there: C would hold inf; give a smaller |alpha|")
    np.save(tmp_path / "a.npy", np.full((2, 64, 1024), 300, np.float16))
    np.save(tmp_path / "b.npy", np.full((2, 1024, 64), 300, np.float16))
    out = cli(["run", "hgemm", "--a", "a.npy", "--b", "b.npy", *args], tmp_path)
    assert out.exit_code == 2, out.output
    assert out.output.strip() == ("error: --a/--b: A @ B reaches 9.216e+07 at C[0, 0], past fp16's 65504 (the cube "
                                  "writes A @ B to fp16 before alpha scales it): C would hold inf; scale the "
                                  "inputs down")  # 300 * 300 * 1024
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.npy", "b.npy"]


def test_fp16_overflow_names_the_element_and_beta():
    from ascendbench.kernels.hgemm import HgemmParams, fp16_overflow

    a = np.zeros((2, 3, 4), np.float16)
    b = np.zeros((2, 4, 5), np.float16)
    c = np.zeros((2, 3, 5), np.float16)
    c[1, 2, 3] = 40000
    params = HgemmParams(alpha=1.0, beta=2.0)
    out = np.zeros_like(c)
    assert fp16_overflow(a, b, c, out, params) is None
    out[1, 2, 3] = np.inf
    assert fp16_overflow(a, b, c, out, params) == ("scaled", (1, 2, 3), 80000.0)
    c[0, 0, 0] = np.nan  # a NaN input is verify_hgemm's to report, not an overflow
    assert fp16_overflow(a, b, c, out, params) is None


def test_fp16_overflow_in_a_workload_names_its_shape():
    from ascendbench.kernels.hgemm import GemmShape, HgemmParams
    from ascendbench.kernels.hgemm_run import _overflow_error

    exc = _overflow_error(("scaled", (1, 2, 3), 1e5), False, HgemmParams(alpha=2.0, beta=1.0), GemmShape(8, 9, 10, 2))
    assert str(exc) == ("--alpha: alpha * A @ B + beta * C is 100,000 at C[2, 3] of batch 1 of the workload's shape "
                        "M x N x K = 8 x 9 x 10; a step of the kernel's fp16 arithmetic (alpha * A @ B, beta * C, "
                        "their sum) passes 65504 there: C would hold inf; give a smaller |alpha| or |beta|")
