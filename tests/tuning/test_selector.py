"""The learned tile selector: fitted exactly as documented, falling back to the paper's rule where it has no
evidence, readable, shipped, and printed with its trace."""

import json
import math

import pytest
from typer.testing import CliRunner

from ascendbench.cli import app
from ascendbench.tuning.selector import MARGIN, LearnedSelector, SelectorError, Solved, fit, load_selector

A, B, C = (128, 128, 64), (128, 256, 64), (64, 64, 128)
RANGES = [(1, 16384), (256, 32768), (256, 32768)]


def test_fit_picks_the_tile_of_least_regret_among_those_never_much_slower_than_the_paper():
    small, large = (10, 1000, 1000), (9000, 9000, 9000)
    solved = [
        Solved(small, {A: 1.0, B: 1.1, C: 2.0}, paper=1.2),
        Solved(small, {A: 1.3, B: 1.0, C: 2.0}, paper=1.2),  # A is 8% slower than the paper's here: no candidate
        Solved(large, {A: 1.0, B: 3.0}, paper=1.0),  # C cannot run here
        Solved(large, {A: 2.0, B: 1.0, C: 0.5}, paper=1.0),  # A slower than the paper's by 100%: B? 3.0 > 1.0
    ]
    sel = fit(solved, "atlas-300t-a2", RANGES)
    # two shapes: the quantile cut points of M (3 levels) and the medians of N and K
    assert len(sel.thresholds[0]) == 2 and len(sel.thresholds[1]) == len(sel.thresholds[2]) == 1
    small_key, large_key = sel.bucket(*small), sel.bucket(*large)
    assert small_key != large_key
    entry = sel.table[small_key]
    # B runs on both, is never slower than the paper's tile (1.1 <= 1.2, 1.0 <= 1.2): least log regret
    assert entry["tile"] == list(B) and entry["shapes"] == 2
    assert entry["mean_regret"] == pytest.approx((0.1 + 0.0) / 2)
    assert entry["gain_over_paper"] == pytest.approx(math.exp((math.log(1.2 / 1.1) + math.log(1.2)) / 2))
    # large: A is 2x slower than the paper's tile on one shape, B 3x on the other: the paper's rule
    assert sel.table[large_key]["tile"] == "paper"
    assert sel.table[large_key]["gain_over_paper"] == pytest.approx(1.0)


def test_a_tile_no_better_than_the_paper_in_total_is_not_chosen():
    shape = (100, 1000, 1000)
    # A is within MARGIN of the paper's tile on both shapes but slower in total: the paper's rule stays
    solved = [Solved(shape, {A: 1.0 + MARGIN / 2}, paper=1.0), Solved(shape, {A: 1.0}, paper=1.0 + MARGIN / 4)]
    sel = fit(solved, "atlas-300t-a2", RANGES)
    assert sel.table[sel.bucket(*shape)]["tile"] == "paper"


def test_select_uses_the_paper_rule_outside_the_training_ranges_and_where_the_table_says_so():
    sel = LearnedSelector("atlas-300t-a2", ((100, 1000), (4096,), (4096,)),
                          {"m1n0k1": {"tile": list(B), "shapes": 3, "mean_regret": 0.02, "gain_over_paper": 1.04},
                           "m2n1k1": {"tile": "paper", "shapes": 5, "mean_regret": 0.03, "gain_over_paper": 1.0}},
                          tuple(RANGES))
    paper = (256, 128, 128)
    tile, trace, source = sel.select(500, 1000, 5000, paper)
    assert (tile, source) == (B, "learned")
    assert trace[:3] == ["M = 500: level 1 of 3 (100 <= M < 1000)", "N = 1000: level 0 of 2 (N < 4096)",
                         "K = 5000: level 1 of 2 (4096 <= K)"]
    assert "bucket m1n0k1: tile 128x256x64" in trace[3] and "1.040x the paper's tile" in trace[3]
    tile, trace, source = sel.select(2000, 5000, 5000, paper)
    assert (tile, source) == (paper, "paper") and "no tile beat the paper's rule" in trace[-1]
    tile, trace, source = sel.select(1, 300, 300, paper)  # bucket m0n0k0: no training shape
    assert (tile, source) == (paper, "paper") and "no training shape" in trace[-1]
    tile, trace, source = sel.select(500, 65536, 5000, paper)
    assert (tile, source) == (paper, "paper")
    assert trace == ["outside the training ranges: N = 65536 (trained on 256 to 32768); the paper's rule: "
                     "256x128x128"]
    assert LearnedSelector.from_dict(json.loads(json.dumps(sel.to_dict()))) == sel


def test_bad_selector_files_and_missing_hardware_are_clear_errors(tmp_path):
    bad = tmp_path / "s.json"
    bad.write_text('{"kind": "something else"}')
    with pytest.raises(SelectorError, match="not a learned tile selector"):
        load_selector("atlas-300t-a2", bad)
    old = tmp_path / "old.json"  # the first format (no ranges, one threshold per dimension)
    old.write_text(json.dumps({"kind": "learned-tile-selector", "hardware": "x", "thresholds": [1, 2, 3],
                               "table": {}, "default": [16, 16, 16]}))
    with pytest.raises(SelectorError, match="not a learned tile selector of this version"):
        load_selector("atlas-300t-a2", old)
    with pytest.raises(SelectorError, match="no learned selector for 'nope'"):
        load_selector("nope")
    with pytest.raises(SelectorError, match="no solved shapes"):
        fit([], "atlas-300t-a2", RANGES)


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
    bad = runner.invoke(app, ["hgemm", "select", "--m", "3", "--n", "7", "--k", "9", "--selector", "mine"])
    assert bad.exit_code == 2 and "--selector: must be one of paper, learned, got 'mine'" in bad.output
