"""The host window around a kernel as the scan paper's profiling script times it (sim/host.py)."""

import pytest

from ascendbench.hardware import load_profile
from ascendbench.kernels import SCAN_KERNELS, ScanParams
from ascendbench.reference import scan_claims
from ascendbench.sim.host import WRAPPERS, measured_window, scan_wrapper

HW = load_profile("ascend-910b4")


def test_split_wrapper_head_is_the_sum_of_its_steps():
    w = measured_window(HW, "run_scan_multi_core", 1e-3)
    expected_head = (2 * HW.host_tensor_alloc_us + HW.host_acl_malloc_us + HW.host_memcpy_h2d_us
                     + HW.host_queue_drain_us + HW.host_launch_us)
    assert w.head_s == pytest.approx(expected_head * 1e-6, rel=1e-12)
    assert w.tail_s == pytest.approx(HW.host_sync_return_us * 1e-6, rel=1e-12)
    assert w.window_s == pytest.approx(w.head_s + 1e-3 + w.tail_s, rel=1e-12)


def test_split_and_no_split_differ_by_the_queue_drain_only():
    split = measured_window(HW, "run_scan_multi_core", 0.0)
    whole = measured_window(HW, "run_scan_multi_core_no_l2", 0.0)
    assert split.host_s - whole.host_s == pytest.approx(HW.host_queue_drain_us * 1e-6, rel=1e-9)


def test_single_core_wrapper_pays_the_zeroed_workspace_as_an_eager_op():
    single = measured_window(HW, "run_scan_single_core", 0.0)
    cube = measured_window(HW, "run_scan_multi_cube", 0.0)
    assert single.head_s - cube.head_s == pytest.approx(
        (HW.host_eager_op_us - HW.host_tensor_alloc_us) * 1e-6, rel=1e-9)


def test_a_torch_op_returns_before_its_kernel_so_its_tail_is_zero():
    w = measured_window(HW, "torch_op", 2e-4)
    assert w.tail_s == 0
    assert w.window_s == pytest.approx(2e-4 + HW.host_eager_op_us * 1e-6, rel=1e-12)


def test_every_step_constant_is_a_profile_field_with_a_source():
    for steps in WRAPPERS.values():
        for step in steps:
            assert step.part in ("head", "tail")
            assert HW.sources[step.constant]


@pytest.mark.parametrize("kernel, chunk, wrapper", [
    ("mcscan", None, "run_scan_multi_core"), ("mcscan", 0, "run_scan_multi_core_no_l2"),
    ("mcscan", 1 << 20, "run_scan_multi_core"), ("mcscan-ul1", None, "run_scan_multi_cube"),
    ("scanu", None, "run_scan_single_core"), ("memcpy", None, "torch_op")])
def test_scan_kernels_map_to_the_wrappers_the_profiling_script_calls(kernel, chunk, wrapper):
    assert scan_wrapper(kernel, chunk) == wrapper


def test_bad_input_is_refused():
    with pytest.raises(KeyError):
        scan_wrapper("hgemm")
    with pytest.raises(ValueError, match="kernel_s"):
        measured_window(HW, "torch_op", -1.0)


def test_host_constants_never_reach_the_kernel_time():
    slow_host = HW.replace(**{f: 1000.0 for f in ("host_launch_us", "host_tensor_alloc_us", "host_acl_malloc_us",
                                                  "host_memcpy_h2d_us", "host_queue_drain_us", "host_eager_op_us",
                                                  "host_sync_return_us")})
    n = 20 * 128 * 128
    kernel = SCAN_KERNELS["mcscan"].simulate(n, ScanParams(), HW).time_s
    assert SCAN_KERNELS["mcscan"].simulate(n, ScanParams(), slow_host).time_s == kernel
    timed = scan_claims.window("mcscan", n, slow_host)
    assert timed.kernel_s == kernel
    assert timed.window_s == pytest.approx(kernel + 7000e-6, rel=1e-12)  # the split wrapper's seven steps


def test_the_radix_sort_wrapper_does_not_synchronise():
    w = measured_window(HW, "run_radix_sort", 1e-3)
    head = 3 * HW.host_tensor_alloc_us + HW.host_acl_malloc_us + HW.host_memcpy_h2d_us + HW.host_queue_drain_us
    assert w.head_s == pytest.approx((head + HW.host_launch_us) * 1e-6, rel=1e-12)
    assert w.tail_s == 0
