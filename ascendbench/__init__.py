"""ascendbench: benchmark and autotune scan kernels on a simulated Huawei Ascend NPU.

Public API: `run(name, **params)` (run any kernel of the registry on real data, verified, with simulated
timings, streaming options included; returns a `KernelRun`; `list_kernels()` names them, `kernels.get(name)`
gives one with its parameter model `.Params`), `tune(kernel, **options)` (search a kernel's configurations as
`ascendbench tune --json` does, the same summary), `get_kernel` / `KERNELS` (the scan algorithms by name),
`ScanParams`, `load_profile` / `HardwareProfile` (hardware as data).
"""

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # what IDEs and type checkers see of the names imported on first use
    from ascendbench.tuning.session import tune

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
    "tune": "ascendbench.tuning.session",  # its arguments, units, returns and errors: its docstring
}
_SUBPACKAGES = ("kernels",)  # of the API: kernels.get(name)


def run(name: str, **options):
    """Run registry kernel `name` through the pipeline (ascendbench.pipeline.run: arguments, returns, errors).

    A ParamError names the keyword argument in Python's spelling with the closest one when it was misspelt
    ("dtyp: is not a parameter of sort; did you mean dtype?"); so do InputError, HardwareError and WorkloadError
    ("input_file: file not found: x.npy", where the CLI says --input)."""
    from ascendbench.hardware import HardwareError
    from ascendbench.kernels.base import InputError, ParamError
    from ascendbench.pipeline import run as _run
    from ascendbench.workloads import WorkloadError

    try:
        return _run(name, **options)
    except (InputError, HardwareError, WorkloadError) as exc:  # their messages name the CLI's options
        exc.args = (_python_message(str(exc)),)
        raise
    except ParamError as exc:
        if exc.param == "kernel":  # get_spec's name for what is run's first argument
            exc.param = "name"
        if exc.detail == "is required without --input":  # the CLI's one data option is two arguments here
            exc.detail = "is required without arrays or input_file"
        if exc.suggestion is None and exc.detail.startswith("is not a parameter"):  # run's own keywords too
            import inspect

            from ascendbench.kernels.base import suggest

            exc.suggestion = suggest(exc.param.replace("-", "_"), inspect.signature(_run).parameters)
        raise exc.in_python_names()


# The CLI's file options and the keyword arguments of run that take the same files.
_FILE_ARGUMENTS = {"input": "input_file", "a": "a_file", "b": "b_file", "c": "c_file"}


def _python_message(message: str) -> str:
    """An error message's CLI options ("--input: file not found: x.npy") as run's keyword arguments ("input_file:
    file not found: x.npy")."""
    import re

    from ascendbench.kernels.base import python_name

    return re.sub(r"(?<![\w-])--([a-z0-9][a-z0-9-]*)",
                  lambda m: _FILE_ARGUMENTS.get(m.group(1)) or python_name(m.group(1)), message)


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
    "tune",
]


def __getattr__(name: str):
    if name in _SUBPACKAGES:  # `import ascendbench` then `ascendbench.kernels.get("sort")`
        return importlib.import_module(f"ascendbench.{name}")
    if name not in _LAZY:
        raise AttributeError(f"module 'ascendbench' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
