"""ascendbench: benchmark and autotune scan kernels on a simulated Huawei Ascend NPU.

Public API: `run_scan` (run a scan kernel on real data, verified, with simulated timings), `get_kernel` /
`KERNELS` (kernels by name), `ScanParams`, `load_profile` / `HardwareProfile` (hardware as data).
"""

__version__ = "0.1.0"

from ascendbench.hardware import HardwareProfile, list_profiles, load_profile
from ascendbench.kernels import KERNELS, ParamError, ScanParams, get_kernel
from ascendbench.runner import ScanRun, run_scan

__all__ = [
    "KERNELS",
    "HardwareProfile",
    "ParamError",
    "ScanParams",
    "ScanRun",
    "__version__",
    "get_kernel",
    "list_profiles",
    "load_profile",
    "run_scan",
]
