"""ascendbench.run's file and option arguments (issue 39): an input_file is read or refused, never only recorded;
every bad argument is a ParamError naming the keyword argument; an error leaves no file behind."""

from __future__ import annotations

import hashlib
import zipfile

import numpy as np
import pytest

import ascendbench
from ascendbench.kernels import ParamError


def _error(name: str, **options) -> str:
    with pytest.raises(ParamError) as err:
        ascendbench.run(name, **options)
    return str(err.value)


@pytest.mark.parametrize("name", ["sort", "topk"])
def test_a_missing_input_file_is_refused_not_replaced_by_generated_data(tmp_path, name):
    missing = tmp_path / "missing.npy"
    extra = {"k": 2} if name == "topk" else {}
    assert _error(name, n=10, input_file=missing, **extra) == f"input_file: file not found: {missing}"
    assert _error(name, input_file=missing, **extra) == f"input_file: file not found: {missing}"


def test_the_input_file_is_read_and_its_sha256_recorded(tmp_path):
    keys = np.array([5, -3, 9, 0, 2], np.int32)
    path = tmp_path / "keys.npy"
    np.save(path, keys)
    run = ascendbench.run("sort", input_file=path)
    assert run.result.problem.data == "file"
    assert run.result.problem.n == 5
    assert run.result.problem.input_sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    np.testing.assert_array_equal(run.arrays["values"], np.sort(keys))
    top = ascendbench.run("topk", input_file=path, k=2)
    np.testing.assert_array_equal(top.arrays["values"], [9, 5])


def test_a_bad_input_file_names_input_file(tmp_path):
    flat, text, npz = tmp_path / "m.npy", tmp_path / "t.txt", tmp_path / "z.npz"
    np.save(flat, np.zeros((2, 3), np.int32))
    text.write_text("hello")
    np.savez(npz, keys=np.zeros(3))
    assert _error("sort", input_file=flat) == "input_file: array 'values' must be 1-D, got shape (2, 3)"
    assert _error("sort", input_file=text).startswith(f"input_file: {text} is not a .npy or .npz file")
    assert _error("sort", input_file=npz) == "input_file: unexpected array 'keys'; allowed names: values"
    assert _error("sort", input_file=flat, model_only=True) == (
        "input_file: there is no data with model_only; drop one of them")
    # the CLI's reader (pipeline.read_input): its messages, naming input_file
    junk = tmp_path / "junk.npz"
    with zipfile.ZipFile(junk, "w") as archive:
        archive.writestr("values.npy", b"junk")
    assert _error("sort", input_file=junk) == (
        f"input_file: {junk} is not a readable .npz archive ('values' is not a .npy array)")
    assert _error("sort", input_file=tmp_path) == f"input_file: {tmp_path} cannot be read: Is a directory"


def test_a_tile_that_overflows_a_buffer_names_the_tile_size():
    assert _error("hgemm", m=64, n=64, k=64, m0=4096) == (
        "m0: L0A: 4096x128x128 tiling: A block M0 x K0 fp16 (1 slot(s)) needs 1048576 bytes in total, 65536 bytes "
        "available on atlas-300t-a2")
    assert _error("hgemm", m=64, n=64, k=64, n0=4096).startswith("n0: L0B: ")


@pytest.mark.parametrize("options, message", [
    ({"out": "x.json"}, "out: must be an (n,) array or memory map of the output dtype, got str"),
    ({"output_path": "nodir/x.npy"}, "output_path: folder 'nodir' does not exist"),
    ({"output_path": "d.txt"}, "output_path: must end in .npy, got 'd.txt'"),
    ({"output_path": "dir.npy"}, "output_path: 'dir.npy' exists and is not a regular file"),
    ({"progress": "yes"}, "progress: must be a callable progress(stage, done, total) or None, got 'yes'"),
    ({"keep_output": "yes"}, "keep_output: must be True, False or None, got 'yes'"),
])
def test_a_bad_scan_run_option_is_a_param_error_naming_it(tmp_path, monkeypatch, options, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "dir.npy").mkdir()
    assert _error("scan", n=100, **options) == message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir.npy"]


def test_a_refused_scan_leaves_no_output_file(tmp_path):
    path = tmp_path / "c.npy"
    message = _error("scan", n=10**5, algorithm="mcscan-ul1", generator="counting", output_path=path)
    assert message.startswith("algorithm: mcscan-ul1 rounds each row's sum")
    assert list(tmp_path.iterdir()) == []
    run = ascendbench.run("scan", n=1000, generator="counting", output_path=path)
    np.testing.assert_array_equal(np.load(path), np.cumsum(np.arange(1000.0)))
    assert run.verification.passed


def test_file_hardware_and_workload_errors_name_the_keyword_arguments(tmp_path):
    from ascendbench.hardware import HardwareError
    from ascendbench.kernels.base import InputError
    from ascendbench.workloads import WorkloadError

    missing = tmp_path / "nope.npy"
    for error, name, options, message in [
        (InputError, "scan", {"input_file": missing}, f"input_file: file not found: {missing}"),
        (InputError, "hgemm", {"a_file": missing}, f"a_file: file not found: {missing}"),
        (HardwareError, "sort", {"n": 10, "hardware": "nohw"}, "hardware: unknown profile 'nohw'; use one of"),
        (WorkloadError, "hgemm", {"workload": "nowl"}, "workload: unknown workload 'nowl'; choose from"),
    ]:
        with pytest.raises(error) as err:
            ascendbench.run(name, **options)
        assert str(err.value).startswith(message)


def test_dashed_keywords_are_refused_with_their_python_spelling():
    assert _error("scan", n=100, **{"out-dtype": "fp16"}) == (
        "out_dtype: keyword arguments are spelt with underscores: use out_dtype, not 'out-dtype'")
    assert _error("scan", n=100, **{"model-only": True}) == (
        "model_only: keyword arguments are spelt with underscores: use model_only, not 'model-only'")


def test_topp_takes_n_as_vocab_as_its_command_does():
    assert ascendbench.run("topp", n=100).result.problem.n == 100
    assert _error("topp", n=100, vocab=100) == "n: is another name of vocab; give one of them"


@pytest.mark.parametrize("name, size", [("sort", "n"), ("scan", "n"), ("batched-scan", "batch")])
def test_a_missing_size_names_both_data_arguments(name, size):
    assert _error(name) == f"{size}: is required without arrays or input_file"


def test_a_full_disk_names_output_path(tmp_path, monkeypatch):
    import shutil

    monkeypatch.setattr(shutil, "disk_usage", lambda path: shutil._ntuple_diskusage(10**9, 10**9 - 100, 100))
    assert _error("scan", n=1000, output_path=tmp_path / "y.npy") == (
        "output_path: the output needs 0.0 GB on disk, 0.0 GB free")
    assert list(tmp_path.iterdir()) == []


def test_arrays_and_an_input_file_nobody_read_are_refused(tmp_path):
    assert _error("sort", arrays={"values": np.arange(4)}, input_file=tmp_path / "x.npy") == (
        "arrays: give either arrays or input_file, not both")


def test_an_npz_input_file_is_held_to_the_kernels_array_names(tmp_path):
    """topp and sample read their array by name: an archive without it, or with another array beside it, is
    refused naming input_file as for the other kernels (it was a KeyError, or the extra array was ignored)."""
    probs = np.full(16, 1 / 16, np.float32)
    np.savez(extra := tmp_path / "extra.npz", probs=probs, other=np.zeros(3))
    np.savez(other := tmp_path / "other.npz", other=np.zeros(3))
    np.savez(empty := tmp_path / "empty.npz")
    assert _error("topp", input_file=extra) == "input_file: unexpected array 'other'; allowed names: probs"
    assert _error("topp", input_file=other) == "input_file: unexpected array 'other'; allowed names: probs"
    assert _error("sample", input_file=other) == "input_file: unexpected array 'other'; allowed names: weights"
    assert _error("sort", input_file=empty) == "input_file: holds no arrays; expected values"
    assert _error("sort", arrays={}) == "arrays: holds no arrays; expected values"
