"""The package's layers: no circle of imports (module-level or inside functions), and commands reach kernels only
through the registry, the pipeline and the runners."""

from __future__ import annotations

import ast
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


# What a command module may import: the public layers. The HGEMM commands still build the kernel's parameters
# and read its tiling selector directly (listed apart).
ALLOWED = ("ascendbench", "ascendbench.commands", "ascendbench.pipeline", "ascendbench.runner",
           "ascendbench.runner_rows", "ascendbench.kernels.registry", "ascendbench.kernels.base",
           "ascendbench.kernels.contract", "ascendbench.hardware", "ascendbench.store", "ascendbench.reference",
           "ascendbench.tuning", "ascendbench.workloads", "ascendbench.sim.trace", "ascendbench.plotting",
           "ascendbench.interrupts", "ascendbench.redact", "ascendbench.processes",
           "ascendbench.correlate", "ascendbench.correlate_plot")  # correlate's library: rows, statistics, fit
HGEMM_COMMANDS = {"ascendbench.commands.hgemm", "ascendbench.commands.run_hgemm", "ascendbench.commands.tune"}
HGEMM_INTERNALS = {"ascendbench.kernels.hgemm", "ascendbench.kernels.hgemm_tiling"}


def test_commands_reach_kernels_through_the_public_layers():
    leaks = []
    for name, deps in _graph().items():
        if not name.startswith("ascendbench.commands."):
            continue
        for dep in sorted(deps):
            allowed = dep == "ascendbench" or any(dep == a or dep.startswith(a + ".") for a in ALLOWED[1:])
            if not allowed and not (name in HGEMM_COMMANDS and dep in HGEMM_INTERNALS):
                leaks.append(f"{name} imports {dep}")
    assert leaks == []
