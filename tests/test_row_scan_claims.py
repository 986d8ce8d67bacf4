"""Claims S-13 ... S-15 of the scans over many rows: every one is reported; the shape claims S-14 and S-15 are
checked (S-14 as a whole: tests/kernels/test_batched_scan.py)."""

import pytest

from ascendbench.hardware import load_profile
from ascendbench.reference import row_scan_claims

HW = load_profile("ascend-910b4")


@pytest.fixture(scope="module")
def rows():
    return {r["id"]: r for r in row_scan_claims.evaluate(HW)}


@pytest.fixture(scope="module")
def grid():
    return row_scan_claims.crossover_grid(HW)


def test_every_claim_is_reported(rows):
    assert {"S-13 s=64", "S-13 s=128", "S-13 poor", "S-13 base", "S-14", "S-15"} <= set(rows)
    for row in rows.values():
        assert row["kind"] in ("validation", "shape") and isinstance(row["holds"], bool)


def test_s15_int8_gain_is_small(rows):
    assert rows["S-15"]["holds"], rows["S-15"]


def test_s14_scanul1_wins_for_few_long_rows_and_loses_past_a_crossover_near_18(grid):
    # the half of S-14 that holds: on rows longer than 4K ScanUL1 is faster for few rows, and ScanU takes over
    # at a batch within 2x of the paper's 18
    assert all(ratio < 1 for (b, n), ratio in grid.items() if b < 9 and n > 4096)
    for n in (n for n in row_scan_claims.CROSS_LENGTHS if n > 4096):
        crossover = min(b for b in row_scan_claims.CROSS_BATCHES if grid[(b, n)] > 1)
        assert 9 <= crossover <= 36, (n, crossover)


def test_s14_scanu_gains_on_scanul1_as_the_batch_passes_the_core_count(grid):
    # the direction of S-14's crossover: beyond 20 rows (one per AI core) ScanUL1 loses its lead over ScanU
    for n in row_scan_claims.CROSS_LENGTHS:
        assert grid[(24, n)] > grid[(16, n)], n


def test_s14_verdict_matches_the_grid(rows, grid):
    u = [grid[c] > 1 for c in grid if c[0] > 36 and c[1] < 2048]
    ul1 = [grid[c] < 1 for c in grid if c[0] < 9 and c[1] > 8192]
    assert rows["S-14"]["holds"] == (all(u) and all(ul1))
