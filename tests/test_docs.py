"""README.md stays a short way in (at most 220 lines, the two set-up commands, an example of every command), and
every relative link of README.md and docs/ reaches an existing file and, where it names one, heading."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation but '-' and '_' dropped, spaces as '-'."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for line in FENCE.sub("", page.read_text(encoding="utf-8")).splitlines():
        if m := re.match(r"#{1,6} (.+)", line):
            slug = _slug(m.group(1))
            out.add(slug if slug not in seen else f"{slug}-{seen[slug]}")
            seen[slug] = seen.get(slug, 0) + 1
    return out


def test_slug_follows_github():
    assert _slug("Fidelity: how close the simulator is to the papers' claims") == \
        "fidelity-how-close-the-simulator-is-to-the-papers-claims"
    assert _slug("HGEMM: `ascendbench run hgemm`, `ascendbench hgemm select`") == \
        "hgemm-ascendbench-run-hgemm-ascendbench-hgemm-select"


def test_readme_is_short_and_starts_both_jobs():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 220
    assert "pip install -e . && ascendbench run scan --n 1e8\n" in text
    assert "pip install -e '.[test]' && python -m pytest\n" in text


def test_readme_shows_every_command():
    from ascendbench.cli import COMMANDS

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    missing = [name for name in [*COMMANDS, "hgemm select"] if f"\nascendbench {name} " not in text]
    assert missing == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_reach_a_file_and_heading(page):
    broken = []
    for target in LINK.findall(FENCE.sub("", page.read_text(encoding="utf-8"))):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target}: no such file")
        elif anchor and file.suffix == ".md" and anchor not in _anchors(file):
            broken.append(f"{target}: no heading #{anchor}")
    assert broken == []
