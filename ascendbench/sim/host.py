"""The host's share of a published time: what lies between the two device events that time one call.

The scan paper's times come from `scripts/profiling/profile_tcuscan_ops.py` (reference/pytorch-tcuscan,
`_run_benchmark`, 147-153): after `device.sync()` it records a start event on the stream, calls the host
function once, records an end event, synchronises, and reports the events' elapsed time. The events are on
the device, but the device is idle between them whenever the host has not yet enqueued the next task, so the
window holds the host's work too:

    window = head + kernel + tail

- head: from the start event to the kernel's start, the host steps the wrapper takes before its launch reaches
  the device (the stream is empty, so each step is device idle time);
- kernel: the simulated kernel, exactly what `ascendbench run` reports;
- tail: from the kernel's end to the end event. A wrapper that synchronises inside the call
  (`aclrtSynchronizeStream`, torch_scan.h) enqueues the end event only after the kernel has finished, so the
  wake-up of the synchronising thread and the event's own enqueue follow the kernel; a plain torch op
  (`torch.clone`) or a wrapper without a synchronisation (run_radix_sort) returns at once and its end event is
  queued behind the kernel (tail 0).

The steps of each wrapper are read from `src/torch/torch_scan.h` and `src/torch/commons.h`; each step's cost
is a profile constant (`host_*`, in microseconds) with its source. The window is used only where a result is
compared with a published or user measurement (claims, `reproduce`); `run` reports the kernel alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["HostStep", "MeasuredWindow", "WRAPPERS", "measured_window", "scan_wrapper"]


@dataclass(frozen=True)
class HostStep:
    """One host step inside the timed window: `part` is "head" (before the kernel) or "tail" (after it),
    `constant` the profile field giving its cost in microseconds, `where` the wrapper line it models."""

    name: str
    part: str
    constant: str
    where: str


# Steps of torch_scan.h (reference/pytorch-tcuscan/src/torch) and commons.h, in the order the host runs them.
_CALL = HostStep("extension call and kernel launch", "head", "host_launch_us",
                 "ACLRT_LAUNCH_KERNEL from a pybind11 entry point (torch_scan.h 221-224, 231-234)")
_OUT = HostStep("at::empty output", "head", "host_tensor_alloc_us", "torch_scan.h 195-196 (caching allocator)")
_MALLOC = HostStep("aclrtMalloc tiling", "head", "host_acl_malloc_us", "commons.h 90 (alloc_copy_tiling)")
_MEMCPY = HostStep("aclrtMemcpy tiling host to device", "head", "host_memcpy_h2d_us",
                   "commons.h 91-92 (synchronous copy of the tiling struct)")
_WORKSPACE = HostStep("at::empty workspace", "head", "host_tensor_alloc_us", "commons.h 31-32 (alloc_workspace)")
_ZEROS = HostStep("at::zeros workspace (an eager fill op)", "head", "host_eager_op_us",
                  "commons.h 52-53 (alloc_zeros_workspace: at::zeros enqueues a fill before the launch)")
_DRAIN = HostStep("stream(true): empty torch_npu's task queue", "head", "host_queue_drain_us",
                  "torch_scan.h 214 (the split path asks for an empty queue; the no-split path 254 does not)")
_SYNC = HostStep("aclrtSynchronizeStream returns, end event enqueued", "tail", "host_sync_return_us",
                 "torch_scan.h 238 (aclrtFree at 237 does not synchronise: CANN 8.0 aclrtFree)")
_EAGER = HostStep("eager torch op enqueue", "head", "host_eager_op_us",
                  "profile_tcuscan_ops.py 446-457 (torch.clone) and 191-192 (torch.cumsum)")

WRAPPERS: dict[str, tuple[HostStep, ...]] = {
    # MCScan with the L2 split (torch_scan.h 184-240)
    "run_scan_multi_core": (_OUT, _MALLOC, _MEMCPY, _DRAIN, _WORKSPACE, _CALL, _SYNC),
    # MCScan without the split (torch_scan.h 251-301): stream(false) taken first, no GetCoreMemSize
    "run_scan_multi_core_no_l2": (_OUT, _MALLOC, _MEMCPY, _WORKSPACE, _CALL, _SYNC),
    # MCScanUL1 (torch_scan.h 416-465): stream(false), GetCoreMemSize is a host-side lookup
    "run_scan_multi_cube": (_OUT, _MALLOC, _MEMCPY, _WORKSPACE, _CALL, _SYNC),
    # ScanU / ScanUL1 / vector-only CumSum on one core (torch_scan.h 47-109): zeroed workspace
    "run_scan_single_core": (_OUT, _MALLOC, _MEMCPY, _ZEROS, _CALL, _SYNC),
    # batched scan (torch_scan.h 119-174): stream(true) after the tiling copy
    "run_scan_batch": (_OUT, _MALLOC, _MEMCPY, _DRAIN, _WORKSPACE, _CALL, _SYNC),
    # radix sort (torch_sort.h 51-80): two outputs, stream(true) after the workspace, no synchronisation
    "run_radix_sort": (_OUT, _OUT, _MALLOC, _MEMCPY, _WORKSPACE, _DRAIN, _CALL),
    # a torch eager op (torch.clone, the memcpy reference; torch.sort): no synchronisation inside the call
    "torch_op": (_EAGER,),
}


def scan_wrapper(kernel: str, chunk: int | None = None) -> str:
    """The host wrapper the profiling script calls for a scan kernel of the registry (`memcpy` is torch.clone).

    chunk: the ScanParams chunk; 0 means the no-split MCScan (`run_scan_multi_core_no_l2`).
    Raises KeyError for a kernel the scan paper does not time through a wrapper.
    """
    if kernel == "mcscan":
        return "run_scan_multi_core_no_l2" if chunk == 0 else "run_scan_multi_core"
    return {"mcscan-ul1": "run_scan_multi_cube", "scanu": "run_scan_single_core",
            "scanul1": "run_scan_single_core", "vec-cumsum": "run_scan_single_core",
            "memcpy": "torch_op", "batched": "run_scan_batch"}[kernel]


@dataclass(frozen=True)
class MeasuredWindow:
    """A kernel time with the host steps of the wrapper around it, as the profiling script times it.

    Times in seconds. `steps` are (step, microseconds) in the host's order; head + kernel + tail = window.
    """

    wrapper: str
    kernel_s: float
    steps: tuple[tuple[HostStep, float], ...]

    @property
    def head_s(self) -> float:
        return sum(us for step, us in self.steps if step.part == "head") * 1e-6

    @property
    def tail_s(self) -> float:
        return sum(us for step, us in self.steps if step.part == "tail") * 1e-6

    @property
    def host_s(self) -> float:
        return self.head_s + self.tail_s

    @property
    def window_s(self) -> float:
        return self.head_s + self.kernel_s + self.tail_s

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: wrapper, kernel_s, head_s, tail_s, window_s and each step's name, part, us, source line."""
        return {"wrapper": self.wrapper, "kernel_s": self.kernel_s, "head_s": self.head_s, "tail_s": self.tail_s,
                "window_s": self.window_s,
                "steps": [{"name": s.name, "part": s.part, "us": us, "constant": s.constant, "where": s.where}
                          for s, us in self.steps]}


def measured_window(hw, wrapper: str, kernel_s: float) -> MeasuredWindow:
    """The timed window of one call of `wrapper` (a key of WRAPPERS) around a kernel of `kernel_s` seconds,
    with the step costs of profile `hw` (`host_*` constants, microseconds).

    Raises KeyError for an unknown wrapper, ValueError for a negative kernel time.
    """
    if kernel_s < 0:
        raise ValueError(f"kernel_s must be non-negative, got {kernel_s}")
    steps = tuple((step, float(getattr(hw, step.constant))) for step in WRAPPERS[wrapper])
    return MeasuredWindow(wrapper, kernel_s, steps)
