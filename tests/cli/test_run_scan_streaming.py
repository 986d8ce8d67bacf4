"""`run scan` beyond memory: generated streams, memory-mapped input and output, partitions, the time estimate."""

import json

import numpy as np

import ascendbench.commands.run as run_module


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


def test_a_run_removes_partial_files_of_its_target_left_by_dead_writers_only(tmp_path, cli):
    import subprocess
    import sys

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # its pid no longer runs
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        names = {
            f".y.npy.{dead.pid}.0a1b2c3d.partial": False,  # a killed writer's file: removed
            f".y.npy.{live.pid}.0a1b2c3d.partial": True,  # a running writer's file: kept
            f".z.npy.{dead.pid}.0a1b2c3d.partial": True,  # another target's
            f".y.npy.{dead.pid}.0a1b2c3d.partial.bak": True,  # not the exact pattern
            f"y.npy.{dead.pid}.0a1b2c3d.partial": True,
            ".y.npy.0a1b2c3d.partial": True,  # no pid (older versions): its writer cannot be told
        }
        for name in names:
            (tmp_path / name).write_bytes(b"x")
        out = cli(["run", "scan", "--n", "1000", "--output-file", "y.npy", "--json", "--no-save"], tmp_path)
        assert out.exit_code == 0, out.output
        left = sorted(f.name for f in tmp_path.iterdir())
        assert left == sorted(["y.npy", *(name for name, kept in names.items() if kept)])
    finally:
        live.kill()
        live.wait()
