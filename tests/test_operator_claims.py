"""The operator claims module runs and reports S-10, S-11, S-12 and S-17 (paper beside simulated)."""

from ascendbench.hardware import load_profile
from ascendbench.reference.operator_claims import evaluate


def test_operator_claims_are_evaluated():
    rows = {r["id"]: r for r in evaluate(load_profile("ascend-910b4"))}
    assert set(rows) == {"S-10", "S-10b", "S-11", "S-12a", "S-12b", "S-17"}
    # every row holds in the model today (S-12a, 8 passes ~1.5x, at the band's edge: about 1.94x)
    for cid in ("S-10", "S-10b", "S-11", "S-12a", "S-12b", "S-17"):
        assert rows[cid]["holds"], rows[cid]
    assert 1.0 < rows["S-12a"]["simulated"] < rows["S-12b"]["simulated"]
