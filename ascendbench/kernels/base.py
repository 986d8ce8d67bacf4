"""The kernel contract and the registry that maps names to kernels."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ascendbench.hardware import HardwareProfile
from ascendbench.sim.engine import BufferCapacityError
from ascendbench.sim.result import SimResult

__all__ = ["KERNELS", "BufferCapacityError", "InputError", "Kernel", "ParamError", "Verification", "get_kernel", "kernel_names",
           "register"]


# Refused rather than timing the input's size: ascendbench.run refuses the pair for every kernel, and --n /
# --batch / --length (with --dtype) give the same timings without a file the run would not read.
NO_DATA_WITH_MODEL_ONLY = "there is no data with --model-only; drop one of them"


class ParamError(ValueError):
    """A kernel parameter is out of its allowed range; the message names the parameter and what is allowed.

    `param` is the parameter's name as the CLI spells it (e.g. "s", "blocks")."""

    def __init__(self, param: str, message: str):
        super().__init__(f"--{param}: {message}")
        self.param = param


class InputError(ValueError):
    """An input file or array is unusable; the message names the argument and what is allowed."""


@dataclass(frozen=True)
class Verification:
    """Result of checking a kernel's output against the NumPy reference."""

    passed: bool
    max_abs_error: float
    max_rel_error: float
    tolerance: str


class Kernel(Protocol):
    """What every kernel offers to the CLI, the tuner, the validator and the tests."""

    name: str
    title: str
    source: str

    def check(self, n: int, params: Any, hw: HardwareProfile) -> None: ...

    def simulate(self, n: int, params: Any, hw: HardwareProfile, warm_l2: bool = False) -> SimResult: ...

    def compute(self, x: np.ndarray, params: Any, progress: Callable[[int], None] | None = None) -> np.ndarray: ...

    def verify(self, x: np.ndarray, y: np.ndarray, params: Any) -> Verification: ...


KERNELS: dict[str, Kernel] = {}


def register(kernel: Kernel) -> Kernel:
    KERNELS[kernel.name] = kernel
    return kernel


def kernel_names() -> list[str]:
    return list(KERNELS)


def get_kernel(name: str) -> Kernel:
    """Kernel by registry name. Raises ParamError (param "algorithm") for unknown names."""
    try:
        return KERNELS[name]
    except KeyError:
        raise ParamError("algorithm", f"unknown kernel {name!r}; choose from {', '.join(KERNELS)}") from None
