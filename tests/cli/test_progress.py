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
