"""The kernel contract and the registry that maps names to kernels."""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ascendbench.hardware import HardwareProfile
from ascendbench.sim.engine import BufferCapacityError
from ascendbench.sim.result import SimResult

__all__ = ["KERNELS", "BufferCapacityError", "InputError", "Kernel", "ParamError", "Verification", "did_you_mean",
           "get_kernel", "kernel_names", "python_name", "register", "suggest"]


# Refused rather than timing the input's size: ascendbench.run refuses the pair for every kernel, and --n /
# --batch / --length (with --dtype) give the same timings without a file the run would not read.
NO_DATA_WITH_MODEL_ONLY = "there is no data with --model-only; drop one of them"


class ParamError(ValueError):
    """A kernel parameter is out of its allowed range; the message names the parameter and what is allowed.

    `param` is the parameter's name as the CLI spells it (e.g. "s", "blocks", "model-only"); `detail` the message
    without the name; `suggestion`, when set, the parameter the user likely meant (an unknown one misspelt).
    str() spells names as the CLI's options ("--dtyp: ...; did you mean --dtype?"); after `in_python_names()`, as
    the Python API's keyword arguments ("dtyp: ...; did you mean dtype?")."""

    def __init__(self, param: str, message: str, *, suggestion: str | None = None, named: bool = True):
        self.param, self.detail, self.suggestion = param, message, suggestion
        self.named = named  # False: the CLI's message is the detail alone (it names what is wrong its own way)
        self.python = False
        super().__init__(self._text())

    def _text(self) -> str:
        name = python_name if self.python else _cli_name
        detail = _OPTION.sub(lambda m: python_name(m.group(1)), self.detail) if self.python else self.detail
        hint = f"; did you mean {name(self.suggestion)}?" if self.suggestion else ""
        return f"{name(self.param)}: {detail}{hint}" if self.named or self.python else f"{detail}{hint}"

    def in_python_names(self) -> ParamError:
        """This error, its names (and the options its message mentions) spelt as the Python API's keyword
        arguments; returns self (re-raise it with `raise`, keeping the traceback)."""
        self.python = True
        self.args = (self._text(),)
        return self

    @classmethod
    def from_message(cls, message: str, param: str) -> ParamError:
        """A ParamError of another error's message (TuneError, HardwareError, SpaceError): "--option: detail"
        names its option; another message is about `param`, and the CLI's text stays the message as it was."""
        match = _NAMED.match(message)
        return cls(match.group(1), match.group(2)) if match else cls(param, message, named=False)

    def __reduce__(self):  # pickled across --jobs worker processes: rebuilt from its parts, not from args
        return _rebuild, (self.param, self.detail, self.suggestion, self.named, self.python)


def _rebuild(param: str, detail: str, suggestion: str | None, named: bool, python: bool) -> ParamError:
    err = ParamError(param, detail, suggestion=suggestion, named=named)
    return err.in_python_names() if python else err


_OPTION = re.compile(r"(?<![\w-])--([a-z0-9][a-z0-9-]*)")  # an option a message mentions: "drop --dtype"
_NAMED = re.compile(r"--([a-z0-9][a-z0-9-]*): (.*)", re.DOTALL)
# options whose keyword argument is named otherwise (ascendbench.run)
_PYTHON_NAMES = {"input": "arrays", "output-file": "output_path"}


def _cli_name(param: str) -> str:
    return "--" + param.replace("_", "-")


def python_name(param: str) -> str:
    """The keyword argument of the Python API for a CLI option name ("model-only" -> "model_only", "input" ->
    "arrays")."""
    param = param.removeprefix("--")
    return _PYTHON_NAMES.get(param, param.replace("-", "_"))


def suggest(name: str, names: Iterable[str]) -> str | None:
    """The closest of `names` to a misspelt `name` (difflib, cutoff 0.6), or None."""
    close = difflib.get_close_matches(str(name), list(names), n=1)
    return close[0] if close else None


def did_you_mean(name: str, names: Iterable[str]) -> str:
    """" (did you mean 'sort'?)" for a misspelt value among `names`; "" when none is close."""
    close = suggest(name, names)
    return f" (did you mean {close!r}?)" if close else ""


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
        raise ParamError("algorithm", f"unknown kernel {name!r}{did_you_mean(name, KERNELS)}; choose from "
                                      f"{', '.join(KERNELS)}") from None
