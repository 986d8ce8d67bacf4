"""The tuning contract: what a kernel offers the tuner (problems, heuristic, one timed evaluation).

Every kernel of the registry (kernels/registry.py: `get_tunable`) that declares a search space (`space`, a file
tuning_spaces/<space>.toml) is tunable: `SpecTunable` derives the tuner's view from the kernel's
contract (its Params model checks the space's values, its timing model evaluates a configuration, its
`heuristic` is trial 0). HGEMM, the 1-D scans and the batched scans keep their own classes below, for their
problem keys and the papers' heuristics.

A *problem* is a plain dict of Python ints/strings (JSON-ready): for HGEMM {"m", "n", "k", "batch"}, for scans
{"n", "dtype", "exclusive"}. A *configuration* is a plain dict of the search space's parameters.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from ascendbench.hardware import HardwareProfile
from ascendbench.kernels.base import ParamError, get_kernel
from ascendbench.kernels.batched_scan import BatchedScanParams, simulate_batched
from ascendbench.kernels.batched_scan import check as check_batched
from ascendbench.kernels.contract import KernelSpec
from ascendbench.kernels.hgemm import GemmShape, HgemmParams, resolve_tiling, simulated_seconds
from ascendbench.kernels.scan import S_VALUES, ScanParams, auto_chunk
from ascendbench.sim.engine import BufferCapacityError

__all__ = ["BatchedScanTunable", "Evaluation", "HgemmTunable", "Infeasible", "ScanTunable", "SpecTunable",
           "Tunable"]


class Infeasible(Exception):
    """A configuration the kernel cannot run (a buffer overflows, a parameter out of range); `reason` says why."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Evaluation:
    """One timed configuration. time_s: simulated seconds; throughput in `unit` (TFLOPS or GB/s)."""

    time_s: float
    throughput: float
    unit: str


class Tunable(Protocol):
    """A kernel family the tuner can search.

    name: the family's name, also the search space file's stem (tuning_spaces/<name>.toml).
    `check` raises Infeasible (with the kernel's reason) for a configuration the kernel refuses before simulating
    it, in microseconds, so that the tuner can skip it before a trial is made; `evaluate` still raises
    Infeasible for what only a simulation finds.
    """

    name: str

    def problem_key(self, problem: Mapping[str, Any]) -> str: ...

    def heuristic(self, problem: Mapping[str, Any], hw: HardwareProfile) -> dict[str, Any]: ...

    def check(self, problem: Mapping[str, Any], config: Mapping[str, Any], hw: HardwareProfile) -> None: ...

    def evaluate(self, problem: Mapping[str, Any], config: Mapping[str, Any], hw: HardwareProfile) -> Evaluation: ...

    def check_values(self) -> dict[str, Callable[[Any], bool]]: ...

    def run_command(self, problem: Mapping[str, Any], config: Mapping[str, Any]) -> list[str]: ...


def _flag(name: str, value: Any) -> list[str]:
    """A `run` option for one value: --name value, or --name / --no-name for a bool (underscores as dashes)."""
    flag = name.replace("_", "-")
    if isinstance(value, bool):
        return [f"--{flag}" if value else f"--no-{flag}"]
    return [f"--{flag}", str(value)]


class HgemmTunable:
    """HGEMM (proposed variant): M0, N0, K0, split_k, shuffle_k, padding, double_buffer.

    Heuristic: the HGEMM paper's self-adaptive selector (§4.2.3) with every optimisation on, SplitK off.
    Throughput in TFLOPS (2 M N K batch / time / 1e12). A problem is {"m", "n", "k", "batch"}, with
    "every_core": True to simulate every AI core instead of one per group of equal cores (slower, exact
    sharing of L2 and HBM; its studies are kept apart by the key)."""

    name = "hgemm"
    unit = "TFLOPS"

    def problem_key(self, problem: Mapping[str, Any]) -> str:
        key = f"{problem['m']}x{problem['n']}x{problem['k']}"
        key = key if problem.get("batch", 1) == 1 else f"{key}x{problem['batch']}"
        return f"{key} every-core" if problem.get("every_core") else key

    @staticmethod
    def _shape(problem: Mapping[str, Any]) -> GemmShape:
        return GemmShape(int(problem["m"]), int(problem["n"]), int(problem["k"]), int(problem.get("batch", 1)))

    def heuristic(self, problem: Mapping[str, Any], hw: HardwareProfile) -> dict[str, Any]:
        tiling = resolve_tiling(self._shape(problem), HgemmParams(), hw)
        return {"m0": tiling.m0, "n0": tiling.n0, "k0": tiling.k0, "split_k": 1, "shuffle_k": True,
                "padding": True, "double_buffer": True}

    def check_values(self) -> dict[str, Callable[[Any], bool]]:
        """The parameters a space must have, each with a test of the values it may take."""
        return {"m0": _multiple(16), "n0": _multiple(16), "k0": _multiple(8), "split_k": _multiple(1),
                "shuffle_k": _is_bool, "padding": _is_bool, "double_buffer": _is_bool}

    @staticmethod
    def _params(config: Mapping[str, Any]) -> HgemmParams:
        return HgemmParams(**{k: config[k] for k in ("m0", "n0", "k0", "split_k", "shuffle_k", "padding",
                                                     "double_buffer")})

    def run_command(self, problem: Mapping[str, Any], config: Mapping[str, Any]) -> list[str]:
        """`run hgemm` arguments that run the configuration on the problem (without --hardware)."""
        argv = ["run", "hgemm", "--m", str(problem["m"]), "--n", str(problem["n"]), "--k", str(problem["k"])]
        if problem.get("batch", 1) != 1:
            argv += ["--batch", str(problem["batch"])]
        for name in ("m0", "n0", "k0", "split_k", "shuffle_k", "padding", "double_buffer"):
            argv += _flag(name, config[name])
        return argv + (["--every-core"] if problem.get("every_core") else [])

    def check(self, problem: Mapping[str, Any], config: Mapping[str, Any], hw: HardwareProfile) -> None:
        """Raises Infeasible with the kernel's reason for an option out of range or a tile that does not fit
        L0A/L0B/L0C/L1/UB (resolve_tiling's checks, the first the simulation makes)."""
        try:
            resolve_tiling(self._shape(problem), self._params(config), hw)
        except (ParamError, BufferCapacityError) as exc:
            raise Infeasible(str(exc)) from None

    def evaluate(self, problem: Mapping[str, Any], config: Mapping[str, Any], hw: HardwareProfile) -> Evaluation:
        """Simulated time of one configuration. Raises Infeasible with the kernel's reason (a tile that does
        not fit L0A/L0B/L0C/L1/UB, an option out of range). A configuration that simulates the same run as
        one evaluated before in this process (hgemm.simulated_seconds: e.g. padding on or off where nothing is
        padded) gets that time without simulating again; clearing hgemm.RUN_CACHE forgets them."""
        shape = self._shape(problem)
        try:
            seconds = simulated_seconds(shape, self._params(config), hw,
                                        bool(problem.get("every_core", False)))
        except (ParamError, BufferCapacityError) as exc:
            raise Infeasible(str(exc)) from None
        tflops = shape.flops / seconds / 1e12 if seconds > 0 else 0.0
        return Evaluation(seconds, tflops, self.unit)


class ScanTunable:
    """Multi-core scans (MCScan, MCScanUL1): algorithm, s, blocks, chunk ("off" or elements per L2 chunk).

    Heuristic: the scan paper's choices (§6.1): MCScanUL1 with s = 128 on all AI cores, L2 splitting by the
    rule of §6.1.1. Throughput in GB/s (input read once plus output written once, 1e9 bytes/s)."""

    name = "scan"
    unit = "GB/s"

    def problem_key(self, problem: Mapping[str, Any]) -> str:
        kind = "exclusive" if problem.get("exclusive") else "inclusive"
        return f"n={problem['n']} {problem.get('dtype', 'fp16')} {kind}"  # as `results compare` names runs

    def heuristic(self, problem: Mapping[str, Any], hw: HardwareProfile) -> dict[str, Any]:
        dtype = problem.get("dtype", "fp16")
        algorithm = "mcscan" if dtype == "int8" else "mcscan-ul1"  # ScanUL1 variants are fp16 only
        params = ScanParams(dtype=dtype)
        split = int(problem["n"]) * (params.in_bytes + params.out_bytes) > hw.l2_bytes
        return {"algorithm": algorithm, "s": 128, "blocks": hw.ai_cores,
                "chunk": auto_chunk(hw, params) if split else "off"}

    def check_values(self) -> dict[str, Callable[[Any], bool]]:
        """The parameters a space must have, each with a test of the values it may take."""
        return {"algorithm": lambda v: v in _MULTI_CORE_SCANS, "s": lambda v: _is_int(v) and v in S_VALUES,
                "blocks": _multiple(1), "chunk": lambda v: v == "off" or (_is_int(v) and v >= 1)}

    def run_command(self, problem: Mapping[str, Any], config: Mapping[str, Any]) -> list[str]:
        """`run scan` arguments that run the configuration on the problem (without --hardware)."""
        return ["run", "scan", "--n", str(problem["n"]), "--algorithm", config["algorithm"], "--s", str(config["s"]),
                "--blocks", str(config["blocks"]), "--chunk", str(config["chunk"]),
                "--dtype", problem.get("dtype", "fp16"), "--exclusive" if problem.get("exclusive") else "--inclusive"]

    @staticmethod
    def _params(problem: Mapping[str, Any], config: Mapping[str, Any]) -> ScanParams:
        chunk = config["chunk"]
        return ScanParams(s=int(config["s"]), blocks=int(config["blocks"]), chunk=0 if chunk == "off" else int(chunk),
                          exclusive=bool(problem.get("exclusive", False)), dtype=problem.get("dtype", "fp16"))

    def check(self, problem: Mapping[str, Any], config: Mapping[str, Any], hw: HardwareProfile) -> None:
        """Raises Infeasible with the kernel's reason when the scan kernel's checks refuse the configuration."""
        try:
            get_kernel(config["algorithm"]).check(int(problem["n"]), self._params(problem, config), hw)
        except (ParamError, BufferCapacityError) as exc:
            raise Infeasible(str(exc)) from None

    def evaluate(self, problem: Mapping[str, Any], config: Mapping[str, Any], hw: HardwareProfile) -> Evaluation:
        """Simulated time of one configuration. Raises Infeasible with the kernel's reason."""
        n = int(problem["n"])
        params = self._params(problem, config)
        kernel = get_kernel(config["algorithm"])
        try:
            sim = kernel.simulate(n, params, hw)  # simulate runs the kernel's checks first
        except (ParamError, BufferCapacityError) as exc:
            raise Infeasible(str(exc)) from None
        moved = n * (params.in_bytes + params.out_bytes)
        return Evaluation(sim.time_s, moved / sim.time_s / 1e9 if sim.time_s > 0 else 0.0, self.unit)


class BatchedScanTunable:
    """Batched scans (appendix B.1 of the scan paper): algorithm (scanu, scanul1) and s.

    Heuristic: the scan paper's crossover (claim S-14): ScanU with its 2:1 vector/cube scheduling for more than
    18 rows shorter than 4096, ScanUL1 with one AI core per row otherwise (ScanU for int8), s = 128.
    Throughput in GB/s (input read once plus output written once)."""

    name = "batched-scan"
    unit = "GB/s"

    def problem_key(self, problem: Mapping[str, Any]) -> str:
        kind = "exclusive" if problem.get("exclusive") else "inclusive"
        return f"{problem['batch']}x{problem['length']} {problem.get('dtype', 'fp16')} {kind}"

    def heuristic(self, problem: Mapping[str, Any], hw: HardwareProfile) -> dict[str, Any]:
        many_short = int(problem["batch"]) > 18 and int(problem["length"]) < 4096
        algorithm = "scanu" if many_short or problem.get("dtype", "fp16") == "int8" else "scanul1"
        return {"algorithm": algorithm, "s": 128}

    def check_values(self) -> dict[str, Callable[[Any], bool]]:
        """The parameters a space must have, each with a test of the values it may take."""
        return {"algorithm": lambda v: v in ("scanu", "scanul1", "vector"),
                "s": lambda v: _is_int(v) and v in S_VALUES}

    def run_command(self, problem: Mapping[str, Any], config: Mapping[str, Any]) -> list[str]:
        """`run batched-scan` arguments that run the configuration on the problem (without --hardware)."""
        return ["run", "batched-scan", "--batch", str(problem["batch"]), "--length", str(problem["length"]),
                "--algorithm", config["algorithm"], "--s", str(config["s"]), "--dtype", problem.get("dtype", "fp16"),
                "--exclusive" if problem.get("exclusive") else "--inclusive"]

    @staticmethod
    def _params(problem: Mapping[str, Any], config: Mapping[str, Any]) -> BatchedScanParams:
        return BatchedScanParams(algorithm=config["algorithm"], s=int(config["s"]),
                                 exclusive=bool(problem.get("exclusive", False)), dtype=problem.get("dtype", "fp16"))

    def check(self, problem: Mapping[str, Any], config: Mapping[str, Any], hw: HardwareProfile) -> None:
        """Raises Infeasible with the kernel's reason when the batched scan's checks refuse the configuration
        (buffer capacities are found by the simulation)."""
        try:
            check_batched(int(problem["batch"]), int(problem["length"]), self._params(problem, config))
        except ParamError as exc:
            raise Infeasible(str(exc)) from None

    def evaluate(self, problem: Mapping[str, Any], config: Mapping[str, Any], hw: HardwareProfile) -> Evaluation:
        """Simulated time of one configuration. Raises Infeasible with the kernel's reason."""
        params = self._params(problem, config)
        batch, length = int(problem["batch"]), int(problem["length"])
        try:
            sim = simulate_batched(batch, length, params, hw).sim
        except (ParamError, BufferCapacityError) as exc:
            raise Infeasible(str(exc)) from None
        moved = batch * length * (params.scan.in_bytes + params.scan.out_bytes)
        return Evaluation(sim.time_s, moved / sim.time_s / 1e9 if sim.time_s > 0 else 0.0, self.unit)


_MULTI_CORE_SCANS = ("mcscan", "mcscan-ul1")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_bool(value: Any) -> bool:
    return isinstance(value, bool)


def _multiple(step: int) -> Callable[[Any], bool]:
    return lambda v: _is_int(v) and v >= step and v % step == 0


class SpecTunable:
    """The tuner's view of a registry kernel with a search space: a problem is the kernel's parameters the space
    does not tune, a configuration the ones it tunes; both are validated by the kernel's Params model."""

    def __init__(self, spec: KernelSpec):
        self.spec = spec
        self.name = spec.space
        self.unit = spec.unit

    def problem_key(self, problem: Mapping[str, Any]) -> str:
        size, fields = self.spec.size_field, self.spec.Params.model_fields
        rest = " ".join(f"{k}={v}" for k, v in problem.items()
                        if k != size and v is not None and not (k in fields and fields[k].default == v))
        return f"{size}={problem.get(size)}" + (f" {rest}" if rest else "")

    def heuristic(self, problem: Mapping[str, Any], hw: HardwareProfile) -> dict[str, Any]:
        return self.spec.heuristic(problem, hw)

    def check_values(self) -> dict[str, Callable[[Any], bool]]:
        """The tuned fields, each with a strict check of one value against the kernel's Params model."""
        from pydantic import TypeAdapter, ValidationError

        def test(name: str) -> Callable[[Any], bool]:
            field = self.spec.Params.model_fields[name]
            adapter = TypeAdapter(field.annotation)

            def ok(value: Any) -> bool:
                try:
                    adapter.validate_python(value, strict=True)
                except ValidationError:
                    return False
                return True
            return ok

        return {name: test(name) for name in self.spec.tuned()}

    def run_command(self, problem: Mapping[str, Any], config: Mapping[str, Any]) -> list[str]:
        """The kernel's `run` arguments (KernelSpec.command, else `run <name>`) with one option per problem and
        configuration field (None and booleans at their default left out: some `run` commands have a flag only
        for the other value), as commands/generic.py names them, or KernelSpec.false_flags (without
        --hardware)."""
        argv = ["run", *(self.spec.command or self.spec.name).split()]
        fields = self.spec.Params.model_fields
        for name, value in {**problem, **config}.items():
            if value is None or (isinstance(value, bool) and name in fields and fields[name].default == value):
                continue
            if value is False and name in self.spec.false_flags:
                argv.append(self.spec.false_flags[name])
            else:
                argv += _flag(name, value)
        return argv

    def check(self, problem: Mapping[str, Any], config: Mapping[str, Any], hw: HardwareProfile) -> None:
        """Raises Infeasible with the kernel's reason when its Params model or its check refuses the
        configuration."""
        try:
            self.spec.check(self.spec.params({**problem, **config}), hw)
        except (ParamError, BufferCapacityError, ValueError) as exc:
            raise Infeasible(str(exc)) from None

    def evaluate(self, problem: Mapping[str, Any], config: Mapping[str, Any], hw: HardwareProfile) -> Evaluation:
        """Simulated time of one configuration. Raises Infeasible with the kernel's reason."""
        try:
            params = self.spec.params({**problem, **config})
            self.spec.check(params, hw)
            sim = self.spec.simulate(params, hw)
        except (ParamError, BufferCapacityError, ValueError) as exc:
            raise Infeasible(str(exc)) from None
        moved = self.spec.bytes_moved(params)
        return Evaluation(sim.time_s, moved / sim.time_s / 1e9 if sim.time_s > 0 else 0.0, self.unit)
