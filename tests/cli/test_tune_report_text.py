"""The tune report's text: the result table's rank among the study's configurations and the exhaustive check's
rank in the whole grid, told apart by their headers and a legend; an automatic whole grid announced."""

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


def test_an_automatic_whole_grid_is_announced_before_the_wait(tmp_path, cli, monkeypatch):
    from ascendbench.tuning import study

    space = tmp_path / "tiny.toml"
    space.write_text(TINY)
    # the automatic decision of a large grid (a timed sample under a minute), faked on the 4-point space
    monkeypatch.setattr(study, "_exhaustive_wanted", lambda *a, **k: (True, None, 41.6))
    out = cli(["tune", "scan", "--n", "1e6", "--space", str(space), "--trials", "2", "--no-save"], tmp_path)
    assert out.exit_code == 0, out.output
    said = " ".join(out.output.split())  # the note wraps at the terminal's width
    cores = max(1, study.usable_cores())  # grid_processes with --jobs 1
    assert (f"n=1000000 fp16 inclusive: whole grid, 4 points, about 42 s if {cores} cores are free: "
            + tune._GRID_NOTE) in said
    assert said.count("about 42 s if") == 1
    # --json: nothing but the document (a new storage folder: the grid is evaluated again there)
    quiet = cli(["tune", "scan", "--n", "1e6", "--space", str(space), "--trials", "2", "--no-save", "--json",
                 "--storage", "other/s.journal"], tmp_path)
    assert quiet.exit_code == 0 and "about 42 s" not in quiet.output
    assert json.loads(quiet.stdout)["problems"][0]["exhaustive"]["source"] == "evaluated"
