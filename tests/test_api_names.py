"""Every `ascendbench.<name>(` that a message, docstring or document tells the user to call exists (issue 26
item 14: an error pointed at `ascendbench.run_hgemm(...)`, which is not there)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CALL = re.compile(r"\bascendbench((?:\.[A-Za-z_]\w*)+)\(")


def _texts() -> list[Path]:
    return [*sorted((ROOT / "ascendbench").rglob("*.py")), ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _resolves(dotted: str) -> bool:
    """Whether ascendbench.<dotted> is a module attribute: the longest importable module prefix, then getattr."""
    parts = ["ascendbench", *dotted.strip(".").split(".")]
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for name in parts[cut:]:
                obj = getattr(obj, name)
        except AttributeError:
            return False
        return callable(obj)
    return False


def test_every_ascendbench_call_named_in_a_text_exists():
    found = {(str(path.relative_to(ROOT)), m.group(0)) for path in _texts() for m in CALL.finditer(path.read_text())}
    assert {c for _, c in found} >= {"ascendbench.run("}  # the scan sees them
    assert sorted((p, c) for p, c in found if not _resolves(c[len("ascendbench"):-1])) == []


def test_the_hgemm_arrays_error_points_at_the_real_function():
    import numpy as np

    import ascendbench
    from ascendbench.kernels import ParamError

    with pytest.raises(ParamError) as err:
        ascendbench.run("hgemm", m=4, n=4, k=4, arrays={"a": np.ones((4, 4), np.float16)})
    assert str(err.value) == ("arrays: hgemm takes its matrices as .npy files, not arrays: "
                              'ascendbench.run("hgemm", a_file=..., b_file=..., c_file=...)')
