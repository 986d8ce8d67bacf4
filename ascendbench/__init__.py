"""ascendbench: benchmark and autotune scan kernels on a simulated Huawei Ascend NPU.

Public API: `run(name, **params)` (run any kernel of the registry on real data, verified, with simulated
timings; `kernels()` lists them), `run_scan` (the 1-D scans' runner with every streaming option), `get_kernel` /
`KERNELS` (the scan algorithms by name), `ScanParams`, `load_profile` / `HardwareProfile` (hardware as data).
"""

__version__ = "0.1.0"

from ascendbench.hardware import HardwareProfile, list_profiles, load_profile
from ascendbench.kernels import KERNELS, ParamError, ScanParams, get_kernel
from ascendbench.runner import ScanRun, run_scan


def run(name: str, **options):
    """Run registry kernel `name` through the pipeline (ascendbench.pipeline.run: arguments, returns, errors)."""
    from ascendbench.pipeline import run as _run

    return _run(name, **options)


def kernels() -> list[str]:
    """The registry's kernel names (ascendbench.kernels.registry)."""
    from ascendbench.kernels.registry import spec_names

    return spec_names()


__all__ = [
    "KERNELS",
    "HardwareProfile",
    "ParamError",
    "ScanParams",
    "ScanRun",
    "__version__",
    "get_kernel",
    "kernels",
    "list_profiles",
    "load_profile",
    "run",
    "run_scan",
]
