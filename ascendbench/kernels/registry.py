"""The registry: every kernel of the tool, by name, each one object of the contract in kernels/contract.py.

`run`, `tune`, `results`, the Python API (`ascendbench.run`) and the shared contract tests
(tests/kernels/test_registry_contract.py) reach kernels only through it. A new kernel is one module defining its
KernelSpec subclass and one line in `_ENTRIES` below.
"""

from __future__ import annotations

from ascendbench.kernels.base import ParamError
from ascendbench.kernels.contract import KernelSpec
from ascendbench.kernels.radix_sort import RadixSortKernel
from ascendbench.kernels.sampling import WeightedSampleKernel
from ascendbench.kernels.split import CompressKernel, SplitKernel, SplitValuesKernel
from ascendbench.kernels.streaming import BatchedScanKernel, HgemmKernel, ScanKernelEntry, SegmentedScanKernel
from ascendbench.kernels.topk import TopkKernel
from ascendbench.kernels.topp import TopPKernel

__all__ = ["REGISTRY", "get_spec", "register_spec", "spec_for_space", "spec_names"]

_ENTRIES: tuple[type[KernelSpec], ...] = (
    ScanKernelEntry,
    BatchedScanKernel,
    SegmentedScanKernel,
    SplitKernel,
    SplitValuesKernel,
    CompressKernel,
    RadixSortKernel,
    TopkKernel,
    TopPKernel,
    WeightedSampleKernel,
    HgemmKernel,
)

REGISTRY: dict[str, KernelSpec] = {cls.name: cls() for cls in _ENTRIES}


def register_spec(spec: KernelSpec) -> KernelSpec:
    """Add a kernel (a KernelSpec instance) to the registry; its name must be new. Returns it."""
    if spec.name in REGISTRY:
        raise ValueError(f"a kernel named {spec.name!r} is registered already")
    REGISTRY[spec.name] = spec
    return spec


def spec_names() -> list[str]:
    return list(REGISTRY)


def spec_for_space(space: str) -> KernelSpec | None:
    """The kernel whose search space is named `space` (None when no kernel declares it)."""
    return next((spec for spec in REGISTRY.values() if spec.space == space), None)


def get_spec(name: str) -> KernelSpec:
    """The registry's kernel by name. Raises ParamError (param "kernel") naming the registered ones."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise ParamError("kernel", f"unknown kernel {name!r}; choose from {', '.join(REGISTRY)}") from None
