"""`--md`: a report's rich tables as GitHub-flavoured Markdown pipe tables, to paste into an issue or a pull
request (`results list`, `results compare`, `validate`)."""

from __future__ import annotations

import re
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

__all__ = ["MdOption", "md_escape", "md_table", "plain"]

MdOption = Annotated[bool, typer.Option("--md", help="Print the tables as GitHub-flavoured Markdown (pipe tables), "
                                        "to paste into an issue or a pull request.")]

# CommonMark's backslash escapes for what would change a cell: a pipe ends it, * _ ` ~ emphasise or quote,
# [ ] link, < > & start HTML or an entity, and a backslash would escape the next character
_SPECIAL = re.compile(r"([\\|*_`~\[\]<>&])")
_ALIGN = {"right": "---:", "center": ":---:"}


def plain(markup: str | Text) -> str:
    """The text of rich markup (or a Text), styles dropped: "[red]slower[/]" -> "slower"."""
    return markup.plain if isinstance(markup, Text) else Text.from_markup(markup).plain


def md_escape(text: str) -> str:
    """`text` with Markdown's punctuation escaped, so that it renders as it reads; line breaks become <br> (a
    table row is one line)."""
    return "<br>".join(_SPECIAL.sub(r"\\\1", line) for line in text.split("\n"))


def md_table(table: Table) -> str:
    """A rich Table as a GitHub pipe table (ending in a newline): its title in bold above it, a header row, the
    columns' alignment from their `justify`, and each cell's plain text (markup dropped, escaped: md_escape)."""
    lines = []
    if table.title:
        lines += [f"**{md_escape(plain(table.title))}**", ""]
    columns = table.columns
    lines.append("| " + " | ".join(md_escape(plain(c.header)) for c in columns) + " |")
    lines.append("|" + "|".join(_ALIGN.get(c.justify, "---") for c in columns) + "|")
    for row in zip(*(list(c.cells) for c in columns)):
        lines.append("| " + " | ".join(md_escape(plain(cell)) for cell in row) + " |")
    return "\n".join(lines) + "\n"
