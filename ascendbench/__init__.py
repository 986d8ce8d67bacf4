"""ascendbench: benchmark and autotune scan kernels on a simulated Huawei Ascend NPU.

Public API: `run_scan` (run a scan kernel on real data, verified, with simulated timings), `get_kernel` /
`KERNELS` (kernels by name), `ScanParams`, `load_profile` / `HardwareProfile` (hardware as data).
"""

__version__ = "0.1.0"

from ascendbench.hardware import HardwareProfile, load_profile, list_profiles  # noqa: E402
from ascendbench.kernels import KERNELS, ParamError, ScanParams, get_kernel  # noqa: E402
from ascendbench.runner import ScanRun, run_scan  # noqa: E402

__all__ = [
    "__version__", "HardwareProfile", "load_profile", "list_profiles", "KERNELS", "ParamError", "ScanParams",
    "get_kernel", "ScanRun", "run_scan",
]
