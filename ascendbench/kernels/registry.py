"""The registry: every kernel of the tool, by name, each one object of the contract in kernels/contract.py.

`run`, `tune`, `results`, the Python API (`ascendbench.run`) and the shared contract tests
(tests/kernels/test_registry_contract.py) reach kernels only through it. A new kernel is one module defining its
KernelSpec subclass and one line in `_ENTRIES` below.
"""

from __future__ import annotations

import typing
from typing import Literal

from ascendbench.kernels.base import ParamError, did_you_mean
from ascendbench.kernels.contract import KernelSpec
from ascendbench.kernels.radix_sort import RadixSortKernel
from ascendbench.kernels.sampling import WeightedSampleKernel
from ascendbench.kernels.split import CompressKernel, SplitKernel, SplitValuesKernel
from ascendbench.kernels.streaming import BatchedScanKernel, HgemmKernel, ScanKernelEntry, SegmentedScanKernel
from ascendbench.kernels.topk import TopkKernel
from ascendbench.kernels.topp import TopPKernel
from ascendbench.kernels.tunable import SpecTunable, Tunable

__all__ = ["REGISTRY", "choices", "get_spec", "get_tunable", "problem_name", "register_spec", "spec_for_space",
           "spec_names", "tunables"]

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


def choices(name: str, field: str) -> tuple:
    """The values a kernel's parameter takes when they are a fixed set (its Literal), e.g. choices("sort",
    "dtype"); () for other parameters and for a parameter the kernel does not have."""
    info = REGISTRY[name].Params.model_fields.get(field)
    if info is None:
        return ()
    annotation = info.annotation
    options = [annotation, *typing.get_args(annotation)]
    return next((typing.get_args(a) for a in options if typing.get_origin(a) is Literal), ())


def problem_name(spec: KernelSpec, problem: dict) -> str:
    """A problem of a registry kernel as `tune` names it ("n=1000000 dtype=int32": the size, then the fields
    that differ from their defaults)."""
    return SpecTunable(spec).problem_key(problem)


def spec_for_space(space: str) -> KernelSpec | None:
    """The kernel whose search space is named `space` (None when no kernel declares it)."""
    return next((spec for spec in REGISTRY.values() if spec.space == space), None)


def get_spec(name: str) -> KernelSpec:
    """The registry's kernel by name. Raises ParamError (param "kernel") naming the registered ones."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise ParamError("kernel", f"unknown kernel {name!r}{did_you_mean(name, REGISTRY)}; choose from "
                                   f"{', '.join(REGISTRY)}") from None


def _tunable(spec: KernelSpec) -> Tunable:
    return spec.tunable_class() if spec.tunable_class is not None else SpecTunable(spec)


def tunables() -> dict[str, Tunable]:
    """The tuner's view (kernels/tunable.py) of every kernel with a search space, by the space's name."""
    return {spec.space: _tunable(spec) for spec in REGISTRY.values() if spec.space is not None}


def get_tunable(name: str) -> Tunable:
    """The tunable kernel whose search space is `name` ("hgemm", "scan", "batched-scan", "sort", ...). Raises
    ParamError (param "kernel") naming the tunable ones."""
    spec = spec_for_space(name)
    if spec is None:
        names = list(tunables())
        raise ParamError("kernel", f"unknown tunable kernel {name!r}{did_you_mean(name, names)}; choose from "
                                   f"{', '.join(names)}")
    return _tunable(spec)
