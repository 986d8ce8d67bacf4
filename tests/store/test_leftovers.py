"""Hidden staging and partial files left by killed writers: which ones a later write removes, which it keeps."""

import os
import subprocess
import sys

import pytest

from ascendbench.store import io
from ascendbench.store.io import partial_path, process_space_tag, remove_leftovers, staging_prefix


@pytest.fixture
def dead_pid():
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)
    return int(done.stdout)  # a process that has ended


@pytest.fixture
def live_pid():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield proc.pid
    proc.kill()
    proc.wait()


def test_only_files_of_dead_writers_of_this_host_and_pid_namespace_are_removed(tmp_path, dead_pid, live_pid):
    tag = process_space_tag()
    other = "0" * 8 if tag != "0" * 8 else "1" * 8
    names = {
        f".ascendbench-{dead_pid}-{tag}-k2j8_x0q.tmp": False,  # a killed writer's staging file
        f".ascendbench-{dead_pid}-{tag}-0a1b2c3d.y.npy.partial": False,  # its partial output, any target
        f".ascendbench-{dead_pid}-{tag}-0a1b2c3d.z.npy.partial": False,
        f".ascendbench-{dead_pid}-abcd1234.npz": False,  # names of the previous version (no tag)
        f".y.npy.{dead_pid}.0a1b2c3d.partial": False,
        f".ascendbench-{live_pid}-{tag}-0a1b2c3d.y.npy.partial": True,  # a running writer's
        f".ascendbench-{os.getpid()}-{tag}-k2j8_x0q.json": True,  # this process's own
        f".ascendbench-{live_pid}-abcd1234.npz": True,
        f".ascendbench-{dead_pid}-{other}-0a1b2c3d.y.npy.partial": True,  # another host's or container's pid
        f".ascendbench-{dead_pid}-abcd1234.npz.bak": True,  # not a name this tool makes
        f"y.npy.{dead_pid}.0a1b2c3d.partial": True,
        ".y.npy.0a1b2c3d.partial": True,
        ".ascendbench-abcd1234.npz": True,
        "r.json": True,
    }
    for name in names:
        (tmp_path / name).write_bytes(b"12345")
    (tmp_path / f".ascendbench-{dead_pid}-{tag}-dir").mkdir()  # not a regular file: kept
    removed = remove_leftovers(tmp_path)
    assert sorted((p.name, size) for p, size in removed) == sorted((n, 5) for n, kept in names.items() if not kept)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [*(n for n, kept in names.items() if kept), f".ascendbench-{dead_pid}-{tag}-dir"])


def test_the_names_a_writer_makes_are_judged_by_its_pid(tmp_path, dead_pid, monkeypatch):
    long_target = tmp_path / ("é" * 120 + ".npy")  # 244 bytes: the partial file's name must still fit
    partial = partial_path(long_target)
    assert partial.parent == tmp_path and partial.name.startswith(staging_prefix()) and partial.name.endswith(".partial")
    assert len(os.fsencode(partial.name)) <= 255
    partial.write_bytes(b"x")
    assert remove_leftovers(tmp_path) == []  # this process writes it
    monkeypatch.setattr(io.os, "getpid", lambda: dead_pid)  # as a killed process would have named them
    stage = tmp_path / f"{staging_prefix()}0a1b2c3d.json"
    stage.write_bytes(b"{}")
    partial2 = partial_path(tmp_path / "y.npy")
    partial2.write_bytes(b"xy")
    assert sorted(remove_leftovers(tmp_path)) == sorted([(stage, 2), (partial2, 2)])
    assert [p for p in tmp_path.iterdir()] == [partial]


def test_a_write_into_a_folder_removes_the_leftovers_of_killed_writers(tmp_path, dead_pid):
    leftover = tmp_path / f".ascendbench-{dead_pid}-{process_space_tag()}-0a1b2c3d.y.npy.partial"
    leftover.write_bytes(b"x" * 1000)
    io.atomic_write_text(tmp_path / "r.json", "{}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]


def test_only_the_exact_names_of_the_previous_version_are_removed(tmp_path, dead_pid):
    # the previous version's names carry no tag: only its exact forms count, never a user's look-alike file
    user = {".ascendbench-2025-notes.txt": b"notes\n", ".dataset.4000000.deadbeef.partial": b"data\n",
            f".ascendbench-{dead_pid}-deadbeef.txt": b"x", f".ascendbench-{dead_pid}-notes.tmp": b"x",
            f".ascendbench-{dead_pid}-k2j8_x0q9.tmp": b"x", f".dataset.{dead_pid}.deadbeef.partial": b"x",
            f".y.npy.{dead_pid}.0a1b2c3.partial": b"x"}
    old = [f".ascendbench-{dead_pid}-k2j8_x0q.tmp", f".ascendbench-{dead_pid}-0a1b2c3d.json",
           f".ascendbench-{dead_pid}-0a1b2c3d.png", f".z.npy.{dead_pid}.deadbeef.partial"]
    for name, data in user.items():
        (tmp_path / name).write_bytes(data)
    for name in old:
        (tmp_path / name).write_bytes(b"12")
    assert sorted(p.name for p, _ in remove_leftovers(tmp_path)) == sorted(old)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == user


def test_a_run_keeps_a_users_files_that_look_like_leftovers(tmp_path, dead_pid):
    folder = tmp_path / "o"
    folder.mkdir()
    (folder / ".ascendbench-2025-notes.txt").write_text("notes\n")
    (folder / ".dataset.4000000.deadbeef.partial").write_text("data\n")
    leftover = folder / f".z.npy.{dead_pid}.0a1b2c3d.partial"  # the previous version's, of a killed run
    leftover.write_bytes(b"x" * 100)
    done = subprocess.run([sys.executable, "-m", "ascendbench.cli", "run", "scan", "--n", "1e5", "--output-file",
                           "o/z.npy", "--no-save"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in folder.iterdir()) == [".ascendbench-2025-notes.txt",
                                                        ".dataset.4000000.deadbeef.partial", "z.npy"]
    assert (folder / ".ascendbench-2025-notes.txt").read_text() == "notes\n"
    assert (folder / ".dataset.4000000.deadbeef.partial").read_text() == "data\n"
