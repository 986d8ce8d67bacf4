"""One parser for every count (issue 16 item 5): the CLI's integer options and the benchmark scripts take
1e6, 1_000_000, 2**20 and 2**32+1 alike, and refuse anything else in one line naming the option."""

import subprocess
import sys
from pathlib import Path

import pytest
import typer
from hypothesis import given, settings
from hypothesis import strategies as st

from ascendbench.cli import app
from ascendbench.commands.common import CountError, parse_count

ROOT = Path(__file__).resolve().parents[2]

FORMS = [
    ("100000000", 100_000_000),
    ("100_000_000", 100_000_000),
    ("1e8", 100_000_000),
    ("1.5e9", 1_500_000_000),
    ("1E+3", 1000),
    ("2**27", 134_217_728),
    ("2 ** 10", 1024),
    ("2**32+1", 4_294_967_297),
    ("2**31-1", 2_147_483_647),
    ("1e6 + 2**20 - 1", 2_048_575),
    ("0", 0),
    ("2**60", 2**60),
    (" 42 ", 42),
    (7, 7),
]


@pytest.mark.parametrize("text, value", FORMS)
def test_parse_count_forms(text, value):
    assert parse_count(text, "n") == value


ALLOWED = "1000000, 1_000_000, 1e6, 2**20 or 2**32+1"
BAD = [
    ("lots", f"--n: expected a non-negative integer such as {ALLOWED}, got 'lots'"),
    ("-5", f"--n: expected a non-negative integer such as {ALLOWED}, got '-5'"),
    ("1.5", f"--n: expected a non-negative integer such as {ALLOWED}, got '1.5'"),
    ("1-2", f"--n: expected a non-negative integer such as {ALLOWED}, got '1-2'"),
    ("2**3+", f"--n: expected a non-negative integer such as {ALLOWED}, got '2**3+'"),
    ("2^10", f"--n: expected a non-negative integer such as {ALLOWED}, got '2^10'"),
    ("", f"--n: expected a non-negative integer such as {ALLOWED}, got ''"),
    ("2**60+1", "--n: too large, got '2**60+1' (no count option takes more than 2**60)"),
    ("2**100000000", "--n: too large, got '2**100000000' (no count option takes more than 2**60)"),
    ("1e400", "--n: too large, got '1e400' (no count option takes more than 2**60)"),
    (-1, "--n: expected a non-negative integer up to 2**60, got -1"),
]


@pytest.mark.parametrize("text, message", BAD)
def test_parse_count_refuses_with_the_option_and_what_is_allowed(text, message):
    with pytest.raises(CountError) as info:
        parse_count(text, "n")
    assert str(info.value) == message


def _options():
    """(command path, option) for every option of every command."""
    found = []

    def walk(cmd, path):
        if hasattr(cmd, "list_commands"):
            for name in cmd.list_commands(None):
                walk(cmd.get_command(None, name), f"{path} {name}")
            return
        found.extend((path, param) for param in cmd.params if param.param_type_name == "option")

    walk(typer.main.get_command(app), "ascendbench")
    return found


# Counts that were text options parsed in the command body before; they must stay declared as counts.
COUNT_NAMES = {"n", "m", "k", "batch", "length", "vocab", "samples", "segment_length", "partition_limit",
               "trials", "seed", "seeds", "jobs", "blocks", "s", "m0", "n0", "k0", "split_k", "random_shapes"}


def _parsed(path: str, option, text: str):
    """What the command makes of `option text` (click's make_context, which typer keeps in every version)."""
    cmd = typer.main.get_command(app)
    for name in path.split()[1:]:
        cmd = cmd.get_command(None, name)
    ctx = cmd.make_context(path, [option.opts[0], text], resilient_parsing=True)
    return ctx.params[option.name]


def test_every_integer_option_uses_the_count_parser():
    # through what the commands do with a value: typer's own attributes differ between the versions the project
    # allows (newer ones carry their own copy of click)
    options = _options()
    counts = [(path, p) for path, p in options if p.metavar == "<count>"]
    assert len(counts) >= 60  # every command's counts, not an empty walk
    for path, p in counts:
        for text, value in (("2**4+1", 17), ("1e2", 100), ("1_000", 1000)):
            assert _parsed(path, p, text) == value, f"{path} {p.opts[0]} {text}"
    plain = [f"{path} {p.opts[0]}" for path, p in options
             if p.metavar != "<count>" and isinstance(p.default, int) and not isinstance(p.default, bool)]
    assert plain == []  # an integer option that bypasses the count parser
    named = [(path, p) for path, p in options if p.name in COUNT_NAMES]
    assert all(p.metavar == "<count>" for _, p in named), [
        f"{path} {p.opts[0]}" for path, p in named if p.metavar != "<count>"]


ACCEPTED = [
    (["hgemm", "select", "--m", "2**12", "--n", "4e3", "--k", "1_024", "--batch", "1e0", "--json"], '"m": 4096'),
    (["run", "scan", "--n", "2**32+1", "--s", "2**6", "--blocks", "2e1", "--model-only", "--json", "--no-save"],
     '"n": 4294967297'),
    (["run", "batched-scan", "--batch", "4e1", "--length", "2**12", "--model-only", "--json", "--no-save"],
     '"batch": 40'),
    (["run", "topk", "--n", "2**10", "--k", "2**3", "--seed", "1e0", "--json", "--no-save"], '"k": 8'),
]


@pytest.mark.parametrize("args, expected", ACCEPTED)
def test_count_forms_are_accepted_by_every_command(tmp_path, cli, args, expected):
    out = cli(args, tmp_path)
    assert out.exit_code == 0, out.output
    assert expected in out.stdout


REFUSED = [
    (["hgemm", "select", "--m", "4096", "--n", "4096", "--k", "1e3.5"], "--k"),
    (["tune", "hgemm", "--m", "64", "--n", "64", "--k", "64", "--trials", "lots"], "--trials"),
    (["tune", "batched-scan", "--batch", "4", "--length", "2**"], "--length"),
    (["run", "hgemm", "--m", "64", "--n", "64", "--k", "64", "--m0", "sixteen"], "--m0"),
    (["validate", "--random", "ten"], "--random"),
]


@pytest.mark.parametrize("args, option", REFUSED)
def test_bad_counts_are_one_line_naming_the_option(tmp_path, cli, args, option):
    out = cli(args, tmp_path)
    assert out.exit_code == 2, out.output
    assert out.output.strip() == (f"error: {option}: expected a non-negative integer such as {ALLOWED}, "
                                  f"got {args[-1]!r}")
    assert list(tmp_path.iterdir()) == []


def test_counts_reach_the_range_checks(tmp_path, cli):
    # 0e0 parses as 0; the command's own bound then names what it allows
    out = cli(["tune", "hgemm", "--m", "2**6", "--n", "64", "--k", "64", "--trials", "0e0"], tmp_path)
    assert out.exit_code == 2 and out.output.strip() == "error: --trials: must be at least 1, got 0"


def test_bench_intmax_takes_the_readme_count():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import bench_intmax
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    assert bench_intmax.arguments().parse_args(["--n", "2**32+1"]).n == 4_294_967_297
    assert bench_intmax.arguments().parse_args([]).n == 4_294_967_297
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_intmax.py"), "--n", "2**32+x"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1] == (f"bench_intmax.py: error: argument --n: expected a "
                                                    f"non-negative integer such as {ALLOWED}, got '2**32+x'")


# Python's \d, \s, int(), float() and Decimal() take any Unicode digit or space; README's forms are ASCII.
NON_ASCII = ["١٠٠", "１２", "1e٣", "2**１０", "\u3000 5", "2\u2003**\u20034", "1\u00a0000", "৪২", "1_٠٠٠"]


@pytest.mark.parametrize("text", NON_ASCII)
def test_non_ascii_digits_and_spaces_are_refused(text):
    with pytest.raises(CountError) as info:
        parse_count(text, "n")
    assert str(info.value) == f"--n: expected a non-negative integer such as {ALLOWED}, got {text!r}"


# Count-like text: Unicode digits and spaces (categories Nd, Zs) among the ASCII characters of the forms.
COUNT_LIKE = st.text(st.characters(categories=("Nd", "Zs")) | st.sampled_from("0123456789_*+-eE. "),
                     min_size=1, max_size=12)


@given(st.one_of(COUNT_LIKE, st.text(min_size=1, max_size=12)).filter(lambda t: not t.isascii()))
@settings(max_examples=300, deadline=None)
def test_any_text_with_a_non_ascii_character_is_refused(text):
    with pytest.raises(CountError) as info:
        parse_count(text, "n")
    assert str(info.value) == f"--n: expected a non-negative integer such as {ALLOWED}, got {text!r}"


@given(st.integers(min_value=0, max_value=2**60))
@settings(max_examples=200, deadline=None)
def test_ascii_forms_still_parse(value):
    assert parse_count(str(value), "n") == value
    assert parse_count(f" {value:_} ", "n") == value


def test_the_cli_refuses_arabic_indic_digits(tmp_path, cli):
    out = cli(["run", "scan", "--n", "١٠٠", "--model-only", "--no-save"], tmp_path)
    assert out.exit_code == 2, out.output
    assert out.output.strip() == f"error: --n: expected a non-negative integer such as {ALLOWED}, got '١٠٠'"
    assert list(tmp_path.iterdir()) == []
