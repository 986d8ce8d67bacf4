"""Kernels by name: a registry maps each name to an object with check / simulate / compute / verify.

`get(name)` is the registry's kernel (kernels/contract.py's KernelSpec) with its parameter model `Params`
(`ascendbench.kernels.get("sort").Params(n=1000, dtype="int32")`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ascendbench.kernels.base import KERNELS, Kernel, ParamError, Verification, get_kernel, kernel_names
from ascendbench.kernels.scan import SCAN_KERNELS, ScanKernel, ScanParams, auto_chunk, expected_matmuls

if TYPE_CHECKING:
    from ascendbench.kernels.contract import KernelSpec

__all__ = [
    "KERNELS",
    "SCAN_KERNELS",
    "Kernel",
    "ParamError",
    "ScanKernel",
    "ScanParams",
    "Verification",
    "auto_chunk",
    "expected_matmuls",
    "get",
    "get_kernel",
    "kernel_names",
]


def get(name: str) -> KernelSpec:
    """The registry's kernel `name` (kernels/registry.py; `ascendbench.list_kernels()` names them): its parameter
    model `.Params` (a pydantic model: sizes, dtypes, variant, tile sizes; ranges, choices and defaults),
    `.inputs`, `.variants`, `.space` (its search space, or None) and the steps of the contract.

    Raises ParamError ("name: unknown kernel 'sortt' (did you mean 'sort'?); ...") for an unknown name, its
    parameter in Python's spelling."""
    from ascendbench.kernels.registry import get_spec  # the registry imports every kernel module: on first use

    try:
        return get_spec(name)
    except ParamError as exc:
        raise ParamError("name", exc.detail).in_python_names() from None
