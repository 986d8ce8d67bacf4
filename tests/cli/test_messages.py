"""Messages that name the real cause (issue 16 item 9): a file that is not a .npy at all, an output folder no
file can be created in, an empty --storage. Each is one line with exit status 2 and leaves nothing behind."""

import os
import tempfile
from pathlib import Path

import numpy as np
import pytest

from ascendbench.store.io import unreadable_npy

MAGIC = r"b'\x93NUMPY'"

# (command, option, what the command reads)
READERS = [
    (["run", "scan"], "--input", ".npy"),
    (["run", "batched-scan"], "--input", ".npy"),
    (["run", "segmented-scan"], "--input", ".npy or .npz"),
    (["run", "split"], "--input", ".npy or .npz"),
    (["run", "compress"], "--input", ".npy or .npz"),
    (["run", "sort"], "--input", ".npy or .npz"),
    (["run", "topk", "--k", "1"], "--input", ".npy or .npz"),
    (["run", "sample"], "--input", ".npy or .npz"),
    (["run", "topp"], "--input", ".npy or .npz"),
    (["run", "hgemm", "--b", "b.npy"], "--a", ".npy"),
]


def one_line(out) -> str:
    assert out.exit_code == 2, out.output
    lines = [line for line in out.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in out.output, out.output
    return lines[0]


def leftovers(cwd: Path, inputs: set[str]) -> list[str]:
    return sorted(p.name for p in cwd.rglob("*") if p.name not in inputs)


@pytest.mark.parametrize("command, option, kind", READERS)
def test_a_text_file_is_not_a_npy_file_rather_than_pickled_data(tmp_path, cli, command, option, kind):
    (tmp_path / "hello.npy").write_text("hello")
    np.save(tmp_path / "b.npy", np.ones((4, 4), np.float16))
    out = cli([*command, option, "hello.npy", "--no-save"], tmp_path)
    assert one_line(out) == (f"error: {option}: hello.npy is not a {kind} file (bad magic: it starts with "
                             f"b'hello', a .npy file with {MAGIC})")
    assert leftovers(tmp_path, {"hello.npy", "b.npy"}) == []


@pytest.mark.parametrize("command, option, kind", READERS[:4])
def test_empty_and_object_files_say_so(tmp_path, cli, command, option, kind):
    (tmp_path / "empty.npy").write_bytes(b"")
    np.save(tmp_path / "obj.npy", np.array([1, "a", None], dtype=object), allow_pickle=True)
    out = cli([*command, option, "empty.npy", "--no-save"], tmp_path)
    what = ".npy array" if kind == ".npy" else ".npy or .npz file"
    assert one_line(out) == f"error: {option}: empty.npy is empty (0 bytes), not a {what}"
    out = cli([*command, option, "obj.npy", "--no-save"], tmp_path)
    assert one_line(out) == (f"error: {option}: obj.npy holds Python objects (an object array), which are not "
                             "loaded; save a numeric array")


def test_a_broken_zip_given_as_input(tmp_path, cli):
    (tmp_path / "bad.npz").write_bytes(b"PK\x03\x04garbage")
    out = cli(["run", "scan", "--input", "bad.npz", "--no-save"], tmp_path)  # was a BadZipFile traceback
    assert one_line(out) == "error: --input: bad.npz is not a readable .npy array (it is a zip archive, as a .npz is)"
    out = cli(["run", "split", "--input", "bad.npz", "--no-save"], tmp_path)
    assert one_line(out) == "error: --input: bad.npz is not a readable .npz archive (File is not a zip file)"


def test_unreadable_npy_keeps_numpys_reason_for_a_damaged_npy(tmp_path):
    np.save(tmp_path / "x.npy", np.ones(10, np.float16))
    (tmp_path / "cut.npy").write_bytes((tmp_path / "x.npy").read_bytes()[:20])
    with pytest.raises(ValueError) as info:
        np.load(tmp_path / "cut.npy")
    assert unreadable_npy(tmp_path / "cut.npy", info.value) == (
        "is not a readable .npy array (EOF: reading array header, expected 118 bytes got 10)")


def _uncreatable(folder: str) -> bool:
    try:
        fd, name = tempfile.mkstemp(dir=folder)
    except OSError:
        return os.path.isdir(folder) and os.access(folder, os.W_OK)  # the case os.access alone gets wrong
    os.close(fd)
    os.unlink(name)
    return False


@pytest.mark.skipif(not _uncreatable("/proc"), reason="needs a /proc that os.access calls writable")
@pytest.mark.parametrize("command", [["run", "scan", "--n", "10"], ["run", "split", "--n", "10"]])
def test_an_output_folder_on_proc_is_not_a_disk_space_problem(tmp_path, cli, command):
    suffix = ".npy" if command[1] == "scan" else ".npz"
    out = cli([*command, "--output-file", f"/proc/x{suffix}", "--no-save"], tmp_path)
    assert one_line(out) == ("error: --output-file: cannot create files in folder '/proc' (No such file or "
                             "directory); give a path on a writable filesystem")


EMPTY_STORAGE = ("error: --storage: must not be empty; give a journal file path (default "
                 "results/tuning/studies.journal) or an RDB URL such as sqlite:///studies.db")


@pytest.mark.parametrize("args", [
    ["tune", "scan", "--trials", "1", "--storage", ""],
    ["tune", "hgemm", "--m", "64", "--n", "64", "--k", "64", "--trials", "1", "--storage", " "],
    ["tune", "plot", "r.json", "--storage", ""],
])
def test_an_empty_storage_is_named_as_such(tmp_path, cli, args):
    (tmp_path / "r.json").write_text("{}")
    out = cli(args, tmp_path)
    assert one_line(out) == EMPTY_STORAGE
    assert leftovers(tmp_path, {"r.json"}) == []


def _commands_with(*options: str) -> list[str]:
    """The `run` subcommands that have every one of `options` (read from the CLI: a new one is covered)."""
    import typer

    from ascendbench.cli import app

    run = typer.main.get_command(app).get_command(None, "run")
    return sorted(name for name in run.list_commands(None)
                  if set(options) <= {o for p in run.get_command(None, name).params for o in p.opts})


# An array of each command's own kind: the refusal must not depend on the file being one it could read.
INPUTS = {"scan": np.ones(1000, np.float16), "batched-scan": np.ones((4, 256), np.float16),
          "segmented-scan": np.ones(1000, np.float16), "sample": np.full(1000, 1e-3, np.float32),
          "topp": np.full(1000, 1e-3, np.float16), "sort": np.ones(1000, np.float16),
          "topk": np.ones(1000, np.float16), "split": np.ones(1000, np.float16),
          "compress": np.ones(1000, np.float16)}


def test_every_command_with_input_and_model_only_is_listed():
    assert _commands_with("--input", "--model-only") == sorted(INPUTS)


@pytest.mark.parametrize("command", sorted(INPUTS))
def test_an_input_with_model_only_is_refused_naming_both(tmp_path, cli, command):
    # run scan, batched-scan and segmented-scan timed the file's size and said nothing of the data they did not
    # read; ascendbench.run, sample and topp refused the pair: now every command refuses it, before reading
    np.save(tmp_path / "x.npy", INPUTS[command])
    k = ["--k", "1"] if command == "topk" else []  # topk's --k is required
    out = cli(["run", command, *k, "--input", "x.npy", "--model-only"], tmp_path)
    assert one_line(out) == "error: --input: there is no data with --model-only; drop one of them"
    assert leftovers(tmp_path, {"x.npy"}) == []
    out = cli(["run", command, *k, "--input", "missing.npy", "--model-only", "--no-save"], tmp_path)
    assert one_line(out) == "error: --input: there is no data with --model-only; drop one of them"
