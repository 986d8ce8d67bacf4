"""A toy kernel in one module: what a new kernel needs to appear in `ascendbench run`, `tune`, `kernels`,
`ascendbench.run` and the shared contract tests (tests/kernels/test_registry_contract.py), with one registry line:

    registry.register_spec(ToyReverseKernel())

It reverses n values (x[::-1]) on all AIVs: one copy pass through UB (variant "slow": two, its baseline). Its
search space is toy_kernel.toml beside this module."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import Field

from ascendbench.kernels.contract import Check, InputSpec, KernelParams, KernelSpec, Outcome, OptionalCount, WarmL2
from ascendbench.kernels.programs import copy_pass
from ascendbench.sim.result import fixed_cost, sequence


class ToyReverseParams(KernelParams):
    """Reverse n values of `dtype`."""

    n: OptionalCount = None
    dtype: Literal["fp16", "int8"] = Field("fp16", description="values dtype")
    variant: Literal["copy", "slow"] = Field("copy", description="copy: one pass; slow: two passes")
    warm_l2: WarmL2 = False


class ToyReverseKernel(KernelSpec):
    """x[::-1]: the outputs are the input values in reverse order, bit for bit."""

    name = "toy-reverse"
    title = "Reverse (a toy kernel)"
    source = "tests/toy_kernel.py"
    Params = ToyReverseParams
    inputs = (InputSpec("values", ("fp16", "int8"), "(n,)", "standard normal, cast to the dtype"),)
    variants = ("copy", "slow")
    space = "toy-reverse"

    def space_file(self) -> Path:
        return Path(__file__).with_name("toy_kernel.toml")

    def generate(self, params, seed):
        rng = np.random.default_rng(seed)
        return {"values": rng.standard_normal(params.n).astype(np.float16 if params.dtype == "fp16" else np.int8)}

    def compute(self, arrays, params, seed=0):
        return Outcome({"values": arrays["values"][::-1].copy()})

    def verify(self, arrays, outcome, params):
        ok = np.array_equal(outcome.arrays["values"].view(np.uint8), arrays["values"][::-1].copy().view(np.uint8))
        return Check(ok, "np.flip(values), bit for bit", None if ok else "values differ")

    def simulate(self, params, hw, facts=None):
        launch = fixed_cost(hw, hw.kernel_launch_us * 1e-6 * hw.clock_hz, "launch", kernel_launches=1)
        width = self.value_bytes(params)
        copy = copy_pass(hw, params.n, width, width, params.warm_l2, "reverse", False)
        return sequence([(launch, 1), (copy, 2 if params.variant == "slow" else 1)])

    def bytes_moved(self, params, facts=None):
        return 2 * params.n * self.value_bytes(params)

    def dtypes(self, params, outcome, arrays=None):
        return {"values": params.dtype}

    @staticmethod
    def value_bytes(params) -> int:
        return 2 if params.dtype == "fp16" else 1
