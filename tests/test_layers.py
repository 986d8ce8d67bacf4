"""The package's layers: no circle of imports (module-level or inside functions), and every folder imports only what
the layers table of docs/architecture.md allows (commands, for instance, reach kernels only through the registry,
the contract and the pipeline)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "ascendbench"


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """Every ascendbench module `path` imports, at module level or inside a function."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("ascendbench"):
            subs = {f"{node.module}.{a.name}" for a in node.names} & set(modules)
            out |= subs
            if len(subs) < len(node.names):  # names from the module itself
                name = node.module
                while name not in modules:
                    name = name.rpartition(".")[0]
                out.add(name)
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name in modules}
    return out


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(path, modules) - {name, "ascendbench"} for name, path in modules.items()}


def test_no_circle_of_imports():
    graph = _graph()
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == 1:
                return path[path.index(dep):] + [dep]
            if dep not in state and (circle := visit(dep)):
                return circle
        state[node] = 2
        path.pop()
        return None

    for name in sorted(graph):
        if name not in state:
            circle = visit(name)
            assert circle is None, " -> ".join(circle)


# What each folder or module may import: the table of docs/architecture.md (between the layers markers), the one
# source of truth; this test reads it.
PAGE = PACKAGE.parent / "docs" / "architecture.md"


def _path(module: str, modules: dict[str, Path]) -> str:
    """A module as the table names it: its path under ascendbench/ ("kernels/registry.py", "hardware/__init__.py")."""
    return modules[module].relative_to(PACKAGE).as_posix()


def _table() -> list[tuple[list[str], list[str]]]:
    """The rows of the layers table: (the folders or modules of the first column, the entries they may import)."""
    text = PAGE.read_text(encoding="utf-8")
    block = text[text.index("<!-- layers:begin -->"): text.index("<!-- layers:end -->")]
    rows = []
    for line in block.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 2 or not cells[0].startswith("`"):
            continue  # the marker, the header and its rule
        rows.append((re.findall(r"`([^`]+)`", cells[0]), re.findall(r"`([^`]+)`", cells[1])))
    return rows


def _covers(entry: str, path: str) -> bool:
    return path.startswith(entry) if entry.endswith("/") else path == entry


def _unit(path: str) -> str:
    """The folder ("kernels/") or top-level module ("pipeline.py") a path belongs to."""
    return path.split("/")[0] + "/" if "/" in path else path


def test_the_layers_table_names_what_exists():
    rows = _table()
    assert len(rows) >= 20
    missing = sorted({e for keys, allowed in rows for e in [*keys, *allowed] if not (PACKAGE / e).exists()})
    assert missing == []


def test_every_import_is_one_the_layers_table_allows():
    modules = _modules()
    rows = _table()
    uncovered, leaks = [], []
    for name, deps in _graph().items():
        path = _path(name, modules)
        mine = [allowed for keys, allowed in rows if any(_covers(k, path) for k in keys)]
        if not mine:
            uncovered.append(path)
            continue
        allowed = [e for entries in mine for e in entries]
        for dep in sorted(deps):
            target = _path(dep, modules)
            if _unit(target) != _unit(path) and not any(_covers(e, target) for e in allowed):
                leaks.append(f"{path} imports {target}")
    assert (uncovered, leaks) == ([], [])
