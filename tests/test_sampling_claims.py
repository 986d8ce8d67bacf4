"""Claims S-16 (top-p: scaling with vocabulary, 17 scans per fp16 row) and S-18 (more than 2^24 categories)."""

import pytest

from ascendbench.hardware import load_profile
from ascendbench.reference import sampling_claims


@pytest.fixture(scope="module")
def rows():
    return {r["id"]: r for r in sampling_claims.evaluate(load_profile("ascend-910b4"))}


@pytest.mark.parametrize("cid", ["S-16a", "S-16b", "S-18"])
def test_sampling_claims_hold(rows, cid):
    assert rows[cid]["holds"], rows[cid]
    assert rows[cid]["kind"] in ("exact", "shape")


def test_command_line_prints_paper_and_simulated(capsys):
    assert sampling_claims.main(["--json"]) == 0
    out = capsys.readouterr().out
    assert '"S-16b"' in out and '"simulated": "17"' in out
