"""`hgemm select` through typer's CliRunner, on a small app of its own (not wired into cli.py yet)."""

import json

import typer
from typer.testing import CliRunner

from ascendbench.commands import hgemm

root = typer.Typer()
root.add_typer(hgemm.app, name="hgemm")
runner = CliRunner()


def test_g1_prints_the_trace_and_the_choice():
    out = runner.invoke(root, ["hgemm", "select", "--m", "2048", "--n", "128", "--k", "2048"])
    assert out.exit_code == 0, out.output
    assert "128x128x256" in out.output and "aicore_num 16" in out.output and "acc_loop 8" in out.output
    assert "(source: selector)" in out.output and "atlas-300t-a2" in out.output
    for text in ("16x16", "32x32", "64x64", "128x128", "1024", "accepted: 16 < 20", "rejected: 1024 >= 20"):
        assert text in out.output


def test_json_gives_the_decision():
    out = runner.invoke(root, ["hgemm", "select", "--m", "2048", "--n", "128", "--k", "2048", "--json"])
    assert out.exit_code == 0
    doc = json.loads(out.stdout)
    assert (doc["m0"], doc["n0"], doc["k0"]) == (128, 128, 256)
    assert doc["source"] == "selector" and doc["aicore_num"] == 16 and doc["acc_loop"] == 8
    assert doc["threshold"] == 20 and doc["hardware"] == "atlas-300t-a2" and len(doc["trace"]) == 9


def test_fallback_and_batch():
    out = runner.invoke(root, ["hgemm", "select", "--m", "10000", "--n", "10000", "--k", "10000"])
    assert out.exit_code == 0 and "256x128x128" in out.output and "fallback" in out.output
    doc = json.loads(runner.invoke(root, ["hgemm", "select", "--m", "2048", "--n", "128", "--k", "2048",
                                          "--batch", "3", "--json"]).stdout)
    assert doc["source"] == "fallback" and doc["aicore_num"] == 24 and doc["batch"] == 3


def test_k0_rejections_are_shown():
    out = runner.invoke(root, ["hgemm", "select", "--m", "16", "--n", "16", "--k", "64"])
    assert out.exit_code == 0 and "skipped: K0 >= 2K = 128" in out.output and "256x128x128" in out.output


def one_line_error(out, text):
    assert out.exit_code == 2, out.output
    assert "Traceback" not in out.output
    lines = [line for line in out.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and text in lines[0], out.output


def test_bad_dimension_is_a_one_line_error():
    out = runner.invoke(root, ["hgemm", "select", "--m", "0", "--n", "128", "--k", "2048"])
    one_line_error(out, "--m: must be at least 1, got 0")
    out = runner.invoke(root, ["hgemm", "select", "--m", "16", "--n", "16", "--k", "16", "--batch", "-2"])
    one_line_error(out, "--batch: expected a non-negative integer")
    out = runner.invoke(root, ["hgemm", "select", "--m", str(2**40 + 1), "--n", "16", "--k", "16"])
    one_line_error(out, "--m: must be from 1 to 2**40")


def test_unknown_hardware_is_a_one_line_error():
    out = runner.invoke(root, ["hgemm", "select", "--m", "16", "--n", "16", "--k", "16",
                               "--hardware", "nope"])
    one_line_error(out, "--hardware: unknown profile 'nope'")


def test_json_error_keeps_stdout_empty():
    out = runner.invoke(root, ["hgemm", "select", "--m", "0", "--n", "1", "--k", "1", "--json"])
    assert out.exit_code == 2 and out.stdout == ""
