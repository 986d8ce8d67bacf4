"""`run scan` beyond memory: generated streams, memory-mapped input and output, partitions, the time estimate."""

import json

import numpy as np

import ascendbench.commands.run_scan as run_module


def test_generated_stream_with_tiny_partitions_and_an_output_file(tmp_path, cli):
    out = cli(["run", "scan", "--n", "100003", "--dtype", "int8", "--algorithm", "mcscan", "--generator", "counting",
               "--partition-limit", "4099", "--output-file", "y.npy", "--json", "--no-save"], tmp_path)
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    p = doc["problem"]
    assert p["generator"] == "counting" and p["partitions"] == -(-100003 // 4099) and p["partition_limit"] == 4099
    assert p["offset_type"] == "int32" and p["output"] == "file" and doc["verification"]["passed"]
    x = (np.arange(100003) % 256).astype(np.uint8).view(np.int8)
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), np.cumsum(x, dtype=np.int64).astype(np.int32))
    assert sorted(f.name for f in tmp_path.iterdir()) == ["y.npy"]  # no partial file left


def test_memory_mapped_input_gives_the_same_result_as_in_memory(tmp_path, cli):
    x = np.random.default_rng(0).random(70_001).astype(np.float16)
    np.save(tmp_path / "x.npy", x)
    a = cli(["run", "scan", "--input", "x.npy", "--json", "--no-save", "--output-file", "a.npy"], tmp_path)
    b = cli(["run", "scan", "--input", "x.npy", "--json", "--no-save", "--output-file", "b.npy",
             "--partition-limit", "1000"], tmp_path)
    assert a.exit_code == 0 and b.exit_code == 0, a.output + b.output
    np.testing.assert_array_equal(np.load(tmp_path / "a.npy"), np.load(tmp_path / "b.npy"))
    assert json.loads(b.stdout)["problem"]["generator"] is None


def test_model_only_records_the_offset_type_at_huge_n(tmp_path, cli):
    for n, kind, parts in (("2147483647", "int32", 1), ("2**31", "int64", 2), ("2**40", "int64", 513)):
        out = cli(["run", "scan", "--n", n, "--model-only", "--json", "--no-save"], tmp_path)
        assert out.exit_code == 0, out.output
        doc = json.loads(out.stdout)
        assert doc["problem"]["offset_type"] == kind and doc["problem"]["partitions"] == parts
        assert doc["problem"]["output"] == "none"


def test_long_functional_runs_say_how_long_and_how_to_skip(tmp_path, cli, monkeypatch):
    monkeypatch.setattr(run_module, "ESTIMATE_ABOVE", 1000)
    monkeypatch.setattr(run_module, "NOTE_ABOVE_S", 0.0)
    out = cli(["run", "scan", "--n", "5000", "--no-save"], tmp_path)
    assert out.exit_code == 0, out.output
    assert "will take about" in out.output and "--model-only to skip it" in out.output


def test_streaming_errors_are_one_line(tmp_path, cli):
    for args, message in ((["--n", "10", "--partition-limit", "0"], "--partition-limit: must be in [1, 2**31 - 1]"),
                          (["--n", "10", "--partition-limit", "2**31"], "--partition-limit: must be in"),
                          (["--n", "10", "--generator", "zeros"], "--generator: must be one of")):
        out = cli(["run", "scan", *args], tmp_path)
        assert out.exit_code == 2 and message in out.output and "Traceback" not in out.output, out.output


def test_without_an_output_file_the_output_is_checked_on_the_fly_and_not_kept(tmp_path, cli):
    # the command never reads the array: keeping it (400 MB at 1e8) only cost page faults
    out = cli(["run", "scan", "--n", "70001", "--json", "--no-save"], tmp_path)
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    assert doc["problem"]["output"] == "discarded" and doc["verification"]["passed"] is True


def test_a_run_removes_the_partial_files_left_by_dead_writers_only_and_says_so(tmp_path, cli):
    import subprocess
    import sys

    from ascendbench.store.io import process_space_tag

    tag = process_space_tag()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # its pid no longer runs
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        names = {
            f".ascendbench-{dead.pid}-{tag}-0a1b2c3d.y.npy.partial": False,  # a killed writer's file: removed
            f".ascendbench-{dead.pid}-{tag}-0a1b2c3d.z.npy.partial": False,  # another target's too
            f".z.npy.{dead.pid}.0a1b2c3d.partial": False,  # as the previous version named them
            f".ascendbench-{live.pid}-{tag}-0a1b2c3d.y.npy.partial": True,  # a running writer's file: kept
            f".y.npy.{live.pid}.0a1b2c3d.partial": True,
            f".y.npy.{dead.pid}.0a1b2c3d.partial.bak": True,  # not the exact pattern
            f"y.npy.{dead.pid}.0a1b2c3d.partial": True,
            ".y.npy.0a1b2c3d.partial": True,  # no pid: its writer cannot be told
        }
        for name in names:
            (tmp_path / name).write_bytes(b"x")
        out = cli(["run", "scan", "--n", "1000", "--output-file", "y.npy", "--json", "--no-save"], tmp_path)
        assert out.exit_code == 0, out.output
        left = sorted(f.name for f in tmp_path.iterdir())
        assert left == sorted(["y.npy", *(name for name, kept in names.items() if kept)])
        notes = [line for line in out.output.splitlines() if line.startswith("note: removed")]
        assert len(notes) == 1 and notes[0].startswith("note: removed 3 files left in '.' by runs that were killed "
                                                       "(3 B): "), out.output
        assert sorted(notes[0].split("): ", 1)[1].split(", ")) == sorted(n for n, kept in names.items() if not kept)
    finally:
        live.kill()
        live.wait()


def _dead_leftover(folder, name="y.npy"):
    """A partial file named as run scan names it, left by a process that has ended (as after a SIGKILL)."""
    import subprocess
    import sys

    code = ("import sys; from pathlib import Path; from ascendbench.store.io import partial_path; "
            "p = partial_path(Path(sys.argv[1])); p.write_bytes(b'x' * 2000); print(p.name)")
    done = subprocess.run([sys.executable, "-c", code, str(folder / name)], capture_output=True, text=True,
                          check=True)
    return folder / done.stdout.strip()


def test_any_command_that_writes_into_a_folder_removes_the_partial_files_of_killed_runs(tmp_path, cli):
    (tmp_path / "big").mkdir()
    leftover = _dead_leftover(tmp_path / "big")
    assert leftover.exists()
    out = cli(["run", "hgemm", "--m", "64", "--n", "64", "--k", "64", "--out", "big/r.json"], tmp_path)
    assert out.exit_code == 0, out.output
    assert sorted(p.name for p in (tmp_path / "big").iterdir()) == ["r.json"]
    assert f"note: removed 1 file left in 'big' by a run that was killed (2 kB): {leftover.name}" in out.output
    # the default result folder too (no option names it)
    runs = tmp_path / "results" / "runs" / "sort"
    runs.mkdir(parents=True)
    leftover = _dead_leftover(runs, "r.json")
    out = cli(["run", "sort", "--n", "100"], tmp_path)
    assert out.exit_code == 0, out.output
    assert not leftover.exists() and len(list(runs.iterdir())) == 1 and leftover.name in out.output


def test_the_partial_file_of_a_sigkilled_run_is_removed_by_the_next_write_there(tmp_path, cli):
    import os
    import signal
    import subprocess
    import sys
    import time

    proc = subprocess.Popen([sys.executable, "-m", "ascendbench.cli", "run", "scan", "--n", "2**24", "--output-file",
                             "y.npy", "--no-save"], cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        def reserved() -> bool:  # the partial file made and its blocks reserved (67.1 MB), not just created
            try:
                return any(p.stat().st_size >= 4 * 2**24 for p in tmp_path.glob(".*.partial"))
            except FileNotFoundError:  # renamed into place: the run ended
                return False

        while not reserved() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert proc.poll() is None, "the run ended before it wrote its partial file"
        os.kill(proc.pid, signal.SIGKILL)  # while it writes y.npy's partial file
    finally:
        proc.kill()
        proc.wait()
    (partial,) = tmp_path.glob(".*.partial")
    assert str(proc.pid) in partial.name and "y.npy" in partial.name and not (tmp_path / "y.npy").exists()
    out = cli(["run", "sort", "--n", "100", "--out", "r.json"], tmp_path)  # another command, another file
    assert out.exit_code == 0, out.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]
    assert f"by a run that was killed (67.1 MB): {partial.name}" in out.output
