"""The learned tile selector: its features in closed form, fitted and trusted as documented, falling back to the
paper's rule where it has no evidence, readable, shipped, and printed with its trace."""

import json
import math

import numpy as np
import pytest
from typer.testing import CliRunner

from ascendbench.cli import app
from ascendbench.tuning.selector import (FEATURES, MARGIN, LearnedSelector, SelectorError, Solved, fit,
                                         load_selector, tile_features)

P, A, B = (256, 128, 128), (128, 128, 128), (128, 256, 64)
RANGES = [(1, 16384), (256, 32768), (256, 32768)]
MACHINE = {"ai_cores": 20, "l1_bytes": 524288, "l0a_bytes": 65536, "l0b_bytes": 65536,
           "gm_read_bytes_per_cycle": 37.0, "l2_read_bytes_per_cycle": 128.0, "hbm_bytes_per_cycle": 505.0,
           "gm_read_latency_cycles": 347.0}


def test_tile_features_are_the_tiling_counts():
    x = dict(zip(FEATURES, tile_features(1000, 1000, 1000, [A], MACHINE)[0], strict=True))
    # 8 x 8 blocks of 128 x 128 in 4 waves of 20 cores, 8 K blocks; L1 panels 512 deep (2 x 256 x 512 x 2 B
    # = 512 KiB): 2 per block; the swizzle shares each panel among 8 cores of a wave (L2 hit 7/8)
    assert x["log waves"] == pytest.approx(math.log(4)) and x["log K blocks"] == pytest.approx(math.log(8))
    assert x["log blocks"] == pytest.approx(math.log(64)) and x["log active cores"] == pytest.approx(math.log(20))
    assert x["M fill"] == x["N fill"] == x["K fill"] == pytest.approx(1000 / 1024)
    assert x["last wave fill"] == pytest.approx(64 / 80) and x["log L1 panels"] == pytest.approx(math.log(8))
    assert x["A L2 hit"] == x["B L2 hit"] == pytest.approx(7 / 8)
    assert x["log cube"] == pytest.approx(math.log(32 * 8 * 8 * 8))  # 16^3 fractals per busiest core
    assert x["log GM read"] == pytest.approx(math.log(32 * 256 * 128 * 2 / 37))
    # K and N of 1000 fp16 are not 512-byte rows: A and B are padded; 128 x 128 x 128 needs no K0/2 halves
    assert x["A padded x log(waves x K blocks)"] == x["B padded x log(waves x K blocks)"] == pytest.approx(math.log(32))
    assert x["halves x log(waves x K blocks)"] == 0
    # 256 x 128 x 128 fills L0A (64 KiB): multiplied in K0/2 halves; 4 x 8 blocks in 2 waves
    y = dict(zip(FEATURES, tile_features(1000, 1024, 1000, [P], MACHINE)[0], strict=True))
    assert y["halves x log(waves x K blocks)"] == pytest.approx(math.log(16))
    assert y["B padded x log(waves x K blocks)"] == 0 and y["last wave fill"] == pytest.approx(32 / 40)


def _solved(times_of):
    """12 shapes alike (features cannot tell them apart), the paper's tile P at 1 s, other tiles as times_of(i)."""
    return [Solved((1000, 1000, 1000), {P: 1.0, **times_of(i)}, 1.0, P) for i in range(12)]


def test_a_tile_that_lost_in_cross_validation_is_not_trusted_and_the_next_best_trusted_one_is_chosen():
    # B is faster on average (geometric mean 0.77 s) but 20% slower than P on half of the shapes; A is 0.8 s
    sel = fit(_solved(lambda i: {A: 0.8, B: 0.5 if i % 2 else 1.2}), "atlas-300t-a2", RANGES, MACHINE)
    assert sel.tiles == tuple(sorted((P, A, B)))
    trusted = sel.trusted["256x128x128"]
    assert set(trusted) == {"128x128x128"} and trusted["128x128x128"] == [12, 0.8]
    y = sel.predict(1000, 1000, 1000, P)
    assert y[sel.tiles.index(B)] < y[sel.tiles.index(A)] < -MARGIN  # B ranks first, A is past the margin
    tile, trace, source = sel.select(1000, 1000, 1000, P)
    assert (tile, source) == (A, "learned")
    assert trace[0] == "M, N, K within the training ranges (M 1 to 16384, N 256 to 32768, K 256 to 32768)"
    assert trace[1].startswith("predicted fastest of 3 tiles: 128x256x64")
    assert trace[2].startswith("tile 128x128x128: predicted ") and trace[2].endswith(
        "trusted (predicted faster on 12 held-back training shapes, never more than 1% slower; worst case "
        "1.250x the paper's tile)")
    assert LearnedSelector.from_dict(json.loads(json.dumps(sel.to_dict()))) == sel


def test_a_gain_under_the_margin_keeps_the_paper_tile_and_so_do_shapes_outside_the_ranges():
    sel = fit(_solved(lambda i: {A: 0.98}), "atlas-300t-a2", RANGES, MACHINE)
    assert sel.trusted == {"256x128x128": {"128x128x128": [12, 0.98]}}
    tile, trace, source = sel.select(1000, 1000, 1000, P)
    assert (tile, source) == (P, "paper")
    assert trace[-1].startswith("the best trusted tile, 128x128x128, is predicted ")
    assert trace[-1].endswith(f"under the {math.exp(MARGIN):.3f}x margin; the paper's rule: 256x128x128")
    tile, trace, source = sel.select(500, 65536, 5000, P)
    assert (tile, source) == (P, "paper")
    assert trace == ["outside the training ranges: N = 65536 (trained on 256 to 32768); the paper's rule: "
                     "256x128x128"]
    tile, trace, source = sel.select(500, 1000, 5000, (16, 16, 16))  # a paper's tile the model does not rank
    assert (tile, source) == ((16, 16, 16), "paper")
    assert trace[-1] == "the model does not rank the paper's tile; the paper's rule: 16x16x16"
    none = fit(_solved(lambda i: {A: 1.5}), "atlas-300t-a2", RANGES, MACHINE)  # A is never predicted faster
    assert none.trusted == {}
    assert none.select(1000, 1000, 1000, P)[1][-1] == ("no tile is trusted over the paper's 256x128x128 "
                                                       "(cross-validation on the training shapes); the paper's "
                                                       "rule: 256x128x128")
    assert np.all(none.predict(1000, 1000, 1000, P)[[none.tiles.index(A)]] > 0)


def test_bad_selector_files_and_missing_hardware_are_clear_errors(tmp_path):
    bad = tmp_path / "s.json"
    bad.write_text('{"kind": "something else"}')
    with pytest.raises(SelectorError, match="not a learned tile selector"):
        load_selector("atlas-300t-a2", bad)
    old = tmp_path / "old.json"  # the table of buckets (format 2)
    old.write_text(json.dumps({"kind": "learned-tile-selector", "format": 2, "hardware": "x",
                               "thresholds": {"m": [1, 2], "n": [3], "k": [4]}, "table": {}}))
    with pytest.raises(SelectorError, match="not a learned tile selector of this version"):
        load_selector("atlas-300t-a2", old)
    with pytest.raises(SelectorError, match="no learned selector for 'nope'"):
        load_selector("nope")
    with pytest.raises(SelectorError, match="no solved shapes"):
        fit([], "atlas-300t-a2", RANGES, MACHINE)
    with pytest.raises(SelectorError, match="the paper's tile does not run on every training shape"):
        fit([Solved((1000, 1000, 1000), {A: 1.0}, 1.0, P)], "atlas-300t-a2", RANGES, MACHINE)


def test_the_shipped_selector_is_printed_with_its_trace():
    shipped = load_selector("atlas-300t-a2")
    assert shipped.trained_on["made_by"] == "benchmarks/learn_selector.py"
    assert shipped.trained_on["held_out"]["random"]["shapes"] > 0
    assert shipped.trained_on["held_out"]["llm"]["shapes"] == 20
    runner = CliRunner()
    for m, n, k in ((3000, 700, 9000), (16, 1024, 8192), (1, 65536, 4096)):
        out = runner.invoke(app, ["hgemm", "select", "--m", str(m), "--n", str(n), "--k", str(k), "--selector",
                                  "learned", "--json"])
        assert out.exit_code == 0, out.output
        doc = json.loads(out.stdout)
        paper = json.loads(runner.invoke(app, ["hgemm", "select", "--m", str(m), "--n", str(n), "--k", str(k),
                                               "--json"]).stdout)
        tile, trace, source = shipped.select(m, n, k, (paper["m0"], paper["n0"], paper["k0"]))
        assert doc["tile"] == list(tile) and doc["trace"] == trace and doc["source"] == source
        text = runner.invoke(app, ["hgemm", "select", "--m", str(m), "--n", str(n), "--k", str(k), "--selector",
                                   "learned"])
        assert text.exit_code == 0 and f"M0xN0xK0 = {tile[0]}x{tile[1]}x{tile[2]} (source: {source})" in text.output
    assert source == "paper"  # N = 65536 is past the training range
    # a Llama 2 70B K/V projection at M = 128: the model's pick, 1.59x the paper's tile on the timing model
    tile, trace, source = shipped.select(128, 1024, 8192, (128, 128, 256))
    assert (tile, source) == ((64, 128, 256), "learned") and trace[-1].startswith("tile 64x128x256: predicted ")
    bad = runner.invoke(app, ["hgemm", "select", "--m", "3", "--n", "7", "--k", "9", "--selector", "mine"])
    assert bad.exit_code == 2 and "--selector: must be one of paper, learned, got 'mine'" in bad.output
