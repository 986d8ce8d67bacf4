"""Shared CLI pieces: consoles, one-line user errors, number parsing, result saving."""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import sys
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console

from ascendbench.hardware import list_profiles

__all__ = [
    "CountError",
    "HardwareOption",
    "JsonOption",
    "NoSaveOption",
    "TraceOption",
    "argparse_count",
    "choice_option",
    "complete_from",
    "clear_leftovers",
    "count_option",
    "default_result_path",
    "err_console",
    "fail",
    "format_bytes",
    "format_time",
    "out_console",
    "parse_count",
    "whole_keys",
    "write_error_code",
]

# Wide enough for the report when stdout is a file or a pipe (rich would wrap at 80 columns); a COLUMNS the
# user set wins, as it does on a terminal.
err_console = Console(stderr=True)
out_console = Console(width=None if sys.stdout.isatty() or os.environ.get("COLUMNS") else 132)

JsonOption = Annotated[bool, typer.Option("--json", help="Print only the JSON document on stdout (messages go to stderr).")]
NoSaveOption = Annotated[bool, typer.Option("--no-save", help="Do not write the result JSON.")]
TraceOption = Annotated[Path | None, typer.Option("--trace", help="Write the timeline as a Chrome trace JSON.")]


def fail(message: str, code: int = 2) -> NoReturn:
    """Print a one-line user error on stderr and exit with `code` (no traceback). A URL's password in the
    message (an option's value quoted back) is printed as *** (ascendbench.redact)."""
    from rich.markup import escape

    from ascendbench.redact import redact

    # Escaped: messages quote user input and hints such as "pip install 'ascendbench[gp]'", not markup.
    err_console.print(f"[bold red]error:[/] {escape(redact(message))}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


MAX_COUNT = 2**60
COUNT_FORMS = "1000000, 1_000_000, 1e6, 2**20 or 2**32+1"

# ASCII only: Python's \d and \s (and int(), float(), Decimal()) also take ١٠٠, １２ and U+3000, which README's
# forms do not include
_INT = r"[0-9]+(?:_[0-9]+)*"
# a term: 2**20, 1e6, 1.5e9, 1_000_000 (the exponent's sign is part of the term: 1e+6)
_TERM = rf"(?:{_INT}\s*\*\*\s*{_INT}|{_INT}(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?)"
_EXPR = re.compile(rf"{_TERM}(?:\s*[+-]\s*{_TERM})*", re.ASCII)
_SIGNED_TERM = re.compile(rf"([+-]?)\s*({_TERM})", re.ASCII)
_POWER = re.compile(rf"({_INT})\s*\*\*\s*({_INT})", re.ASCII)
_WHOLE = re.compile(_INT, re.ASCII)
_ASCII_SPACE = " \t\n\r\f\v"


class CountError(ValueError):
    """A count option's bad value: str() is the one-line message naming the option; `reason` leaves it out
    (argparse adds the option itself)."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"--{name}: {reason}")
        self.reason = reason


def parse_count(text: str | int, name: str) -> int:
    """A count from 0 to 2**60 written as 100000000, 100_000_000, 1e8, 1.5e9, 2**27, or a sum or difference of
    such terms (2**32+1, 2**31-1), in ASCII digits and spaces only (not ١٠٠ or １２); exact (a decimal term must
    be integral). An int passes through the same range check (typer hands option defaults over as ints). Raises
    CountError (a ValueError) naming --name."""
    if isinstance(text, int) and not isinstance(text, bool):
        if not 0 <= text <= MAX_COUNT:
            raise CountError(name, f"expected a non-negative integer up to 2**60, got {text}")
        return text
    raw = str(text).strip(_ASCII_SPACE)
    bad = CountError(name, f"expected a non-negative integer such as {COUNT_FORMS}, got {text!r}")
    large = CountError(name, f"too large, got {text!r} (no count option takes more than 2**60)")
    if not _EXPR.fullmatch(raw):
        raise bad
    total = 0
    for sign, term in _SIGNED_TERM.findall(raw):
        try:
            value = _term(term, large)
        except CountError:
            raise
        except (ValueError, InvalidOperation):  # not integral, int() of over 4300 digits
            raise bad from None
        total += -value if sign == "-" else value
    if total < 0:
        raise bad
    if total > MAX_COUNT:
        raise large
    return total


def _term(term: str, large: CountError) -> int:
    """One term's value; a term of 2**61 or more raises `large` before it is computed (no huge powers)."""
    if m := _POWER.fullmatch(term):
        base, exponent = int(m.group(1)), int(m.group(2))
        if base >= 2 and (base.bit_length() - 1) * exponent > 60:
            raise large
        return base**exponent if base >= 2 else base ** min(exponent, 1)
    if _WHOLE.fullmatch(term):
        return int(term)
    number = Decimal(term.replace("_", ""))
    if number.adjusted() > 19:
        raise large
    if number != number.to_integral_value():
        raise ValueError(term)
    return int(number)


def count_option(*flags: str, help: str, **kwargs):
    """A typer.Option for a count: parse_count's forms (1e6, 2**20, 2**32+1, ...); a bad value fails at parse
    time with parse_count's one-line message naming flags[0] (exit 2)."""
    name = flags[0].lstrip("-")

    def parse(value) -> int:
        try:
            return parse_count(value, name)
        except CountError as exc:
            fail(str(exc))

    kwargs.setdefault("metavar", "<count>")
    return typer.Option(*flags, parser=parse, help=help, **kwargs)


def complete_from(choices, separator: str | None = None):
    """A shell-completion function (typer's `autocompletion`) offering `choices` (a sequence, or a function
    returning one) that start with what was typed; with a separator (--only S-4,G-1), the part after its last
    one."""
    def complete(incomplete: str) -> list[str]:
        head, sep, word = incomplete.rpartition(separator) if separator else ("", "", incomplete)
        values = choices() if callable(choices) else choices
        return [head + sep + str(c) for c in values if str(c).startswith(word)]

    return complete


def choice_option(*flags: str, choices, help: str, closed: bool = True, **kwargs):
    """A typer.Option whose value is one of `choices` (a sequence, or a function returning one, called when the
    values are needed): --help shows them (as the metavar when short, else in the help text), shell completion
    offers them, and a value outside them fails at parse time in one line naming flags[0] and what is allowed
    (exit 2), as the kernels' models word it. Integer choices (tile sides) are counts (count_option: 2**7 works,
    metavar <count>); a list option (repeated) has each value checked. closed=False: completion and help only,
    for an option that also takes other values (--hardware: a .toml path) or whose own check says more
    (--workload: did you mean)."""
    def allowed() -> tuple:
        return tuple(choices() if callable(choices) else choices)

    def check(ctx, param, value):
        if value is None:  # typer 0.16 hands a repeated option's () as None, and converts what we return again
            return () if getattr(param, "multiple", False) else None
        if not closed or ctx.resilient_parsing:  # resilient: shell completion is parsing
            return value
        good = allowed()
        for item in value if isinstance(value, (list, tuple)) else (value,):
            if item not in good:
                fail(f"{flags[0]}: must be one of {', '.join(map(str, good))}, got {item!r}")
        return value

    ints = not callable(choices) and bool(choices) and all(isinstance(c, int) for c in choices)
    if not callable(choices):
        metavar = "[" + "|".join(map(str, choices)) + "]"
        wide = ints or len(metavar) > 24  # too wide for the type column: the help text lists them
        if wide and not all(str(c) in help for c in choices):
            help = f"{help.rstrip('.')}: {', '.join(map(str, choices))}."
        if not ints:
            kwargs.setdefault("metavar", f"<{flags[0].lstrip('-')}>" if wide else metavar)
    make = count_option if ints else typer.Option
    return make(*flags, help=help, callback=check, autocompletion=complete_from(choices), **kwargs)


HardwareOption = Annotated[str, choice_option(
    "--hardware", choices=list_profiles, closed=False, metavar="<profile>",
    help="Hardware profile: a shipped name (" + ", ".join(list_profiles()) + ") or a .toml path.")]


def argparse_count(name: str):
    """parse_count as an argparse `type=` (the benchmark scripts): argparse names the option in its message."""
    import argparse

    def parse(text: str) -> int:
        try:
            return parse_count(text, name)
        except CountError as exc:
            raise argparse.ArgumentTypeError(exc.reason) from None

    parse.__name__ = "count"
    return parse


def default_result_path(kind: str, kernel: str) -> Path:
    """results/<kind>/<kernel>/<UTC timestamp>-<short id>.json under the current folder."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return Path("results") / kind / kernel / f"{stamp}-{secrets.token_hex(3)}.json"


def dump_json(doc) -> str:
    """`doc` (plain data, as model_dump(mode="json") gives it) as the JSON text every result file and --json
    output is written as, in UTF-8: JSON has no inf or NaN, so non-finite numbers are null as pydantic's
    `ser_json_inf_nan="null"` writes them (the verdict fields say what failed), and a URL's password in any
    string is *** (ascendbench.redact.redact_tree; the command and storage fields are masked already, this
    guards every other field)."""
    from pydantic_core import to_json

    from ascendbench.redact import redact_tree

    return to_json(redact_tree(doc), indent=2, inf_nan_mode="null").decode()


def check_target(path: Path | None, option: str, suffix: str, taken: dict[Path, str]) -> None:
    """Refuse an output path that cannot be written whole: wrong suffix, a missing or unwritable folder, a
    directory or special file in the way, or a path another option (or the input) already uses."""
    if path is None:
        return
    if path.suffix != suffix:
        fail(f"--{option}: must end in {suffix}, got {str(path)!r}")
    parent = path.parent if str(path.parent) else Path(".")
    try:
        if not parent.is_dir():
            fail(f"--{option}: {str(parent)!r} is not a folder" if parent.exists()
                 else f"--{option}: folder {str(parent)!r} does not exist")
        if not os.access(parent, os.W_OK):
            fail(f"--{option}: folder {str(parent)!r} is not writable")
        _probe_folder(parent, option)
        clear_leftovers(parent)  # before the work: a run's disk-space check counts the space they held
        if len(os.fsencode(path.name)) > os.pathconf(parent, "PC_NAME_MAX"):
            fail(f"--{option}: file name too long: {str(path)!r}")
        if path.exists() and not path.is_file():
            fail(f"--{option}: {str(path)!r} exists and is not a regular file")
        key = path.resolve()
    except OSError as exc:
        fail(f"--{option}: cannot use {str(path)!r}: {exc.strerror or exc}")
    if key in taken:
        fail(f"--{option}: {str(path)!r} is also {taken[key]}")
    taken[key] = f"the --{option} file"


def _probe_folder(folder: Path, option: str) -> None:
    """Create and remove a hidden file in `folder`: os.access says yes to root on /proc and /sys, whose files
    cannot be created (the later disk-space check would then report "0.0 GB free")."""
    import tempfile

    from ascendbench.store.io import staging_prefix

    try:  # named as staging files are: one left by a kill right here is removed by a later run
        fd, probe = tempfile.mkstemp(prefix=staging_prefix(), dir=folder)
    except OSError as exc:
        fail(f"--{option}: cannot create files in folder {str(folder)!r} ({exc.strerror or exc}); give a path on a "
             "writable filesystem")
    os.close(fd)
    os.unlink(probe)


def clear_leftovers(folder: Path) -> list[tuple[Path, int]]:
    """Remove the hidden staging and partial files in `folder` left by runs that were killed (their writer no
    longer runs; store.io.remove_leftovers says which files count) and say so in one line on stderr.

    Returns:
        (path, size in bytes) of each removed file.
    """
    from ascendbench.store.io import remove_leftovers

    removed = remove_leftovers(folder)
    if removed:
        names = ", ".join(path.name for path, _ in removed[:3]) + (f" and {len(removed) - 3} more"
                                                                    if len(removed) > 3 else "")
        many = len(removed) > 1
        err_console.print(f"note: removed {len(removed)} file{'s' if many else ''} left in {str(folder)!r} by "
                          f"{'runs that were' if many else 'a run that was'} killed "
                          f"({format_bytes(sum(size for _, size in removed))}): {names}",
                          highlight=False, soft_wrap=True, markup=False)
    return removed


# A write that failed for want of room or of a working device: the input was fine, the run failed (exit 1)
_RESOURCE_ERRNOS = frozenset(getattr(errno, name) for name in ("ENOSPC", "EFBIG", "EDQUOT", "EIO")
                             if hasattr(errno, name))


def write_error_code(exc: OSError) -> int:
    """The exit code of a failed write of an output file: 1 when the disk is full, a file-size limit or quota
    is met or the device fails (ENOSPC, EFBIG, EDQUOT, EIO: nothing wrong with the command), 2 otherwise (a
    path the user gave that cannot be written: EACCES, ENOENT, EROFS, ENOTDIR, ...)."""
    return 1 if exc.errno in _RESOURCE_ERRNOS else 2


class Outputs:
    """Writes a run's files all or nothing, as a context manager: each file is first written to a hidden
    staging file beside its target; when the block ends without error, the staged files are renamed over
    their targets. If a write fails (or the run is interrupted), the staged files are removed and the targets,
    including files of an earlier run, are left as they were; the error names the option (exit 1 on a full
    disk or a file-size limit, 2 on a path that cannot be written: write_error_code)."""

    def __init__(self) -> None:
        self.staged: list[tuple[Path, Path]] = []  # (staging file, target)

    def __enter__(self) -> Outputs:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.rollback()

    def write(self, option: str, path: Path, writer) -> None:
        # A short hidden name (the target's suffix kept: np.save appends .npy otherwise) that fits any folder.
        from ascendbench.store.io import staging_prefix

        clear_leftovers(path.parent)  # those of killed runs, in every folder a command writes to
        stage = path.with_name(f"{staging_prefix()}{secrets.token_hex(4)}{path.suffix}")
        try:
            writer(stage)
        except OSError as exc:
            _unlink(stage)
            self.rollback()
            fail(f"--{option}: cannot write {str(path)!r}: {exc.strerror or exc}", code=write_error_code(exc))
        except BaseException:
            _unlink(stage)
            self.rollback()
            raise
        self.staged.append((stage, path))

    def write_figure(self, path: Path, writer) -> None:
        """Write a figure (writer(staging path) saves it) as one of this run's files (option --out-dir)."""
        self.write("out-dir", path, writer)

    def write_json(self, option: str, path: Path, doc) -> None:
        """Write a result document (dump_json, atomically) as one of this run's files."""
        from ascendbench.store.io import atomic_write_text

        self.write(option, path, lambda target: atomic_write_text(target, dump_json(doc) + "\n"))

    def commit(self) -> None:
        """Rename every staged file over its target (each rename is atomic)."""
        while self.staged:
            stage, path = self.staged[0]
            try:
                os.replace(stage, path)
            except OSError as exc:
                self.rollback()
                fail(f"cannot write {str(path)!r}: {exc.strerror or exc}", code=write_error_code(exc))
            self.staged.pop(0)

    def rollback(self) -> None:
        for stage, _ in self.staged:
            _unlink(stage)
        self.staged.clear()


def _unlink(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass


def refuse_input_with_model_only(input_file: Path | None, model_only: bool) -> None:
    """Fails (exit 2) on an --input with --model-only, before the file is read, as ascendbench.run refuses
    arrays with model_only: a model-only run reads no data."""
    if input_file is not None and model_only:
        from ascendbench.kernels.base import NO_DATA_WITH_MODEL_ONLY

        fail(f"--input: {NO_DATA_WITH_MODEL_ONLY}")


def check_files(input_file, output_file, trace, out, no_save: bool, model_only: bool,
                output_suffix: str = ".npy") -> None:
    """Checks of a run command's files before any work: the input exists and does not come with --model-only,
    the output paths are writable, distinct from the input and have the right suffix (the --output-file's is
    `output_suffix`)."""
    if output_file is not None and model_only:
        fail("--output-file: there is no output with --model-only; drop one of them")
    refuse_input_with_model_only(input_file, model_only)
    if input_file is not None and not input_file.exists():
        fail(f"--input: file not found: {input_file}")
    if out is not None and no_save:
        fail("--out: cannot be combined with --no-save")
    taken = {input_file.resolve(): "the --input file"} if input_file is not None else {}
    check_target(output_file, "output-file", output_suffix, taken)
    check_target(trace, "trace", ".json", taken)
    check_target(out, "out", ".json", taken)

def command_line() -> list[str]:
    """This command as result documents record it and messages print it: ["ascendbench", arguments...], each
    argument's URL passwords as *** (``--storage postgresql://user:***@host/db``, ``--storage=...`` too)."""
    from ascendbench.redact import mask_url

    return ["ascendbench", *(mask_url(arg) for arg in sys.argv[1:])]


def resume_hint() -> str:
    """"resume with: <this command>" for a message, with where the password goes when command_line() masked
    one (the printed command holds *** in its place)."""
    import shlex

    command = command_line()
    masked = command[1:] != sys.argv[1:]
    return f"resume with: {shlex.join(command)}" + (" (with the password in place of ***)" if masked else "")


def new_progress(*middle: Any, json_out: bool):
    """The progress display of every long command: a transient rich Progress on stderr, disabled with --json or
    when stderr is not a terminal. Columns: the task's description, a bar, `middle` (rich columns; default the
    percentage), the elapsed time and the time left (eta.EtaColumn: shown only for a task whose total is
    known). Update its tasks with show_progress, which keeps what the time left is counted from."""
    from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn

    from ascendbench.commands.eta import EtaColumn

    return Progress(TextColumn("{task.description}"), BarColumn(), *(middle or (TaskProgressColumn(),)),
                    TimeElapsedColumn(), EtaColumn(), console=err_console, transient=True,
                    disable=json_out or not err_console.is_terminal)


def show_progress(progress, task, stage: str, done: int, total: int | None, *, new_stretch: bool = False,
                  limit_s: float | None = None, **fields: Any) -> None:
    """Show `done` of `total` units (None: not known, no time left shown; 0 is shown as 1) under the
    description `stage` on task `task` of a new_progress display; `fields`: the task's other fields. The time
    left is counted at the mean rate of the current stretch of work, which begins at the first report, when
    the total changes, when `done` goes back (another seed, another phase of the same task) or when
    `new_stretch` says so; `limit_s`, seconds, bounds a stretch that a time limit ends (given with its first
    report)."""
    from ascendbench.commands.eta import DEADLINE, FROM

    total = None if total is None else (total or 1)
    shown = next(t for t in progress.tasks if t.id == task)
    if new_stretch or FROM not in shown.fields or total != shown.total or done < shown.completed:
        now = shown.elapsed or 0.0
        fields |= {FROM: (now, done), DEADLINE: None if limit_s is None else now + limit_s}
    progress.update(task, description=stage, completed=done, total=total, **fields)


def progress_bar(json_out: bool):
    """A new_progress bar of one task (off with --json or when stderr is not a terminal), and the callback
    report(stage, done, total) that the Python API calls, with the time left once the total is known. Off, it
    is an empty context and a callback that does nothing (rich.progress is not even imported: scripts start
    faster)."""
    if json_out or not err_console.is_terminal:
        return contextlib.nullcontext(), lambda stage, done, total: None
    progress = new_progress(json_out=json_out)
    task = progress.add_task("simulating", total=None)

    def report(stage: str, done: int, total: int) -> None:
        show_progress(progress, task, stage, done, total)

    return progress, report


def format_bytes(count: float) -> str:
    """A byte count for people: a whole number of MiB, GiB or TiB in that binary unit, as memory sizes are
    given (96 MiB); any other count in decimal units to one decimal, none when it is 0 (kB, MB, GB, TB: 1 GB =
    1e9 bytes, as the bandwidths are given), e.g. 67.1 MB, 192 MB; below 1 kB in bytes."""
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20)):
        if count >= scale and count % scale == 0:
            return f"{int(count) // scale:,} {unit}"
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if count >= scale:
            return f"{count / scale:,.1f}".removesuffix(".0") + f" {unit}"
    return f"{count:,.0f} B"


def format_time(seconds: float | None) -> str:
    """A duration (seconds; None: "-") for people, in the largest unit it reaches: µs with two decimals, ms and
    s with three, then min, h and days with one (7.28 µs, 1.634 ms, 2.500 s, 4.2 min, 1.5 days)."""
    if seconds is None:
        return "-"
    for unit, scale, digits in (("days", 86400, 1), ("h", 3600, 1), ("min", 60, 1), ("s", 1, 3), ("ms", 1e-3, 3)):
        if seconds >= scale:
            return f"{seconds / scale:,.{digits}f} {unit}"
    return f"{seconds * 1e6:,.2f} µs"


SHORT_CELLS = 12  # columns whose cells are all this short (numbers, times, verdicts) wrap only as a last resort
_WRAPPED = 8  # width counted for a column that wraps, when checking that the unwrapped ones fit
_LEAST = 3  # the narrowest a column may get beside whole key columns (else the keys fold too)
_KEY_WORD = 40  # a key's words up to this long (shapes, names, constants) never fold; longer ones (paths) may


def whole_keys(table, *keys: str):
    """Keep a table's key columns (`keys`: the headers of its shape, problem or name columns) whole at any
    terminal width: one line each, never cut with '…' (rich shrinks columns to fit and cuts their text). The
    other columns give way: long text wraps between words, short values (up to SHORT_CELLS wide) stay on one
    line as far as the room allows (then wrap between words too), and only where not even every column's
    longest word fits do long words fold onto the next line instead of being cut. Call after the rows are
    added; returns the table."""
    from rich.text import Text

    short, words, fixed, natural, header_word = [], [], 0, {}, {}
    for column in table.columns:
        cells = [Text.from_markup(c) if isinstance(c, str) else c for c in column.cells]
        widest = max([c.cell_len for c in cells if isinstance(c, Text)] + [len(str(column.header))])
        natural[id(column)] = widest
        column.overflow = "fold"
        if column.header in keys:
            column.no_wrap, column.min_width = True, widest
            fixed += widest
            continue
        if widest <= SHORT_CELLS:
            short.append((column, widest))
        texts = [c.plain for c in cells if isinstance(c, Text)]
        words.append((column, max((len(w) for t in texts for w in t.split()), default=1)))
        header_word[id(column)] = max((len(w) for w in str(column.header).split()), default=1)
    width = out_console.width
    borders = 3 * len(table.columns) + 1  # padding and a border per column, the closing border
    if borders + sum(natural.values()) <= width:
        return table  # every cell fits on one line
    if fixed + borders + _LEAST * len(words) > width:
        # key columns this wide (long file paths) would squeeze the others away: they fold like the rest
        for column in table.columns:
            if column.header in keys:
                column.no_wrap, column.min_width = False, None
        return table
    # Text wrapped between words only (a tile "128x192x128" is never cut to "128x192x12" / "8"), where every
    # column's longest word fits beside the key columns: the widths are set here, as rich's own shrinking narrows
    # the widest columns first, below a column's least width, and then cuts the table's edge
    # headers whole too ("rank", not "ra" / "nk") where they fit
    least = {id(column): max(longest, header_word[id(column)]) for column, longest in words}
    room = width - fixed - borders - sum(least.values())
    if room < 0 and keys and room + sum(least.values()) - sum(longest for _, longest in words) >= 0:
        # only the headers do not fit: long key cells (file paths) give way, folding down to their header's
        # longest word, rather than a header break ("p" / "r" / "o" / "b" ... beside a path); a word up to
        # _KEY_WORD (a shape, a name) stays
        key_columns = [column for column in table.columns if column.header in keys]
        floor = {id(c): max([_LEAST] + [len(w) for w in str(c.header).split()]
                            + [len(w) for t in c.cells for w in Text.from_markup(str(t)).plain.split()
                               if len(w) <= _KEY_WORD]) for c in key_columns}
        if sum(natural[id(c)] - floor[id(c)] for c in key_columns) >= -room:
            for column in sorted(key_columns, key=lambda c: natural[id(c)], reverse=True):
                give = min(-room, natural[id(column)] - floor[id(column)])
                column.no_wrap, column.min_width, column.width = False, None, natural[id(column)] - give
                room += give
    if room < 0:
        # not every header word fits beside the cells' words: the cells' words first, then as many headers
        least = {id(column): longest for column, longest in words}
        room = width - fixed - borders - sum(least.values())
        for column, _ in words if room >= 0 else ():
            if least[id(column)] < header_word[id(column)] <= least[id(column)] + room:
                room -= header_word[id(column)] - least[id(column)]
                least[id(column)] = header_word[id(column)]
    if room >= 0:
        # then short values on one line, the cheapest first
        one_line = set()
        for column, widest in sorted(short, key=lambda item: item[1] - least[id(item[0])]):
            if widest - least[id(column)] <= room:
                room -= widest - least[id(column)]
                least[id(column)] = widest
                one_line.add(id(column))
        spare = {id(column): natural[id(column)] - least[id(column)] for column, _ in words}
        total = sum(spare.values())
        for column, _ in words:
            column.width = least[id(column)] + (room * spare[id(column)] // total if total else 0)
            column.no_wrap = id(column) in one_line
        return table
    # not even the longest words fit: long words fold; short values stay on one line if they fit
    rest = fixed + borders + _WRAPPED * (len(table.columns) - len(short) - len(keys))
    if rest + sum(w for _, w in short) <= width:
        for column, _ in short:
            column.no_wrap = True
    return table


def whole_words_fit(table, *keys: str) -> bool:
    """Whether `table` fits the terminal with its key columns whole and every other column as wide as its
    longest word (header and cells): the least width at which whole_keys wraps text between words only."""
    from rich.text import Text

    need = 3 * len(table.columns) + 1  # padding and a border per column, the closing border
    for column in table.columns:
        texts = [(Text.from_markup(c) if isinstance(c, str) else c).plain for c in column.cells
                 if isinstance(c, (str, Text))]
        if column.header in keys:
            need += max([len(line) for t in texts for line in t.splitlines()] + [len(str(column.header))])
        else:
            need += max((len(w) for t in [*texts, str(column.header)] for w in t.split()), default=1)
    return need <= out_console.width


def stacked(table, *keys: str):
    """`table` as a block per row, for a terminal too narrow for its columns: the key cells in bold, then the
    short columns (cells up to SHORT_CELLS wide) as "header value" on the same line where they fit, and each
    other non-empty cell on a line of its own under its header, wrapped between words with the lines after the
    first indented (a word wider than the room folds). The table's title heads the blocks; returns a renderable."""
    from rich.console import Group
    from rich.padding import Padding
    from rich.table import Table
    from rich.text import Text

    def text(cell) -> Text:
        return Text.from_markup(cell) if isinstance(cell, str) else cell if isinstance(cell, Text) else Text(str(cell))

    columns = list(table.columns)
    cells = [[text(c) for c in column.cells] for column in columns]
    short = {i for i, column in enumerate(columns) if column.header not in keys
             and all(c.cell_len <= SHORT_CELLS for c in cells[i])}
    label = max((len(str(c.header)) for i, c in enumerate(columns) if c.header not in keys and i not in short),
                default=0)
    width = out_console.width
    parts: list[Any] = [Text.from_markup(table.title, style="italic")] if isinstance(table.title, str) else []
    for r in range(table.row_count):
        head = Text("  ").join(cells[i][r] for i, c in enumerate(columns) if c.header in keys)
        head.stylize("bold")
        for i in sorted(short):
            if cells[i][r].plain.strip():
                pair = Text.assemble(str(columns[i].header), " ", cells[i][r])
                head = Text.assemble(head, "  " if head.cell_len + 2 + pair.cell_len <= width else "\n", pair)
        parts.append(head)
        grid = Table.grid(padding=(0, 2))
        grid.add_column(no_wrap=True, min_width=label, style="dim")
        grid.add_column(overflow="fold")
        for i, column in enumerate(columns):
            if column.header not in keys and i not in short and cells[i][r].plain.strip():
                grid.add_row(str(column.header), cells[i][r])
        if grid.row_count:
            parts.append(Padding(grid, (0, 0, 0, 2)))
    return Group(*parts)


def title_rule(console: Console, parts: list[str]) -> None:
    """A report's title: its `parts` (kernel, size, dtypes, ...; plain text) two spaces apart, in bold, as a
    rule "─ title ─" when it fits the console's width; else the parts on as many bold lines as they need
    (never split inside a part unless one alone is wider) above a plain rule. rich's rule would cut the title
    with "…" (at 80 columns, the hardware's name went first)."""
    from rich.cells import cell_len
    from rich.markup import escape
    from rich.text import Text

    width = console.width
    title = "  ".join(parts)
    if cell_len(title) + 4 <= width:  # the rule's "─ " and " ─"
        console.rule(f"[bold]{escape(title)}")
        return
    lines: list[str] = []
    for part in parts:
        if lines and cell_len(lines[-1]) + 2 + cell_len(part) <= width:
            lines[-1] += "  " + part
        else:
            lines.append(part)
    for line in lines:
        console.print(Text(line, style="bold", overflow="fold"), highlight=False)
    console.rule()


def print_utilisation(util: dict[str, dict[str, float]]) -> None:
    """The pipe utilisation table of a report: busy fraction per unit kind (AIC, AIV) and pipe."""
    if not util:
        return
    from rich.table import Table

    pipes = [p for p in ("MTE2", "MTE1", "CUBE", "FIXPIPE", "VECTOR", "MTE3", "SCALAR")
             if any(p in per_pipe for per_pipe in util.values())]
    table = Table(title="pipe utilisation (busy fraction, mean over units)", title_justify="left")
    table.add_column("unit")
    for pipe in pipes:
        table.add_column(pipe, justify="right")
    for kind in ("aic", "aiv"):
        if kind in util:
            table.add_row(kind.upper(), *[f"{util[kind][p] * 100:.0f}%" if p in util[kind] else "" for p in pipes])
    out_console.print(table)


def given(**options: Any) -> dict[str, Any]:
    """The options the user gave (None: left out), so that the kernel's model knows which ones were set."""
    return {k: v for k, v in options.items() if v is not None}
