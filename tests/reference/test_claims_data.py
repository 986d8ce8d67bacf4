"""The claims data (reference/claims.toml, hgemm_tables.toml): complete, well-formed, consistent with CLAIMS.md,
with the selector's constants and with the Atlas profile; every claim has an evaluator."""

import pytest

from ascendbench.hardware import load_profile
from ascendbench.kernels.hgemm_tiling import TABLE_1, TABLE_2
from ascendbench.reference.claims import (
    FAMILIES,
    KINDS,
    Claim,
    ClaimError,
    Outcome,
    Tolerance,
    evaluators,
    hgemm_tables,
    load_claims,
    select_claims,
    verdict,
)

# CLAIMS.md: ID -> kind (the project's list of the papers' claims).
CLAIMS_MD = {
    "S-W1": "exact", "S-1": "validation", "S-2": "calibration", "S-3": "validation", "S-4": "calibration",
    "S-5": "shape", "S-6": "validation", "S-7": "validation", "S-8": "validation", "S-9": "shape",
    "S-10": "validation", "S-11": "validation", "S-12": "validation", "S-13": "validation", "S-14": "shape",
    "S-15": "shape", "S-16": "shape", "S-17": "shape", "S-18": "exact", "G-1": "exact", "G-2": "exact",
    "G-3": "exact", "G-4": "shape", "G-5": "shape", "G-6": "shape", "G-7": "validation", "G-8": "calibration",
    "G-9a": "calibration", "G-9b": "validation", "G-10": "shape", "G-11": "shape",
}
# S-16 is a shape claim with an exact part (17 scans per row), kept as its own exact row.
EXACT_PARTS = {"S-16b"}


def test_every_claims_md_id_is_in_the_data_with_its_kind():
    rows = load_claims()
    assert {c.claim for c in rows} == set(CLAIMS_MD)
    for c in rows:
        assert c.kind == ("exact" if c.id in EXACT_PARTS else CLAIMS_MD[c.claim]), c.id


def test_rows_are_well_formed():
    for c in load_claims():
        assert c.kind in KINDS and c.family in FAMILIES, c.id
        assert c.id == c.claim or c.id.startswith(c.claim), c.id
        assert c.statement and c.source.split()[0] in ("scan", "HGEMM"), c.id
        load_profile(c.hardware)
        if c.tolerance.rule in ("relative", "absolute"):
            assert isinstance(c.paper, (int, float)) and 0 < c.tolerance.value < 1, c.id
        # the calibration tolerances are the tighter ones of CLAIMS.md
        if c.kind == "calibration":
            assert c.tolerance.value == 0.15, c.id


def test_every_claim_has_an_evaluator():
    assert set(evaluators()) == set(CLAIMS_MD)


def test_quick_set_covers_every_family_and_every_exact_claim():
    quick = select_claims(quick=True)
    assert {c.family for c in quick} == set(FAMILIES)
    assert {c.id for c in load_claims() if c.kind == "exact"} <= {c.id for c in quick}
    assert not [c.id for c in quick if c.kind == "validation"]


def test_select_claims_by_claims_md_id_or_row_id():
    assert [c.id for c in select_claims(["G-9a"])] == ["G-9a M=8", "G-9a M=512"]
    assert [c.id for c in select_claims(["G-9a M=8", "S-4"])] == ["S-4", "G-9a M=8"]
    with pytest.raises(ClaimError, match="'S-99'"):
        select_claims(["S-4", "S-99"])


def _claim(rule, paper, value=None):
    return Claim("X-1", "X-1", "validation", "scan", "ascend-910b4", "x", "x", paper, "", Tolerance(rule, rule, value),
                 False)


def test_verdict_rules():
    assert verdict(_claim("relative", 2.0, 0.25), Outcome(2.49)) == (True, pytest.approx(1.245))
    assert verdict(_claim("relative", 2.0, 0.25), Outcome(2.51))[0] is False
    assert verdict(_claim("relative", 2.0, 0.25), Outcome(float("nan")))[0] is False
    assert verdict(_claim("absolute", 0.25, 0.125), Outcome(0.37))[0] is True
    assert verdict(_claim("absolute", 0.25, 0.125), Outcome(0.38))[0] is False
    assert verdict(_claim("overlap", [1.3, 3.3]), Outcome([1.0, 1.3]))[0] is True
    assert verdict(_claim("overlap", [1.3, 3.3]), Outcome([1.0, 1.29]))[0] is False
    assert verdict(_claim("ordering", "a > b"), Outcome("3 > 2", True)) == (True, None)
    with pytest.raises(ClaimError):
        verdict(_claim("ordering", "a > b"), Outcome("3 > 2"))


def test_tables_1_and_2_agree_with_the_selector_constants():
    t = hgemm_tables()
    assert {i: (m0, n0) for i, m0, n0 in t["table1"]["rows"]} == TABLE_1
    assert {i: (k0, mn_max) for i, k0, mn_max in t["table2"]["rows"]} == TABLE_2


def test_table_3_agrees_with_the_atlas_profile():
    atlas = {row[0]: row[1] for row in hgemm_tables()["table3"]["rows"]}
    hw = load_profile("atlas-300t-a2")
    assert hw.l1_bytes == atlas["l1_kb_per_core"] * 1024
    assert hw.l2_bytes == atlas["l2_mb"] * 10**6
    assert hw.hbm_bandwidth_gbps == atlas["memory_bandwidth_tbps"] * 1000
    assert hw.cube_fp16_peak_tflops == pytest.approx(atlas["fp16_peak_tflops"], rel=1e-3)


def test_tables_4_and_5_agree_with_the_claims():
    t = hgemm_tables()
    paper = {c.id: c.paper for c in load_claims()}
    table4 = {row[0]: row for row in t["table4"]["rows"]}
    assert (table4["proposed"][2], table4["proposed"][3]) == (paper["G-7b"], paper["G-7a"])
    assert (table4["gemm-example"][2], table4["gemm-example"][3]) == (paper["G-7d"], paper["G-7c"])
    assert round(paper["G-7e"], 1) == table4["proposed"][4]
    table5 = {row[0]: row for row in t["table5"]["rows"]}
    for m in (8, 512):
        assert table5[m][6] == paper[f"G-9a M={m}"]
        assert table5[m][4] == paper[f"G-9b GE M={m}"]
    for m in (16, 32, 64, 128, 256):
        assert table5[m][6] == paper[f"G-9b M={m}"]
    # the published TFLOPS are 2 M N K / duration (a transcription check)
    for m, *_rest in t["table5"]["rows"]:
        row = table5[m]
        for tf, us in ((row[1], row[2]), (row[3], row[4]), (row[5], row[6])):
            assert 2 * m * 28672 * 7168 / (us * 1e-6) / 1e12 == pytest.approx(tf, rel=0.02), m
