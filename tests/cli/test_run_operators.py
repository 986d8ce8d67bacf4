"""`run split`, `run compress`, `run sort`, `run topk` through typer's CliRunner: success paths, output files and
every user-error path (one line, exit status 2, nothing written)."""

import json
import zipfile

import numpy as np
import pytest

import ascendbench
from ascendbench.store.operators import OperatorRunResult


def files(cwd):
    return sorted(p for p in cwd.rglob("*") if p.is_file())


@pytest.mark.parametrize("args,op", [
    (["run", "split", "--n", "20000"], "split"),
    (["run", "compress", "--n", "2e4", "--variant", "scalar"], "compress"),
    (["run", "sort", "--n", "2**12", "--dtype", "int16", "--descending"], "sort"),
    (["run", "topk", "--n", "5000", "--k", "100", "--smallest"], "topk"),
])
def test_operator_runs_verify_and_save_a_result(tmp_path, cli, args, op):
    out = cli(args, tmp_path)
    assert out.exit_code == 0, out.output
    assert "simulated time" in out.output and "passed" in out.output and "other variant" in out.output
    saved = sorted((tmp_path / "results" / "runs" / op).glob("*.json"))
    assert len(saved) == 1
    doc = OperatorRunResult.model_validate_json(saved[0].read_text())
    assert doc.problem.operator == op and doc.verification.passed and doc.simulated.time_s > 0
    assert doc.simulated.baseline["time_s"] > 0


def test_split_reads_named_arrays_and_writes_npz(tmp_path, cli):
    values = np.array([1.5, -0.0, np.nan, 2.0], np.float16)
    flags = np.array([0, 7, 0, 1], np.int8)
    np.savez(tmp_path / "in.npz", values=values, flags=flags)
    out = cli(["run", "split", "--input", "in.npz", "--output-file", "o.npz", "--json", "--no-save"], tmp_path)
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    assert doc["outputs"]["n_true"] == 2 and doc["problem"]["data"] == "file" and doc["problem"]["input_sha256"]
    with np.load(tmp_path / "o.npz") as z:
        assert z["indices"].tolist() == [1, 3, 0, 2] and int(z["n_true"]) == 2
        assert z["values"].view(np.uint16).tolist() == values[[1, 3, 0, 2]].view(np.uint16).tolist()


def test_compress_output_is_one_npy(tmp_path, cli):
    np.savez(tmp_path / "in.npz", values=np.arange(5, dtype=np.int32), mask=np.array([1, 0, 1, 1, 0], bool))
    out = cli(["run", "compress", "--input", "in.npz", "--output-file", "sel.npy", "--no-save"], tmp_path)
    assert out.exit_code == 0, out.output
    assert np.load(tmp_path / "sel.npy").tolist() == [0, 2, 3]


def test_sort_and_topk_of_a_npy_input(tmp_path, cli):
    keys = np.array([3, -1, 3, 0, -1], np.int8)
    np.save(tmp_path / "k.npy", keys)
    out = cli(["run", "sort", "--input", "k.npy", "--output-file", "s.npz", "--no-save", "--trace", "t.json"],
              tmp_path)
    assert out.exit_code == 0, out.output
    with np.load(tmp_path / "s.npz") as z:
        assert z["indices"].tolist() == [1, 4, 3, 0, 2] and z["values"].tolist() == [-1, -1, 0, 3, 3]
    assert json.loads((tmp_path / "t.json").read_text())
    out = cli(["run", "topk", "--input", "k.npy", "--k", "3", "--output-file", "t.npz", "--no-save"], tmp_path)
    assert out.exit_code == 0, out.output
    with np.load(tmp_path / "t.npz") as z:
        assert z["indices"].tolist() == [0, 2, 3]


def test_topk_reports_only_what_its_variant_has(tmp_path, cli):
    """The bisection's SplitInd rounds and scans; the vector variant (a sort) has neither: no such rows."""
    rows = {}
    for variant in ("bisection", "vector"):
        out = cli(["run", "topk", "--n", "2000", "--k", "8", "--variant", variant, "--out", f"{variant}.json"],
                  tmp_path)
        assert out.exit_code == 0, out.output
        doc = OperatorRunResult.model_validate_json((tmp_path / f"{variant}.json").read_text())
        rows[variant] = {words[0]: words[1] for words in map(str.split, out.stdout.splitlines()) if len(words) > 1}
        rows[variant]["doc"] = doc
    bisection, vector = rows["bisection"], rows["vector"]
    assert bisection["rounds"] == str(bisection["doc"].outputs["rounds"]) and int(bisection["rounds"]) >= 1
    assert bisection["scans"] == str(int(bisection["doc"].simulated.counters["scans"])) != "0"
    assert "rounds" not in vector and "scans" not in vector and "rounds" not in vector["doc"].outputs


@pytest.mark.parametrize("args,message", [
    (["run", "split", "--n", "ten"], "--n:"),
    (["run", "split"], "--n: is required"),
    (["run", "split", "--n", "5", "--variant", "cub"], "--variant:"),
    (["run", "split", "--n", "5", "--dtype", "fp8"], "--dtype:"),
    (["run", "split", "--n", "5", "--seed", "-1"], "--seed:"),
    (["run", "split", "--n", "5", "--output-file", "o.npy"], "--output-file: must end in .npz"),
    (["run", "split", "--n", "5", "--out", "r.json", "--no-save"], "--out:"),
    (["run", "split", "--input", "missing.npz"], "--input: file not found"),
    (["run", "split", "--n", "5", "--hardware", "nope"], "nope"),
    (["run", "compress", "--n", "5", "--variant", "mcscan-ul1"], "--variant:"),
    (["run", "compress", "--n", "5", "--output-file", "o.npz"], "--output-file: must end in .npy"),
    (["run", "sort", "--n", "5", "--dtype", "fp32"], "--dtype:"),
    (["run", "sort", "--n", "5", "--trace", "t.txt"], "--trace:"),
    (["run", "topk", "--n", "5", "--k", "6"], "--k: must be at most"),
    (["run", "topk", "--n", "5", "--k", "-1"], "--k:"),
    (["run", "topk", "--n", "5", "--k", "2", "--variant", "radix"], "--variant:"),
])
def test_user_errors_are_one_line_with_status_2(tmp_path, cli, args, message):
    out = cli(args, tmp_path)
    assert out.exit_code == 2, out.output
    assert message in out.output
    assert "Traceback" not in out.output
    assert files(tmp_path) == []


def _junk_npz(path):
    """A zip archive whose member values.npy is no .npy (np.load gives such a member as its bytes)."""
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("values.npy", b"junk")


@pytest.mark.parametrize("setup,args,message", [
    (lambda p: np.save(p / "a.npy", np.zeros((2, 2), np.float16)), ["run", "sort", "--input", "a.npy"], "1-D"),
    (lambda p: np.save(p / "a.npy", np.zeros(3, np.float64)), ["run", "sort", "--input", "a.npy"], "must be one of"),
    (lambda p: np.savez(p / "a.npz", values=np.zeros(3, np.float16), flags=np.zeros(3, np.float32)),
     ["run", "split", "--input", "a.npz"], "bool, int8 or uint8"),
    (lambda p: np.savez(p / "a.npz", values=np.zeros(3, np.float16), mask=np.zeros(4, bool)),
     ["run", "compress", "--input", "a.npz"], "one length"),
    (lambda p: np.savez(p / "a.npz", probs=np.zeros(3, np.float16)), ["run", "split", "--input", "a.npz"],
     "unexpected array 'probs'"),
    (lambda p: np.savez(p / "a.npz", flags=np.zeros(3, bool)), ["run", "split", "--input", "a.npz"], "'values'"),
    (lambda p: (p / "a.npy").write_bytes(b"junk"), ["run", "topk", "--input", "a.npy", "--k", "1"],
     "not a .npy or .npz file (bad magic"),
    (lambda p: _junk_npz(p / "a.npz"), ["run", "sort", "--input", "a.npz"],
     "error: --input: a.npz is not a readable .npz archive ('values' is not a .npy array)\n"),
    (lambda p: np.save(p / "a.npy", np.zeros(3, np.int16)), ["run", "sort", "--input", "a.npy", "--n", "4"],
     "disagrees"),
    (lambda p: np.save(p / "a.npy", np.zeros(3, np.int16)), ["run", "sort", "--input", "a.npy", "--dtype", "fp16"],
     "disagrees"),
])
def test_bad_input_files(tmp_path, cli, setup, args, message):
    setup(tmp_path)
    before = files(tmp_path)
    out = cli(args, tmp_path)
    assert out.exit_code == 2, out.output
    assert message in out.output and "Traceback" not in out.output
    assert files(tmp_path) == before


@pytest.mark.parametrize("op", [["split"], ["compress"], ["sort"], ["topk", "--k", "1"], ["topp"], ["sample"],
                                ["batched-scan"], ["segmented-scan"]])
def test_a_broken_npz_is_a_one_line_error(tmp_path, cli, op):
    (tmp_path / "bad.npz").write_bytes(b"PK\x03\x04garbage")
    out = cli(["run", *op, "--input", "bad.npz", "--no-save"], tmp_path)
    assert out.exit_code == 2 and out.output.startswith("error: --input: bad.npz is not a readable"), out.output


@pytest.mark.parametrize("op", [["split"], ["compress"], ["sort"], ["topk", "--k", "1"]])
def test_a_size_beyond_memory_is_refused(tmp_path, cli, op):
    out = cli(["run", *op, "--n", "1e13", "--no-save"], tmp_path)
    assert out.exit_code == 2 and "--n: a functional run of 10,000,000,000,000 elements needs about" in out.output
    assert out.output.rstrip().endswith("give a smaller --n or use --model-only"), out.output
    # the advice works: --model-only times the size, as ascendbench.run(model_only=True) does
    out = cli(["run", *op, "--n", "1e13", "--model-only", "--json", "--no-save"], tmp_path)
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    assert doc["verification"]["performed"] is False
    if op[0] != "topk":  # topk's model takes 7 s at this size: not run a second time
        assert doc["simulated"]["time_s"] == ascendbench.run(op[0], n=10**13, model_only=True).time_s


@pytest.mark.parametrize("op, name", [("split", "flags"), ("compress", "mask")])
def test_values_only_inputs_say_that_flags_were_generated(tmp_path, cli, op, name):
    np.savez(tmp_path / "v.npz", values=np.arange(100, dtype=np.int16))
    np.save(tmp_path / "v.npy", np.arange(100, dtype=np.int16))
    for path in ("v.npz", "v.npy"):
        out = cli(["run", op, "--input", path, "--seed", "5", "--json", "--no-save"], tmp_path)
        assert out.exit_code == 0, out.output
        doc = json.loads(out.stdout)
        note = f"{name}: generated (0 or 1 with probability 1/2, seed 5); give them in a .npz with 'values'"
        assert doc["notes"] == [note]
        assert doc["problem"]["seed"] == 5 and doc["verification"]["passed"] is True
    np.savez(tmp_path / "both.npz", values=np.arange(100, dtype=np.int16), **{name: np.ones(100, bool)})
    doc = json.loads(cli(["run", op, "--input", "both.npz", "--json", "--no-save"], tmp_path).stdout)
    assert doc["notes"] == [] and doc["problem"]["seed"] is None


def test_a_later_run_removes_staging_files_of_killed_runs_only(tmp_path, cli):
    import os
    import subprocess
    import sys

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(dead.stdout)  # a process that has ended
    stale = [tmp_path / f".ascendbench-{dead_pid}-abcd1234.npz", tmp_path / f".ascendbench-{dead_pid}-k2j8_x0q.tmp"]
    kept = [tmp_path / f".ascendbench-{os.getpid()}-abcd1234.npz", tmp_path / ".ascendbench-abcd1234.npz",
            tmp_path / f".ascendbench-{dead_pid}-abcd1234.npz.bak"]
    for path in stale + kept:
        path.write_bytes(b"left over")
    out = cli(["run", "sort", "--n", "100", "--out", "r.json", "--output-file", "o.npz"], tmp_path)
    assert out.exit_code == 0, out.output
    assert [p.exists() for p in stale] == [False, False] and all(p.exists() for p in kept)
