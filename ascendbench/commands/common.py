"""Shared CLI pieces: consoles, one-line user errors, number parsing, result saving."""

from __future__ import annotations

import ast
import json
import re
import secrets
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from rich.console import Console

__all__ = [
    "HardwareOption",
    "JsonOption",
    "default_result_path",
    "err_console",
    "fail",
    "out_console",
    "parse_count",
]

# Wide enough for the report when stdout is a file or a pipe (rich would wrap at 80 columns).
err_console = Console(stderr=True)
out_console = Console(width=None if sys.stdout.isatty() else 132)

HardwareOption = Annotated[
    str, typer.Option("--hardware", help="Hardware profile: a shipped name (see `ascendbench hardware list`) or a .toml path.")
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print only the JSON document on stdout (messages go to stderr).")]


def fail(message: str, code: int = 2) -> NoReturn:
    """Print a one-line user error on stderr and exit with `code` (no traceback)."""
    err_console.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


_COUNT = re.compile(r"^[0-9_eE+*.\s]+$")
MAX_COUNT = 2**60


def parse_count(text: str, name: str) -> int:
    """A non-negative integer written as 100000000, 100_000_000, 1e8 or 2**27 (also 1.5e9 when integral).

    Raises ValueError naming the argument when the text is not such a number."""
    raw = text.strip()
    allowed = "a non-negative integer such as 100000000, 100_000_000, 1e8 or 2**27"
    if not raw or not _COUNT.match(raw):
        raise ValueError(f"--{name}: expected {allowed}, got {text!r}")
    try:
        if "**" in raw:
            base, _, exp = raw.partition("**")
            base_i, exp_i = int(base.replace("_", "")), int(exp.replace("_", ""))
            if exp_i > 256:
                raise ValueError
            value = base_i**exp_i
        elif re.search(r"[eE.]", raw):
            num = ast.literal_eval(raw.replace("_", ""))
            if float(num) != int(num):
                raise ValueError
            mantissa, _, exponent = raw.replace("_", "").lower().partition("e")
            if exponent and abs(int(exponent)) > 256:
                raise ValueError
            # exact for large exponents: 1e15 must not go through float rounding
            if "." not in mantissa and exponent and int(exponent) >= 0:
                value = int(mantissa) * 10 ** int(exponent)
            else:
                value = int(num)
        else:
            value = int(raw.replace("_", ""))
    except (ValueError, SyntaxError, OverflowError):
        raise ValueError(f"--{name}: expected {allowed}, got {text!r}") from None
    if value < 0:
        raise ValueError(f"--{name}: expected {allowed}, got {text!r}")
    if value > MAX_COUNT:
        raise ValueError(f"--{name}: at most 2**60 elements, got {text!r}")
    return value


def default_result_path(kind: str, kernel: str) -> Path:
    """results/<kind>/<kernel>/<UTC timestamp>-<short id>.json under the current folder."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return Path("results") / kind / kernel / f"{stamp}-{secrets.token_hex(3)}.json"


def dump_json(doc: dict) -> str:
    return json.dumps(doc, indent=2, sort_keys=False, allow_nan=False)


def command_line() -> list[str]:
    return ["ascendbench", *sys.argv[1:]]
