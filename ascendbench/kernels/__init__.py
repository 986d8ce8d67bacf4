"""Kernels by name: a registry maps each name to an object with check / simulate / compute / verify."""

from ascendbench.kernels.base import KERNELS, Kernel, ParamError, Verification, get_kernel, kernel_names
from ascendbench.kernels.scan import SCAN_KERNELS, ScanKernel, ScanParams, auto_chunk, expected_matmuls

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
    "get_kernel",
    "kernel_names",
]
