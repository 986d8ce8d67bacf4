"""The tune report's two ranks: the result table's rank among the study's configurations and the exhaustive
check's rank in the whole grid, told apart by their headers and a legend."""

import io
import json

from rich.console import Console

from ascendbench.commands import common, tune

TINY = ('kernel = "scan"\n[parameters.algorithm]\ntype = "categorical"\nchoices = ["mcscan"]\n'
        'default = "mcscan"\n[parameters.s]\ntype = "categorical"\nchoices = [64, 128]\ndefault = 128\n'
        '[parameters.blocks]\ntype = "int"\nlow = 10\nhigh = 20\nstep = 10\ndefault = 20\n'
        '[parameters.chunk]\ntype = "categorical"\nchoices = ["off"]\ndefault = "off"\n')


def test_result_table_rank_is_the_studys_and_the_grid_ranks_say_grid(tmp_path, cli, monkeypatch):
    space = tmp_path / "tiny.toml"
    space.write_text(TINY)
    out = cli(["tune", "scan", "--n", "1e6", "--space", str(space), "--trials", "2", "--json", "--no-save"],
              tmp_path)
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    p = doc["problems"][0]
    heur, ex = p["heuristic"], p["exhaustive"]
    # 2 configurations evaluated, and the heuristic when the study did not evaluate it (its chunk is not in
    # this space), against the 4 of the grid: the two ranks are counted over different sets
    among = 2 + (heur["trial"] is None)
    assert p["trials"]["evaluated"] == 2 and heur["ranked_among"] == among and ex["feasible"] == 4
    wide = Console(width=400, file=io.StringIO(), color_system=None)  # every header on one line
    monkeypatch.setattr(tune, "out_console", wide)
    monkeypatch.setattr(common, "out_console", wide)
    tune._print(doc, None)
    text = tune.out_console.file.getvalue()
    header = next(line for line in text.splitlines() if "best (tuned)" in line)
    assert "rank in study" in header and "grid" not in header
    row = next(line for line in text.splitlines() if line.startswith("│") and "best (tuned)" not in line)
    assert f"{heur['rank']} of {among}" in row
    grid_header = next(line for line in text.splitlines() if "optimum" in line and "feasible" in line)
    assert "best's grid rank" in grid_header and "heuristic's grid rank" in grid_header
    assert tune._RANK_LEGEND in text
    assert tune._RANK_LEGEND.startswith("rank in study: the heuristic's place among the distinct feasible "
                                        "configurations the study evaluated")
