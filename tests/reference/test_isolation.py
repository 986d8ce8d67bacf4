"""The simulator and the kernels never read the reference data: no module under ascendbench/sim or
ascendbench/kernels imports ascendbench.reference or opens the claims files, and importing them all does not
load the reference package."""

import ast
import subprocess
import sys
from pathlib import Path

import ascendbench

PACKAGE = Path(ascendbench.__file__).parent
GUARDED = ("sim", "kernels")


def _modules():
    for folder in GUARDED:
        yield from sorted((PACKAGE / folder).rglob("*.py"))


def _imports(tree: ast.AST, module: str) -> list[str]:
    """Absolute names of every import in a module's syntax tree (relative imports resolved)."""
    names = []
    package = module.rsplit(".", 1)[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            names += [base] + [f"{base}.{a.name}" for a in node.names]
    return names


def test_no_sim_or_kernel_module_imports_the_reference_package():
    checked = 0
    for path in _modules():
        module = "ascendbench." + ".".join(path.relative_to(PACKAGE).with_suffix("").parts)
        text = path.read_text(encoding="utf-8")
        bad = [n for n in _imports(ast.parse(text), module) if n == "ascendbench.reference"
               or n.startswith("ascendbench.reference.")]
        assert not bad, f"{path.name} imports {bad}"
        for name in ("claims.toml", "hgemm_tables.toml", "ascendbench.reference"):
            assert name not in text, f"{path.name} mentions {name}"
        checked += 1
    assert checked >= 10


def test_relative_import_resolution_catches_a_reference_import():
    tree = ast.parse("from ..reference import claims\nfrom . import engine\n")
    assert "ascendbench.reference.claims" in _imports(tree, "ascendbench.kernels.scan")


def test_importing_every_sim_and_kernel_module_leaves_the_reference_package_unloaded():
    modules = ["ascendbench." + ".".join(p.relative_to(PACKAGE).with_suffix("").parts).removesuffix(".__init__")
               for p in _modules()]
    code = ("import sys\n" + "".join(f"import {m}\n" for m in modules)
            + "print(sorted(m for m in sys.modules if m.startswith('ascendbench.reference')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=PACKAGE.parent).stdout
    assert out.strip() == "[]"
