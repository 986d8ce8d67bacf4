"""ascendbench: benchmark and autotune scan kernels on a simulated Huawei Ascend NPU.

Public API: `run(name, **params)` (run any kernel of the registry on real data, verified, with simulated
timings, streaming options included; returns a `KernelRun`; `list_kernels()` names them), `get_kernel` /
`KERNELS` (the scan algorithms by name), `ScanParams`, `load_profile` / `HardwareProfile` (hardware as data).
"""

import importlib

__version__ = "0.1.0"

# Imported on first use (PEP 562): `ascendbench --version` needs only __version__, not NumPy and the kernels.
_LAZY = {
    "HardwareProfile": "ascendbench.hardware",
    "list_profiles": "ascendbench.hardware",
    "load_profile": "ascendbench.hardware",
    "KERNELS": "ascendbench.kernels",
    "ParamError": "ascendbench.kernels",
    "ScanParams": "ascendbench.kernels",
    "get_kernel": "ascendbench.kernels",
    "KernelRun": "ascendbench.kernels.contract",
}


def run(name: str, **options):
    """Run registry kernel `name` through the pipeline (ascendbench.pipeline.run: arguments, returns, errors)."""
    from ascendbench.pipeline import run as _run

    return _run(name, **options)


def list_kernels() -> list[str]:
    """The registry's kernel names (ascendbench.kernels.registry; `ascendbench.kernels` is the subpackage)."""
    from ascendbench.kernels.registry import spec_names

    return spec_names()


__all__ = [
    "KERNELS",
    "HardwareProfile",
    "KernelRun",
    "ParamError",
    "ScanParams",
    "__version__",
    "get_kernel",
    "list_kernels",
    "list_profiles",
    "load_profile",
    "run",
]


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'ascendbench' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
