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


def test_short_cells_stay_whole_beside_columns_wrapping_between_words(monkeypatch):
    # two rows of validate's table at 132 columns (its width when piped): every longest word fits, but rich's own
    # shrinking narrowed the widest columns below their longest word, widened them again and cut the table's
    # right edge ("holds" printed as "hol")
    monkeypatch.setattr(common, "out_console", Console(width=132, file=io.StringIO()))
    table = Table()
    for header in ("ID", "kind", "claim", "paper", "simulated", "ratio", "tolerance", "verdict"):
        table.add_column(header)
    table.add_row("S-9", "shape", "MCScanUL1 vs MCScan: phase I slightly longer, phase II much shorter",
                  "I: UL1 > MC; II: UL1 << MC", "I 1.00x, II 0.28x", "", "I in (1, 1.5)x, II at most 0.75x", "holds")
    table.add_row("G-9a M=512", "calibration", "OPT FFN (K=7168, N=28672), M=512: time (fits "
                  "l2_read_bytes_per_cycle)", "862.5", "862.5", "1.00", "±15%", "holds")
    text = _render(common.whole_keys(table, "ID"), 132)
    assert max(len(line) for line in text.splitlines()) <= 132
    assert text.count("holds") == 2 and "G-9a M=512" in text and "calibration" in text, text
    assert "l2_read_bytes_per_cycle" in text  # the longest word, whole


def test_headers_and_most_short_values_stay_whole_when_not_all_fit_on_one_line(monkeypatch):
    # tune scan's table at 132 columns: not every short value fits on one line beside the wrapped text; before,
    # all of them wrapped, "rank" broke into "ra" / "nk" and the speed-up was cut to "1."
    monkeypatch.setattr(common, "out_console", Console(width=132, file=io.StringIO()))
    table = Table()
    for header in ("problem", "trials", "best (tuned)", "time", "GB/s", "heuristic", "time", "rank", "speed-up"):
        table.add_column(header)
    table.add_row("n=134217728 int8 inclusive", "50 (+16 infeasible, 5 repeats)",
                  "mcscan s=128 blocks=34 chunk=1,048,576", "1,633.3 µs", "410.9",
                  "mcscan s=128 blocks=20 chunk=20,132,864", "2,243.3 µs", "21 of 51", "1.374x")
    text = _render(common.whole_keys(table, "problem"), 132)
    assert max(len(line) for line in text.splitlines()) <= 132
    for whole in ("rank", "speed-up", "1.374x", "1,633.3 µs", "chunk=20,132,864", "n=134217728 int8 inclusive"):
        assert whole in text, (whole, text)


def test_a_key_column_too_wide_to_leave_room_folds_like_the_others(monkeypatch):
    # results list with a 120-character path at 132 columns: kept whole, it squeezed the other columns away and
    # rich cut the path itself
    monkeypatch.setattr(common, "out_console", Console(width=132, file=io.StringIO()))
    path = "/data/" + "a-very-long-folder-name/" * 4 + "another-long-folder-name-for-the-layout/hg.json"
    table = Table()
    for header in ("created (UTC)", "kind", "kernel", "problems", "file"):
        table.add_column(header)
    table.add_row("2026-12-01 23:24", "hgemm", "hgemm", "1", path)
    text = _render(common.whole_keys(table, "file"), 132)
    assert max(len(line) for line in text.splitlines()) <= 132
    assert "2026-12-01 23:24" in text and "hgemm" in text and "problems" in text, text
    assert "".join(c for c in text if c not in "│ \n") .count("a-very-long-folder-name") == 4  # folded, whole


def test_format_time_uses_the_largest_unit_the_duration_reaches():
    from ascendbench.commands.common import format_time

    assert [format_time(t) for t in (None, 0.0, 7.2777e-6, 999.994e-6, 1.6333e-3, 2.5, 252.0, 5400.0, 129600.0)] \
        == ["-", "0.00 µs", "7.28 µs", "999.99 µs", "1.633 ms", "2.500 s", "4.2 min", "1.5 h", "1.5 days"]


def test_format_bytes_keeps_whole_binary_sizes_and_gives_others_in_decimal_units():
    from ascendbench.commands.common import format_bytes

    assert [format_bytes(b) for b in (0, 999, 2000, 4 * 2**24 + 128, 96 * 2**20, 2**30, 192e6, 3 * 2**40)] \
        == ["0 B", "999 B", "2 kB", "67.1 MB", "96 MiB", "1 GiB", "192 MB", "3 TiB"]


def test_dump_json_writes_non_finite_numbers_as_null_also_from_a_models_float_fields():
    import json

    from ascendbench.commands.common import dump_json
    from ascendbench.store.schema import Verification

    # model_dump(mode="json") keeps a float field's NaN (pydantic issue 11976): the writer turns it into null
    check = Verification(performed=True, passed=False, max_abs_error=float("nan"), max_rel_error=float("inf"))
    text = dump_json({"verification": check.model_dump(mode="json"), "rows": [float("-inf"), 1.5, "µs"]})
    assert json.loads(text) == {"verification": {"performed": True, "passed": False, "max_abs_error": None,
                                                 "max_rel_error": None, "tolerance": None},
                                "rows": [None, 1.5, "µs"]}
    assert "NaN" not in text and "Infinity" not in text


def test_a_long_key_column_gives_way_before_a_header_breaks(monkeypatch):
    # results list at 132 columns (its width when piped): the whole path left 4 columns for "problems", printed
    # one letter per line, and the date broke as "2026-1" / "2-04"
    monkeypatch.setattr(common, "out_console", Console(width=132, file=io.StringIO()))
    table = Table()
    for header in ("created (UTC)", "kind", "kernel", "ran", "problems", "hardware", "version", "file"):
        table.add_column(header)
    for ran, hardware, path in (("proposed", "atlas-300t-a2", "results/runs/hgemm/20261204T155033Z-81fd9c.json"),
                                ("mcscan-ul1", "ascend-910b4", "results/runs/mcscan-ul1/20261204T155032Z-766f19.json")):
        table.add_row("2026-12-04 15:50", "operator", "scan", ran, "1", hardware, "0.1.0", path)
    text = _render(common.whole_keys(table, "file"), 132)
    assert max(len(line) for line in text.splitlines()) <= 132
    words = [w for line in text.splitlines() for w in line.split()]
    for whole in ("created", "(UTC)", "kind", "kernel", "ran", "problems", "hardware", "version", "file",
                  "2026-12-04", "mcscan-ul1", "atlas-300t-a2"):
        assert whole in words, (whole, text)
    at = next(line for line in text.splitlines() if "problems" in line).index("file")
    column = "".join(line[at:].strip(" │└─┘") for line in text.splitlines()[4:])  # the file column's cells
    assert column == "results/runs/hgemm/20261204T155033Z-81fd9c.json" \
                     "results/runs/mcscan-ul1/20261204T155032Z-766f19.json", text  # folded, nothing cut


def test_a_key_column_of_names_does_not_give_way_for_a_header(monkeypatch):
    # hardware show at 132 columns: a source's 89-character path leaves no room for the header "value" beside
    # "3": the key column ("fixpipe_to_l1_bytes_per_cycle", a name, not a path) must not give way for it
    monkeypatch.setattr(common, "out_console", Console(width=132, file=io.StringIO()))
    table = Table()
    for header in ("constant", "value", "source"):
        table.add_column(header)
    table.add_row("fixpipe_to_l1_bytes_per_cycle", "128", "pypto cost model, "
                  "matmul/quant_batch_matmul_v4/op_host/op_tiling/quant_batch_matmul_v4_pergroup_tiling.cpp: 128")
    text = _render(common.whole_keys(table, "constant"), 132)
    assert max(len(line) for line in text.splitlines()) <= 132
    assert "fixpipe_to_l1_bytes_per_cycle" in text and "constant" in text, text
