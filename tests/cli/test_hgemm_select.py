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
    for text in ("16x16", "32x32", "64x64", "128x128", "1024"):
        assert text in out.output


def test_verdicts_say_which_limit_in_words(monkeypatch):
    # the selector rule named, and each verdict says what it compared: blocks (aicore_num) against AI cores
    import io

    from rich.console import Console

    monkeypatch.setattr(hgemm, "out_console", Console(width=300, file=io.StringIO(), color_system=None))
    out = runner.invoke(root, ["hgemm", "select", "--m", "2048", "--n", "128", "--k", "100"])
    assert out.exit_code == 0, out.output
    text = hgemm.out_console.file.getvalue()
    assert "rejected: 1024 blocks, not fewer than the 20 AI cores" in text  # 16x16: 128 x 8 blocks
    assert "accepted: 16 blocks, fewer than the 20 AI cores" in text  # 128x128: 16 x 1
    assert "skipped: K0 1024 is not below 2K = 200" in text and "skipped: K0 256 is not below 2K = 200" in text
    assert "rejected: 1024 >= 20" not in text
    assert ("the paper's self-adaptive tiling selector (HGEMM §4.2.3) takes the first tile whose aicore_num, "
            "the blocks the tiling launches (one per AI core), is below the threshold, the chip's 20 AI cores; "
            "it tries only the K0 of Table 2 below 2K") in text


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
    assert out.exit_code == 0 and "skipped: K0 128 is not below 2K = 128" in out.output and "256x128x128" in out.output


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


# Issue 26 item 10: on a profile with a small UB the selector passes over tiles that do not fit, as run hgemm
# checks them, so that run hgemm accepts every tile select prints.
def small_profile(tmp_path, ub_bytes=196608, name="small-ub", l0a_bytes=65536):
    """The Atlas 300T A2's profile with a smaller UB (L0A), under another name unless told."""
    from pathlib import Path

    import ascendbench

    text = (Path(ascendbench.__file__).parent / "hardware" / "profiles" / "atlas-300t-a2.toml").read_text()
    text = text.replace("ub_bytes = { value = 196608", f"ub_bytes = {{ value = {ub_bytes}", 1)
    text = text.replace("l0a_bytes = { value = 65536", f"l0a_bytes = {{ value = {l0a_bytes}", 1)
    text = text.replace('name = "atlas-300t-a2"', f'name = "{name}"', 1)
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    return str(path)


def test_a_small_ub_passes_over_the_tiles_that_do_not_fit(tmp_path, cli):
    profile = small_profile(tmp_path, ub_bytes=32768)  # 128x128 needs 49,152 B of UB, 64x64 12,288 B
    out = runner.invoke(root, ["hgemm", "select", "--m", "2048", "--n", "128", "--k", "2048", "--hardware",
                               profile, "--json"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    assert doc["tile"] == "64x64x512" and doc["source"] == "fallback" and doc["aicore_num"] == 64
    assert doc["fallback_misfit"] == "UB needs 98,304 B, 32,768 B on small-ub"
    assert [s["reason"] for s in doc["trace"] if "misfit" in s and s["aicore_num"] < 20] == [
        "does not fit: UB needs 49,152 B, 32,768 B on small-ub"] * 2 + [
        "does not fit: UB needs 98,304 B, 32,768 B on small-ub"]
    text = runner.invoke(root, ["hgemm", "select", "--m", "2048", "--n", "128", "--k", "2048", "--hardware",
                                profile]).output
    assert "does not fit: UB needs 49,152 B, 32,768 B on small-ub" in text
    assert "the paper's fallback 256x128x128 does not fit (UB needs 98,304 B, 32,768 B on small-ub)" in " ".join(
        text.split())
    # run hgemm, choosing for itself, takes the same tile, and accepts it given by hand
    for extra in ([], ["--m0", "64", "--n0", "64", "--k0", "512"]):
        out = cli(["run", "hgemm", "--m", "2048", "--n", "128", "--k", "2048", "--hardware", profile, "--json",
                   "--no-save", *extra], tmp_path)
        assert out.exit_code == 0, out.output
        tiling = json.loads(out.stdout)["shapes"][0]["tiling"]
        assert (tiling["m0"], tiling["n0"], tiling["k0"]) == (64, 64, 512)
        assert tiling["source"] == ("user" if extra else "fallback")


def test_a_small_l0a_takes_the_next_candidate_of_the_rule(tmp_path, cli):
    profile = small_profile(tmp_path, l0a_bytes=32768)  # 128x128x256's A block needs 65,536 B, x128 32,768 B
    doc = json.loads(runner.invoke(root, ["hgemm", "select", "--m", "2048", "--n", "128", "--k", "2048",
                                          "--hardware", profile, "--json"]).stdout)
    assert (doc["tile"], doc["aicore_num"], doc["acc_loop"], doc["source"]) == ("128x128x128", 16, 16, "selector")
    assert [s["reason"] for s in doc["trace"] if "misfit" in s and s["aicore_num"] < 20] == [
        "does not fit: L0A needs 65,536 B, 32,768 B on small-ub"]
    out = cli(["run", "hgemm", "--m", "2048", "--n", "128", "--k", "2048", "--hardware", profile, "--json",
               "--no-save"], tmp_path)
    assert out.exit_code == 0, out.output
    tiling = json.loads(out.stdout)["shapes"][0]["tiling"]
    assert (tiling["m0"], tiling["n0"], tiling["k0"], tiling["source"]) == (128, 128, 128, "selector")


def test_a_ub_between_the_tiles_falls_back_to_the_fitting_tile_with_fewest_cores(tmp_path, cli):
    profile = small_profile(tmp_path, ub_bytes=65536)  # 128x128 fits (49,152 B), 256x128 does not (98,304 B)
    doc = json.loads(runner.invoke(root, ["hgemm", "select", "--m", "1000", "--n", "300", "--k", "700",
                                          "--hardware", profile, "--json"]).stdout)
    # the paper's chip takes 256x128x128 (12 cores); here the next candidate is the fallback, which does
    # not fit either: the fitting candidate with the fewest cores, 128x128 at K0 = 256 (24 cores)
    assert (doc["tile"], doc["aicore_num"], doc["source"]) == ("128x128x256", 24, "fallback")
    out = cli(["run", "hgemm", "--m", "1000", "--n", "300", "--k", "700", "--hardware", profile, "--json",
               "--no-save"], tmp_path)
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["shapes"][0]["tiling"]["k0"] == 256


def test_a_profile_no_tile_fits_is_one_line_naming_the_hardware(tmp_path, cli):
    profile = small_profile(tmp_path, ub_bytes=512)  # 16x16 needs 768 B of UB
    out = runner.invoke(root, ["hgemm", "select", "--m", "2048", "--n", "128", "--k", "2048", "--hardware",
                               profile])
    one_line_error(out, "--hardware: none of the 15 tile(s) the HGEMM paper's selector tries fits (the smallest, "
                        "16x16x128: UB needs 768 B, 512 B on small-ub); give run hgemm --m0, --n0 and --k0 that fit")
    out = cli(["run", "hgemm", "--m", "2048", "--n", "128", "--k", "2048", "--hardware", profile, "--no-save"],
              tmp_path)
    one_line_error(out, "UB: none of the 15 tile(s) the HGEMM paper's selector tries fits small-ub (the smallest, "
                        "16x16x128: UB needs 768 B, 512 B on small-ub); give --m0, --n0 and --k0")


def test_the_learned_selector_on_a_profile_of_its_name_with_other_buffers(tmp_path):
    profile = small_profile(tmp_path, ub_bytes=32768, name="atlas-300t-a2")
    # a decode-step shape (M = 16), where the learned selector leaves the paper's tile
    out = runner.invoke(root, ["hgemm", "select", "--m", "16", "--n", "2048", "--k", "512", "--hardware",
                               profile, "--selector", "learned"])
    one_line_error(out, "--selector: the learned selector's tile 96x128x128 does not fit this profile's buffers "
                        "(UB needs 36,864 B, 32,768 B on atlas-300t-a2); use --selector paper")
