"""Tables at a narrow terminal: key columns whole, long text wrapped between words, never inside one."""

import io

from rich.console import Console
from rich.table import Table

from ascendbench.commands import common


def _render(table: Table, width: int) -> str:
    console = Console(width=width, file=io.StringIO(), color_system=None)
    console.print(table)
    return console.file.getvalue()


def test_long_text_wraps_between_words_only_where_the_words_fit(monkeypatch):
    monkeypatch.setattr(common, "out_console", Console(width=80, file=io.StringIO()))
    table = Table()
    for header in ("problem", "feasible", "optimum", "time", "best's rank", "regret", "heuristic's rank"):
        table.add_column(header)
    table.add_row("2048x128x2048", "11392 of 16384", "128x192x128 no padding split_k=2 shuffle_k", "13.2 µs",
                  "1 of 11392", "0.0%", "93 of 11392")
    text = _render(common.whole_keys(table, "problem"), 80)
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "2048x128x2048" in text and "128x192x128" in text and "split_k=2" in text, text


def test_words_longer_than_the_room_left_still_fold(monkeypatch):
    monkeypatch.setattr(common, "out_console", Console(width=40, file=io.StringIO()))
    table = Table()
    table.add_column("key")
    table.add_column("text")
    table.add_row("k", "z" * 60)
    text = _render(common.whole_keys(table, "key"), 40)
    assert max(len(line) for line in text.splitlines()) <= 40
    assert text.count("z") == 60  # folded onto more lines, nothing cut
