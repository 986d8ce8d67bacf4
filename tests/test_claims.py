"""The papers' exact, calibration and shape claims that must hold (validation claims are only reported)."""

import pytest

from ascendbench.hardware import load_profile
from ascendbench.reference import hgemm_claims, scan_claims


@pytest.fixture(scope="module")
def scan_rows():
    return {r["id"]: r for r in scan_claims.evaluate(load_profile("ascend-910b4"))}


@pytest.fixture(scope="module")
def hgemm_rows():
    return {r["id"]: r for r in hgemm_claims.evaluate(load_profile("atlas-300t-a2"), random_count=40)}


@pytest.mark.parametrize("cid", ["S-W1", "S-2", "S-4", "S-5", "S-9"])
def test_scan_claims_hold(scan_rows, cid):
    assert scan_rows[cid]["holds"], scan_rows[cid]


@pytest.mark.parametrize("cid", ["G-1", "G-2", "G-3", "G-4", "G-5", "G-6", "G-8a", "G-9a M=8", "G-9a M=512", "G-11"])
def test_hgemm_claims_hold(hgemm_rows, cid):
    assert hgemm_rows[cid]["holds"], hgemm_rows[cid]


def test_every_claim_is_reported(scan_rows, hgemm_rows):
    assert {"S-1", "S-3", "S-6", "S-7", "S-8a", "S-8b"} <= set(scan_rows)
    assert {"G-6", "G-7a", "G-7e", "G-8a", "G-8b", "G-9b M=16"} <= set(hgemm_rows)
    for row in [*scan_rows.values(), *hgemm_rows.values()]:
        assert row["kind"] in ("exact", "calibration", "validation", "shape")
