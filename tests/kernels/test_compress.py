"""Compress / masked_select (scan paper §5.2): equals x[mask]; the scan and the scalar baseline's timing."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ascendbench.hardware import load_profile
from ascendbench.kernels.split import (
    MASKED_SELECT_SCALAR_OPS,
    compress,
    simulate_compress,
    simulate_flag_scan,
)

HW = load_profile("ascend-910b4")


@settings(max_examples=40, deadline=None)
@given(n=st.sampled_from([0, 1, 2, 17, 8191, 8193, 30000]), seed=st.integers(0, 2**16),
       fdt=st.sampled_from([np.bool_, np.int8, np.uint8]), vdt=st.sampled_from([np.float16, np.float32, np.int32]),
       density=st.sampled_from([0.0, 0.5, 1.0]))
def test_compress_equals_boolean_indexing(n, seed, fdt, vdt, density):
    rng = np.random.default_rng(seed)
    values = rng.standard_normal(n).astype(vdt)
    mask = (rng.random(n) < density).astype(fdt)
    if fdt is not np.bool_:
        mask = mask * np.array(3, dtype=fdt)  # non-zero, not only 1
    out = compress(values, mask)
    np.testing.assert_array_equal(out, values[mask != 0])
    assert out.dtype == values.dtype


def test_compress_keeps_special_values_bit_for_bit():
    values = np.array([-0.0, np.nan, 1.0, -np.inf], dtype=np.float16)
    out = compress(values, np.array([True, True, False, True]))
    assert out.view(np.uint16).tolist() == values[[0, 1, 3]].view(np.uint16).tolist()


def test_compress_rejects_a_mask_of_another_length():
    with pytest.raises(ValueError, match="^mask: "):
        compress(np.zeros(3), np.zeros(2, bool))


@pytest.mark.parametrize("n", [1, 10**5, 3 * 10**6 + 1])
def test_compress_writes_only_the_selected_values(n):
    n_true = n // 4
    sim = simulate_compress(n, "fp16", HW, n_true=n_true)
    scan = simulate_flag_scan(n, HW)
    written = sim.counters["bytes_gm_write"] - scan.counters["bytes_gm_write"]
    tiles = math.ceil(n / 8192)
    # the selected run of each tile, rounded up to 32 bytes per write
    assert 2 * n_true <= written <= 2 * n_true + 32 * tiles
    assert sim.counters["kernel_launches"] == 2 and sim.counters["scans"] == 1


def test_scalar_baseline_costs_its_scalar_ops():
    n = 40 * 16384 * 8
    sim = simulate_compress(n, "fp16", HW, variant="scalar")
    per_aiv = n / 40 * MASKED_SELECT_SCALAR_OPS * HW.scalar_op_cycles
    assert sim.time_cycles >= per_aiv
    assert sim.counters.get("matmuls", 0) == 0 and sim.counters.get("vector_instructions", 0) == 0
    assert simulate_compress(n, "fp16", HW).time_s < sim.time_s
