"""The learned tile selector: fitted exactly as documented, readable, shipped, and printed with its trace."""

import json
import math

import pytest
from typer.testing import CliRunner

from ascendbench.cli import app
from ascendbench.tuning.selector import LearnedSelector, SelectorError, fit, load_selector

A, B, C = (128, 128, 64), (128, 256, 64), (64, 64, 128)


def test_fit_picks_the_tile_of_least_total_log_regret_per_bucket():
    solved = [
        ((1000, 1000, 1000), {A: 1.0, B: 1.1, C: 2.0}),
        ((1000, 1000, 1000), {A: 1.3, B: 1.0, C: 2.0}),   # same bucket: A total log regret 0.262, B 0.095
        ((9000, 9000, 9000), {A: 1.0, B: 3.0}),            # C cannot run here
        ((9000, 9000, 9000), {A: 2.0, B: 1.0, C: 0.5}),
    ]
    sel = fit(solved, "atlas-300t-a2")
    assert sel.thresholds == (5000, 5000, 5000)  # medians
    assert sel.table["sss"]["tile"] == list(B) and sel.table["sss"]["shapes"] == 2
    assert sel.table["sss"]["mean_regret"] == pytest.approx((0.1 + 0.0) / 2)
    # large: C never (cannot run on one shape); A: log(1/1) + log(2/0.5) = 1.386, B: log 3 + log 2 = 1.792
    assert sel.table["lll"]["tile"] == list(A)
    assert sel.table["lll"]["mean_regret"] == pytest.approx((0 + 2.0 / 0.5 - 1) / 2)
    # default over all four: A (0 + log 1.3 + 0 + log 4) vs B (log 1.1 + 0 + log 3 + log 2); C excluded
    assert math.log(1.3) + math.log(4) < math.log(1.1) + math.log(3) + math.log(2)
    assert sel.default == A


def test_select_gives_the_bucket_tile_and_a_readable_trace():
    sel = LearnedSelector("atlas-300t-a2", (5000, 5000, 5000),
                          {"lsl": {"tile": [128, 256, 64], "shapes": 3, "mean_regret": 0.02}}, (64, 64, 128))
    tile, trace = sel.select(6000, 100, 5000)
    assert tile == (128, 256, 64)
    assert trace[:3] == ["M = 6000 >= 5000: large", "N = 100 < 5000: small", "K = 5000 >= 5000: large"]
    assert "bucket lsl: tile 128x256x64" in trace[3] and "3 training shapes" in trace[3]
    tile, trace = sel.select(1, 1, 1)
    assert tile == (64, 64, 128) and "no training shape; default tile 64x64x128" in trace[-1]
    assert LearnedSelector.from_dict(json.loads(json.dumps(sel.to_dict()))) == sel


def test_bad_selector_files_and_missing_hardware_are_clear_errors(tmp_path):
    bad = tmp_path / "s.json"
    bad.write_text('{"kind": "something else"}')
    with pytest.raises(SelectorError, match="not a learned tile selector"):
        load_selector("atlas-300t-a2", bad)
    with pytest.raises(SelectorError, match="no learned selector for 'nope'"):
        load_selector("nope")
    with pytest.raises(SelectorError, match="no solved shapes"):
        fit([], "atlas-300t-a2")


def test_the_shipped_selector_is_printed_with_its_trace():
    shipped = load_selector("atlas-300t-a2")
    assert shipped.trained_on["made_by"] == "benchmarks/learn_selector.py"
    assert shipped.trained_on["held_out"]["shapes"] > 0
    runner = CliRunner()
    out = runner.invoke(app, ["hgemm", "select", "--m", "3000", "--n", "700", "--k", "9000", "--selector", "learned",
                              "--json"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    tile, trace = shipped.select(3000, 700, 9000)
    assert doc["tile"] == list(tile) and doc["trace"] == trace
    text = runner.invoke(app, ["hgemm", "select", "--m", "3000", "--n", "700", "--k", "9000", "--selector",
                               "learned"])
    assert text.exit_code == 0 and f"M0xN0xK0 = {tile[0]}x{tile[1]}x{tile[2]} (source: learned)" in text.output
    bad = runner.invoke(app, ["hgemm", "select", "--m", "3", "--n", "7", "--k", "9", "--selector", "mine"])
    assert bad.exit_code == 2 and "--selector: must be paper or learned" in bad.output
