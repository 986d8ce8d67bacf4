"""`--md`: a report's rich tables as GitHub-flavoured Markdown pipe tables, to paste into an issue or a pull
request (`results list`, `results compare`, `validate`)."""

from __future__ import annotations

import re
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from ascendbench.commands.common import out_console, stacked, whole_keys, whole_words_fit

__all__ = ["MdOption", "Report", "md_escape", "md_table", "plain"]

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


class Report:
    """Where a text report goes: the terminal (rich: tables with their key columns whole, notes and lines
    wrapped) or Markdown (--md: pipe tables, notes as paragraphs, lines as a list), to paste into an issue."""

    def __init__(self, md: bool):
        self.md = md

    def table(self, table: Table, *keys: str, stack: bool = False) -> None:
        """`table` with its key columns whole (whole_keys); with `stack`, as a block per row (stacked) on a
        terminal too narrow for every column's longest word, so that no word is split."""
        if self.md:
            out_console.file.write(md_table(table) + "\n")
        elif stack and not whole_words_fit(table, *keys):
            out_console.print(stacked(table, *keys))
        else:
            out_console.print(whole_keys(table, *keys))

    def note(self, markup: str) -> None:
        """A paragraph given as rich markup (user text in it escaped)."""
        if self.md:
            out_console.file.write(md_escape(plain(markup)) + "\n\n")
        else:
            out_console.print(markup, highlight=False, soft_wrap=True)

    def lines(self, texts: list[str], heading: str | None = None, bullets: bool = True) -> None:
        """Plain lines (not markup), under a heading line if given: indented by two on the terminal (when
        there is a heading), a list in Markdown (a paragraph each with bullets=False)."""
        if not texts:
            return
        if self.md:
            head = f"{md_escape(heading)}\n\n" if heading else ""
            items = [f"- {md_escape(t)}" for t in texts] if bullets else [f"{md_escape(t)}\n" for t in texts]
            out_console.file.write(head + "\n".join(items) + "\n\n")
            return
        if heading:
            out_console.print(heading, highlight=False, markup=False)
        for text in texts:
            out_console.print(f"  {text}" if heading else text, highlight=False, markup=False, soft_wrap=True)
