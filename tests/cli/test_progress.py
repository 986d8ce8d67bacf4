"""The progress bar of the long commands: rich's transient bar on a terminal, nothing at all otherwise."""

import contextlib
import io

from rich.console import Console

from ascendbench.commands import common


def test_without_a_terminal_or_with_json_there_is_no_bar_and_the_callback_does_nothing(monkeypatch):
    monkeypatch.setattr(common, "err_console", Console(file=io.StringIO(), force_terminal=False))
    for json_out in (False, True):
        progress, report = common.progress_bar(json_out)
        assert isinstance(progress, contextlib.nullcontext)
        with progress:
            assert report("simulating", 3, 10) is None


def test_on_a_terminal_the_bar_follows_the_callback(monkeypatch):
    from rich.progress import Progress

    out = io.StringIO()
    monkeypatch.setattr(common, "err_console", Console(file=out, force_terminal=True, width=80))
    progress, report = common.progress_bar(False)
    assert isinstance(progress, Progress)
    with progress:
        report("phase I", 3, 10)
        task = progress.tasks[0]
        assert (task.description, task.completed, task.total) == ("phase I", 3, 10)
    progress, report = common.progress_bar(True)  # --json: no bar, even on a terminal
    assert isinstance(progress, contextlib.nullcontext)


def _terminal(monkeypatch, clock):
    """stderr as a terminal whose clock reads clock[0] seconds (rich's Progress takes its console's clock)."""
    console = Console(file=io.StringIO(), force_terminal=True, width=120, get_time=lambda: clock[0])
    monkeypatch.setattr(common, "err_console", console)


def _line(progress) -> str:
    """The progress display's line of its first task, as a terminal shows it."""
    out = Console(file=io.StringIO(), width=120, record=True)
    out.print(progress.make_tasks_table(progress.tasks[:1]))
    return out.export_text().strip()


def test_every_bar_has_the_elapsed_time_and_the_time_left_columns(monkeypatch):
    from rich.progress import MofNCompleteColumn, TaskProgressColumn, TimeElapsedColumn, TimeRemainingColumn

    from ascendbench.commands.eta import EtaColumn

    _terminal(monkeypatch, [0.0])
    for middle, kinds in (((), [TaskProgressColumn]), ((MofNCompleteColumn(),), [MofNCompleteColumn])):
        progress = common.new_progress(*middle, json_out=False)
        assert [type(c) for c in progress.columns[2:]] == [*kinds, TimeElapsedColumn, EtaColumn]
        assert not progress.disable and not any(isinstance(c, TimeRemainingColumn) for c in progress.columns)
    assert common.new_progress(json_out=True).disable


def test_seconds_left_is_the_rest_at_the_mean_rate_or_the_deadline_when_sooner():
    from ascendbench.commands.eta import clock, seconds_left

    assert seconds_left(2.0, 0, 12.0, 25, 100) == 30.0  # 25 units in 10 s: 75 more take 30 s
    assert seconds_left(2.0, 0, 12.0, 25, 100, deadline_s=20.0) == 8.0  # a --timeout ends it first
    assert seconds_left(2.0, 0, 12.0, 25, 100, deadline_s=60.0) == 30.0
    assert seconds_left(2.0, 5, 12.0, 5, 100) is None  # nothing done in this stretch yet, no deadline
    assert seconds_left(2.0, 5, 12.0, 5, 100, deadline_s=70.0) == 58.0
    assert seconds_left(0.0, 0, 10.0, 120, 100) == 0.0  # past the total (a search ending a trial above it)
    assert [clock(s) for s in (0.0, 0.2, 59.5, 3723.0)] == ["0:00:00", "0:00:01", "0:01:00", "1:02:03"]


def test_the_bar_shows_the_time_left_once_the_amount_of_work_is_known(monkeypatch):
    clock = [0.0]
    _terminal(monkeypatch, clock)
    progress, report = common.progress_bar(False)
    clock[0] = 2.0
    line = _line(progress)  # no report yet: the amount is not known, the elapsed time only
    assert "0:00:02" in line and "ETA" not in line
    report("scanning", 0, 100)
    assert "ETA -:--:--" in _line(progress)  # known amount, no rate yet
    clock[0] = 12.0
    report("scanning", 25, 100)
    line = _line(progress)
    assert "25%" in line and "0:00:12" in line and "ETA 0:00:30" in line
    clock[0] = 20.0
    report("verifying", 10, 100)  # done went back: a new stretch, timed from here
    assert "ETA -:--:--" in _line(progress)
    clock[0] = 24.0
    report("verifying", 30, 100)  # 20 units in 4 s
    assert "ETA 0:00:14" in _line(progress)
    report("verifying", 100, 100)
    assert "ETA" not in _line(progress)  # finished


def test_a_time_limit_bounds_the_time_left(monkeypatch):
    clock = [0.0]
    _terminal(monkeypatch, clock)
    progress = common.new_progress(json_out=False)
    task = progress.add_task("search", total=100)
    common.show_progress(progress, task, "search", 0, 100, limit_s=60.0)
    assert "ETA 0:01:00" in _line(progress)  # no rate yet: the limit
    clock[0] = 10.0
    common.show_progress(progress, task, "search", 50, 100, limit_s=60.0)
    assert "ETA 0:00:10" in _line(progress)  # the rate says 10 s, the limit 50 s
    clock[0] = 40.0
    common.show_progress(progress, task, "search", 55, 100, limit_s=60.0)
    assert "ETA 0:00:20" in _line(progress)  # the rate says 98 s; the limit ends it in 20 s
    common.show_progress(progress, task, "grid", 0, 16)  # a new total: a new stretch, without the limit
    assert "ETA -:--:--" in _line(progress)


def test_tune_times_each_seeds_search_apart_from_the_grid_and_bounds_the_search_by_timeout(
        tmp_path, cli, monkeypatch):
    from ascendbench.commands import tune

    space = tmp_path / "tiny.toml"  # 4 points: a search of 3 trials, then the whole grid
    space.write_text('kernel = "scan"\n[parameters.algorithm]\ntype = "categorical"\nchoices = ["mcscan"]\n'
                     'default = "mcscan"\n[parameters.s]\ntype = "categorical"\nchoices = [64, 128]\ndefault = 128\n'
                     '[parameters.blocks]\ntype = "int"\nlow = 10\nhigh = 20\nstep = 10\ndefault = 20\n'
                     '[parameters.chunk]\ntype = "categorical"\nchoices = ["off"]\ndefault = "off"\n')
    calls = []

    def shown(progress, task, stage, done, total, new_stretch=False, limit_s=None, **fields):
        calls.append((stage, total, new_stretch, limit_s))
        common.show_progress(progress, task, stage, done, total, new_stretch=new_stretch, limit_s=limit_s, **fields)

    monkeypatch.setattr(tune, "show_progress", shown)
    out = cli(["tune", "scan", "--n", "1e6", "--space", str(space), "--trials", "3", "--seeds", "2",
               "--timeout", "100", "--json", "--no-save"], tmp_path)
    assert out.exit_code == 0, out.output
    search, grid = "n=1000000 fp16 inclusive", "n=1000000 fp16 inclusive: whole grid"
    assert {(stage, total, limit) for stage, total, _, limit in calls} == {(search, 3, 100.0), (grid, 4, None)}
    # stretches: the first seed's search, the grid after it, the second seed's search (the grid is known then)
    assert [stage for stage, _, new, _ in calls if new] == [search, grid, search]
