"""The kernel contract: what every kernel in the registry (kernels/registry.py) declares and does.

A kernel is one object with:

- `Params`: one pydantic model of its parameters, problem sizes included (n, k, batch, ...), with ranges,
  choices and defaults. It is the single source of the checks of `run` and the Python API (`ascendbench.run`),
  of the `params` of the result document and, through the fields a search space names, of the tuner's
  configurations; a kernel's search space file (tuning_spaces/<space>.toml) lists the fields that
  are tuned, every other field is the problem.
- `inputs`: the arrays it reads (names, dtypes, shape, how they are generated when not given).
- `check` (beyond the model: hardware limits, buffers), `simulate` (the timing model on a hardware profile),
  `generate` (seeded inputs), `compute` (the functional run: the outputs the algorithm produces, with its
  roundings), `verify` (the outputs against a NumPy reference), `bytes_moved` (what bandwidth counts).
- `variants`: the paper's variant first and the baseline it is compared with; `heuristic`: the paper's choice
  of the tuned parameters for a problem.

The run pipeline (ascendbench/pipeline.py) drives these steps in one order for every kernel:
input -> check -> functional run -> timing model (the chosen variant and its baseline) -> verify -> result
document -> files. Kernels whose functional run streams through partitions (the 1-D scans, HGEMM, the row
scans) declare `streaming = True`: their `run_streaming` step streams the input partition by partition through
the functional run and the verifier (their run modules: kernels/scan_run.py, row_scan_run.py, hgemm_run.py)
and builds their result document; every kernel's run is a `KernelRun`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ascendbench.hardware import DEFAULT_SCAN_HARDWARE, HardwareProfile
from ascendbench.kernels.base import ParamError, suggest
from ascendbench.sim.result import SimResult

__all__ = ["FROM_INPUT", "MAX_ELEMENTS", "N_HELP", "Check", "ExtraOption", "InputSpec", "KernelParams", "KernelRun",
           "KernelSpec", "OptionalCount", "Outcome", "RunCommand", "TileSide", "TuneCommand", "WarmL2", "param_error",
           "values_input"]

MAX_ELEMENTS = 2**60  # the largest count any option takes (the count parser's bound)

# Fields many kernels share (a model writes e.g. `n: OptionalCount = None`)
FROM_INPUT = " (optional with input arrays)"  # ends a size's description: `run` may take the size from the arrays
OptionalCount = Annotated[int | None, Field(ge=0, le=MAX_ELEMENTS, description=f"elements{FROM_INPUT}")]
TileSide = Annotated[Literal[16, 32, 64, 128], Field(description="tile side (tiles are s x s)")]
WarmL2 = Annotated[bool, Field(description="start with the input in L2")]
N_HELP = "Elements: 1000000, 1e6, 1_000_000 or 2**20. Optional with --input."  # `run`'s --n of a 1-D kernel


class KernelParams(BaseModel):
    """Base of every kernel's parameter model: unknown fields are refused, values are immutable and of their
    type (strict: no "10" or True for a count; NumPy scalars are taken as the Python numbers they hold)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, defer_build=True)


@functools.lru_cache(maxsize=64)
def _space_parameters(path) -> tuple[str, ...]:
    """The parameter names of a search space file, read once per process."""
    from ascendbench.tuning.space import load_space

    return tuple(load_space(path).parameters)


def _python_scalars(values: Mapping[str, Any]) -> dict[str, Any]:
    """NumPy scalars (np.int64 from a shape, np.float32, np.bool_) as the Python numbers they hold."""
    return {k: v.item() if isinstance(v, np.generic) else v for k, v in values.items()}


def param_error(exc: ValidationError, kernel: str | None = None, fields: Iterable[str] = ()) -> ParamError:
    """The first error of a parameter model's validation as a ParamError naming the option (--field-name);
    kernel and fields: the kernel's name and its parameters, for a name it does not have (the closest of fields
    is suggested)."""
    err = exc.errors()[0]
    name = str(err["loc"][0]).replace("_", "-") if err.get("loc") else "params"
    kind, ctx = err.get("type", ""), err.get("ctx", {})
    if kind == "literal_error":
        msg = "must be one of " + str(ctx.get("expected", "")).replace("'", "").replace(" or ", ", ")
    elif kind == "greater_than_equal":
        msg = "must be a non-negative integer" if ctx["ge"] == 0 else f"must be at least {ctx['ge']}"
    elif kind == "less_than_equal":
        msg = f"must be at most {ctx['le']:,}" if isinstance(ctx.get("le"), int) else f"must be at most {ctx['le']}"
    elif kind in ("int_parsing", "int_type", "int_from_float"):
        msg = "must be an integer"
    elif kind == "missing":
        return ParamError(name, "is required")
    elif kind == "extra_forbidden":
        typed = str(err["loc"][0])
        return ParamError(name, f"is not a parameter of {kernel or 'this kernel'}",
                          suggestion=suggest(typed, fields) if typed.isidentifier() else None)
    else:
        msg = err["msg"].removeprefix("Value error, ")
        msg = msg[:1].lower() + msg[1:]
    if "input" in err and "got" not in msg and err.get("loc"):  # not for a check of several fields
        msg = f"{msg}, got {err['input']!r}"
    return ParamError(name, msg)


@dataclass(frozen=True)
class InputSpec:
    """One input array: its name (as in an .npz), the dtypes it may have (CLI names), its shape in terms of the
    parameters, and how it is generated when the user gives none."""

    name: str
    dtypes: tuple[str, ...]
    shape: str
    generated: str


@dataclass
class Outcome:
    """What a functional run produced: `arrays` (the outputs, saved with --output-file), `outputs` (small scalars
    for the report and the document) and `facts` (data-dependent quantities the timing model takes, e.g. the
    number of true flags)."""

    arrays: dict[str, np.ndarray]
    outputs: dict[str, Any] = field(default_factory=dict)
    facts: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Check:
    """The verdict of `verify`: passed, what the output was compared with, and what differs when it failed."""

    passed: bool
    reference: str
    detail: str | None = None


@dataclass
class KernelRun:
    """One run of a registry kernel, whichever it is (ascendbench.run returns it).

    time_s: the simulated time in seconds (HGEMM workloads: the sum over the shapes); `result`: the result
    document (store/: OperatorRunResult, RunResult for scan, BatchedScanResult, SegmentedScanResult,
    HgemmRunResult); `verification`: its verdict (defaults to `result.verification`; HGEMM: the one shape's, or
    over a workload's shapes whether all that were checked passed); `sim` / `baseline`: the simulated run and its
    baseline's (None where there is none); `trace`: the SimResults the Chrome trace writer draws (default
    [sim]); `arrays`: the outputs by name (None with model_only, or when not kept); `notes`: the report's
    notes; `extras`: what only one kernel has (scan: "memcpy", the memcpy reference run)."""

    spec: KernelSpec
    params: KernelParams
    hw: HardwareProfile
    result: Any
    sim: SimResult
    baseline: SimResult | None = None
    arrays: dict[str, np.ndarray] | None = None
    notes: list[str] = field(default_factory=list)
    time_s: float | None = None
    verification: Any = None
    trace: list[SimResult] | None = None
    extras: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.time_s is None:
            self.time_s = self.sim.time_s
        if self.verification is None:
            self.verification = self.result.verification
        if self.trace is None:
            self.trace = [self.sim]


@dataclass(frozen=True)
class ExtraOption:
    """An option of `run <kernel>` that is not a field of its Params model: one of the kernel's own run options
    (scan's --generator, HGEMM's --workload and --a/--b/--c files), or a field taken in another form than its
    model's (scan's --chunk: 'auto', 'off' or a count), which the command's steps convert.

    name: the parameter's name (a run option's or the field's); decls: the option's spellings ("--x/--no-x" for a
    bool); kind: "count" (1e6, 2**20), "float", "path", "bool" or "text"; default; help (with choices given as a
    function, "{choices}" in it is replaced by the values); choices: the values, a tuple or a function giving
    them (read when the command is made); closed: only those values (False: --help and shell completion offer
    them, the kernel's own check refuses others); metavar: the value's name in --help (default: the builder's)."""

    name: str
    decls: tuple[str, ...]
    kind: Literal["count", "float", "path", "bool", "text"] = "text"
    default: Any = None
    help: str = ""
    choices: tuple[Any, ...] | Callable[[], Iterable[Any]] | None = None
    closed: bool = True
    metavar: str | None = None


@dataclass(frozen=True)
class RunCommand:
    """What `run <kernel>` says beyond the kernel's model (commands/generic.py makes the command from both).

    doc: the command's help (default: the title and source). help: an option's help by parameter name, for
    the kernel's fields (listed ones first, in this order; the rest keep their description) and the shared
    options seed, input_file, output_file, verify, model_only, trace, out. model_only: the command offers
    --model-only. output: the suffix --output-file takes (".npz", ".npy", or ".npy/.npz" for either).
    from_input: further fields whose option has no default and is passed only when given (an input array sets
    them, like the size and the dtype, or the kernel's default depends on other options).
    extras: options beyond the model's fields (ExtraOption; one named like a field replaces its option).
    omit: shared options the command does not have (scan's "verify": it always verifies; HGEMM's "input_file":
    its matrices come as --a, --b, --c). order: every option's parameter name in --help order (default: the
    builder's; see generic.run_parameters). steps: the module under ascendbench.commands with the command's own
    steps (checks before the run, its output array, its report; see generic.add_run_commands), default the
    operators' (run_operators)."""

    doc: str | None = None
    help: Mapping[str, str] = field(default_factory=dict)
    model_only: bool = True
    output: str = ".npz"
    from_input: tuple[str, ...] = ()
    extras: tuple[ExtraOption, ...] = ()
    omit: tuple[str, ...] = ()
    order: tuple[str, ...] = ()
    steps: str = "run_operators"


@dataclass(frozen=True)
class TuneCommand:
    """What `tune <kernel>` says beyond the kernel's model (commands/generic.py makes the command from both: one
    option per field the search space does not tune, spelled as in `run`, then the options every `tune` has).

    doc: the command's help (default: the title, the tuned fields, "compare with the paper's choice"). help: an
    option's help by field name (default: the field's description). extras: the kernel's own problem options
    beyond its fields (ExtraOption, e.g. HGEMM's --workload; the same objects as run's where they are the same
    option). omit: fields the command does not have (the kernel's problems do not take them: scan's l2).
    order: the kernel's options (fields and extras) in --help order, every one once (default: the model's order,
    then the extras); the shared tuning options follow."""

    doc: str | None = None
    help: Mapping[str, str] = field(default_factory=dict)
    extras: tuple[ExtraOption, ...] = ()
    omit: tuple[str, ...] = ()
    order: tuple[str, ...] = ()


class KernelSpec:
    """Base class of the kernels in the registry (see the module docstring). Subclasses set the class attributes
    and override the methods their kernel needs; the defaults suit a 1-D kernel on `n` elements of `dtype`."""

    name: ClassVar[str]
    title: ClassVar[str]
    source: ClassVar[str]
    family: ClassVar[str] = "operator"  # "scan", "row-scan", "operator" or "gemm"
    Params: ClassVar[type[KernelParams]]
    inputs: ClassVar[tuple[InputSpec, ...]] = ()
    variants: ClassVar[tuple[str, ...]] = ()  # the paper's variant first, then its baseline
    space: ClassVar[str | None] = None  # search space file stem under tuning_spaces/
    unit: ClassVar[str] = "GB/s"  # the tuner's throughput unit
    streaming: ClassVar[bool] = False  # its functional run streams (run_streaming; see the module docstring)
    run_options: ClassVar[tuple[str, ...]] = ()  # a streaming kernel's run options beyond Params (progress, ...)
    size_field: ClassVar[str] = "n"  # the parameter that is the problem size
    command: ClassVar[str | None] = None  # the `run` command that runs it, when not `run <name>`
    false_flags: ClassVar[dict[str, str]] = {}  # bool field -> its option for False, when not --no-<field>
    aliases: ClassVar[dict[str, tuple[str, ...]]] = {}  # field -> further options of it (topp: vocab -> --n)
    tunable_class: ClassVar[type | None] = None  # the tuner's view when not derived from the contract (tunable.py)
    draws: ClassVar[bool] = False  # a sampling kernel: the seed also seeds its draws (always recorded)
    default_hardware: ClassVar[str] = DEFAULT_SCAN_HARDWARE  # the scan paper's chip (the CLI's default too)
    run_command: ClassVar[RunCommand] = RunCommand()  # the help and options `run <name>` adds to the model's
    tune_command: ClassVar[TuneCommand] = TuneCommand()  # the help and options `tune <space>` adds to the model's

    # ----- parameters -----------------------------------------------------------------------------------------
    def params(self, values: Mapping[str, Any] | None = None, **kwargs: Any) -> KernelParams:
        """The validated parameter model of `values` (and keyword arguments). Raises ParamError naming the first
        bad field as its option (--field-name) and what is allowed."""
        try:
            return self.Params.model_validate(_python_scalars({**(values or {}), **kwargs}))
        except ValidationError as exc:
            raise param_error(exc, self.name, self.Params.model_fields) from None

    def replace(self, params: KernelParams, **changes: Any) -> KernelParams:
        """A copy of params with fields changed, validated again."""
        return self.params(params.model_dump() | changes)

    def flag(self, field: str) -> str:
        """The option of a bool field, spelled alike in `run` and `tune`: "--<field>/<False option>" (the False
        option from false_flags, else --no-<field>), e.g. "--descending/--ascending"."""
        option = field.replace("_", "-")
        return f"--{option}/{self.false_flags.get(field, '--no-' + option)}"

    def options(self, field: str) -> tuple[str, ...]:
        """The option declarations of a field in `run` and `tune`: ("--<field>", *aliases), or (flag(field),) for a
        bool field."""
        if self.Params.model_fields[field].annotation is bool:
            return (self.flag(field),)
        return ("--" + field.replace("_", "-"), *self.aliases.get(field, ()))

    def size(self, params: KernelParams) -> int:
        """Elements of the problem (what the report calls n)."""
        return int(getattr(params, self.size_field))

    def space_file(self):
        """The search space file (default tuning_spaces/<space>.toml, shipped in the package)."""
        from ascendbench.tuning.space import space_path

        return space_path(self.space)

    def tuned(self) -> tuple[str, ...]:
        """The fields the search space tunes (none when the kernel has no space)."""
        return () if self.space is None else _space_parameters(self.space_file())

    def problem_of(self, params: KernelParams) -> dict[str, Any]:
        """The problem part of params: every field the search space does not tune (JSON-ready)."""
        tuned = set(self.tuned())
        return {k: v for k, v in params.model_dump(mode="json").items() if k not in tuned}

    def data_note(self, config: Mapping[str, Any]) -> str | None:
        """Why `run` of this configuration may take another simulated time than the tuner gave it: the kernel's
        work depends on its input's values, which the tuner does not have (None: it does not)."""
        return None

    def heuristic(self, problem: Mapping[str, Any], hw: HardwareProfile) -> dict[str, Any]:
        """The paper's choice of the tuned fields for a problem (default: the model's defaults)."""
        defaults = self.Params.model_fields
        return {name: defaults[name].default for name in self.tuned()}

    # ----- the steps of the pipeline ---------------------------------------------------------------------------
    def check(self, params: KernelParams, hw: HardwareProfile) -> None:
        """Refuse (ParamError) what the model alone cannot: hardware limits, buffer capacities."""

    def check_array_names(self, arrays: Mapping[str, np.ndarray]) -> None:
        """Raises ParamError naming --input when `arrays` holds a name that is not one of the kernel's inputs, or
        lacks its first input (overrides of `bind` call it before they read an array by name)."""
        unknown = sorted(set(arrays) - {spec.name for spec in self.inputs})
        if unknown:
            raise ParamError("input", f"unexpected array {unknown[0]!r}; allowed names: "
                                      f"{', '.join(spec.name for spec in self.inputs)}")
        if self.inputs and self.inputs[0].name not in arrays:
            raise ParamError("input", f"needs an array named {self.inputs[0].name!r}")

    def bind(self, params: KernelParams, arrays: Mapping[str, np.ndarray]) -> KernelParams:
        """Params completed from the user's input arrays: the size and the dtype are the arrays' (a given one must
        agree). Raises ParamError naming the option that disagrees."""
        main = self.inputs[0] if self.inputs else None
        self.check_array_names(arrays)
        first = arrays[main.name] if main is not None else next(iter(arrays.values()))
        for spec in self.inputs:  # 1-D inputs: each (n,), all of one length
            array = arrays.get(spec.name)
            if spec.shape != "(n,)" or array is None:
                continue
            if array.ndim != 1:
                raise ParamError("input", f"array {spec.name!r} must be 1-D, got shape {tuple(array.shape)}")
            if array.shape != first.shape:
                raise ParamError("input", f"array {spec.name!r} must have the length of {main.name!r} "
                                          f"({first.shape[0]}), got {array.shape[0]}")
        if main is not None and dtype_name(first.dtype) not in main.dtypes:
            raise ParamError("input", f"array {main.name!r} must be one of {', '.join(main.dtypes)}, got {first.dtype}")
        changes: dict[str, Any] = {}
        length = int(first.shape[-1])
        if self.size_field in params.model_fields_set and self.size(params) != length:
            raise ParamError(self.size_field, f"{self.size(params)} disagrees with the input's length {length}; "
                                              f"drop --{self.size_field} or make them equal")
        changes[self.size_field] = length
        if "dtype" in self.Params.model_fields:
            name = dtype_name(first.dtype)
            if "dtype" in params.model_fields_set and params.dtype != name:
                raise ParamError("dtype", f"{params.dtype} disagrees with the input's {name}; drop --dtype")
            changes["dtype"] = name
        return self.replace(params, **changes)

    def generate(self, params: KernelParams, seed: int) -> dict[str, np.ndarray]:
        """Seeded inputs for params (see `inputs` for how each is generated)."""
        raise NotImplementedError

    def complete(self, arrays: Mapping[str, np.ndarray], params: KernelParams, seed: int
                 ) -> tuple[dict[str, np.ndarray], list[str]]:
        """The user's arrays made whole: every input present (default: all are required), with notes saying what
        was generated or converted. Raises ParamError (option "input") naming what is missing or wrong."""
        missing = [spec.name for spec in self.inputs if spec.name not in arrays]
        if missing:
            raise ParamError("input", f"needs the array{'s' if len(missing) > 1 else ''} {', '.join(missing)}")
        return dict(arrays), []

    def describe_size(self, params: KernelParams) -> str:
        """The problem size in words, for messages ("1,000,000 elements")."""
        return f"{self.size(params):,} elements"

    def check_functional(self, params: KernelParams) -> None:
        """Refuse (ParamError) a problem the functional run cannot take but the timing model can (e.g. sampling
        from no categories)."""

    def functional_bytes(self, params: KernelParams, generated: bool) -> tuple[int, str]:
        """Host memory the functional run needs (inputs when `generated`, outputs, NumPy temporaries), in bytes,
        and the option that sets most of it."""
        return self.size(params) * 32, self.size_field

    def compute(self, arrays: Mapping[str, np.ndarray], params: KernelParams, seed: int = 0) -> Outcome:
        """The functional run on the input arrays; seed: of the draws of sampling kernels."""
        raise NotImplementedError

    def verify(self, arrays: Mapping[str, np.ndarray], outcome: Outcome, params: KernelParams) -> Check:
        """The outputs against the NumPy reference."""
        raise NotImplementedError

    def simulate(self, params: KernelParams, hw: HardwareProfile, facts: Mapping[str, Any] | None = None
                 ) -> SimResult:
        """The timing model of params on hw. facts: data-dependent quantities of a functional run (None: the
        paper's assumption for generated data, e.g. half the flags true)."""
        raise NotImplementedError

    def baseline(self, params: KernelParams) -> KernelParams | None:
        """The same problem with the paper's baseline variant (None when the kernel has none)."""
        if len(self.variants) < 2 or "variant" not in self.Params.model_fields:
            return None
        other = self.variants[1] if params.variant == self.variants[0] else self.variants[0]
        return self.replace(params, variant=other)

    def bytes_moved(self, params: KernelParams, facts: Mapping[str, Any] | None = None) -> float:
        """Bytes the kernel must read and write once (what bandwidth counts)."""
        raise NotImplementedError

    def dtypes(self, params: KernelParams, outcome: Outcome | None,
               arrays: Mapping[str, np.ndarray] | None = None) -> dict[str, str]:
        """Array name -> dtype of the inputs and outputs, for the result document."""
        return {}

    def notes(self, params: KernelParams, hw: HardwareProfile) -> list[str]:
        """Lines the report prints under the table (how the run was modelled)."""
        return []

    def model_outputs(self, params: KernelParams, hw: HardwareProfile) -> dict[str, Any]:
        """Scalars of the timing model the report and the document show (also without a functional run)."""
        return {}

    def document_params(self, params: KernelParams, sim: SimResult) -> dict[str, Any]:
        """The `params` of the result document: every field but the size, the dtype and the variant (recorded
        apart)."""
        return params.model_dump(mode="json", exclude={self.size_field, "dtype", "variant"})

    # ----- streaming kernels ----------------------------------------------------------------------------------
    def run_params(self, values: Mapping[str, Any], options: Mapping[str, Any]) -> KernelParams:
        """A streaming kernel's validated parameters, given its run options too (HGEMM: a workload or input
        files give the shape)."""
        return self.params(values)

    def refuse_data(self, arrays: Mapping[str, np.ndarray] | None, input_file) -> None:
        """Raise ParamError for input data this streaming kernel does not take that way (HGEMM: its .npy files)."""

    def run_streaming(self, ctx, /, **options: Any) -> KernelRun:
        """The streaming functional run, timing model, verification and result document (streaming kernels;
        ctx: kernels/run_steps.RunContext, the checked parameters in ctx.params)."""
        raise NotImplementedError(f"{self.name} runs through the pipeline's own steps")


DTYPE_NAMES = {
    "fp16": np.float16, "fp32": np.float32, "int8": np.int8, "uint8": np.uint8, "int16": np.int16,
    "uint16": np.uint16, "int32": np.int32, "uint32": np.uint32,
}


def dtype_name(dtype: np.dtype) -> str:
    """The CLI name of a NumPy dtype (fp16, int8, ...); NumPy's own name for others."""
    for name, t in DTYPE_NAMES.items():
        if np.dtype(t) == dtype:
            return name
    return str(dtype)


def generate_values(n: int, dtype: str, rng: np.random.Generator) -> np.ndarray:
    """Seeded test values of a CLI dtype: floats standard normal, integers uniform over the dtype's whole range.
    (n,) of that dtype."""
    t = np.dtype(DTYPE_NAMES[dtype])
    if t.kind == "f":
        return rng.standard_normal(n, dtype=np.float32).astype(t)
    info = np.iinfo(t)
    return rng.integers(info.min, info.max, size=n, dtype=t, endpoint=True)


def values_input(dtypes: tuple[str, ...]) -> InputSpec:
    """The (n,) input 'values' of the dtypes given, generated by generate_values."""
    return InputSpec("values", tuple(dtypes), "(n,)", "standard normal (floats), uniform over the dtype (integers)")


def random_flags(n: int, rng: np.random.Generator) -> np.ndarray:
    """(n,) uint8 flags, each 0 or 1 with probability 1/2 (the scan paper's split and compress inputs)."""
    return rng.integers(0, 2, size=n, dtype=np.uint8)
