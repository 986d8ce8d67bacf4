"""Registry entries of the kernels whose functional run streams through partitions: the 1-D scans (ScanU,
ScanUL1, MCScan, MCScanUL1, the vector-only CumSum and memcpy), the batched and segmented scans and HGEMM with
its GemmExample baseline. Their parameters, checks and timing models follow the contract (kernels/contract.py);
their functional step (`run_streaming`, called by the pipeline: ascendbench.run) streams the input partition by
partition and verifies on the fly, in their run modules: kernels/scan_run.py, row_scan_run.py, hgemm_run.py.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from ascendbench.hardware import HardwareProfile
from ascendbench.kernels.base import BufferCapacityError, ParamError, get_kernel
from ascendbench.kernels.contract import (
    FROM_INPUT,
    MAX_ELEMENTS,
    ExtraOption,
    InputSpec,
    KernelParams,
    KernelSpec,
    OptionalCount,
    RunCommand,
    TileSide,
    TuneCommand,
    WarmL2,
)
from ascendbench.kernels.partition import GENERATORS, PARTITION_LIMIT
from ascendbench.kernels.run_steps import RunOptions
from ascendbench.kernels.scan import L2_STARTS, S_VALUES, ScanParams
from ascendbench.kernels.tunable import BatchedScanTunable, HgemmTunable, ScanTunable
from ascendbench.sim.result import SimResult
from ascendbench.workloads import list_workloads

__all__ = ["BatchedScanKernel", "HgemmKernel", "ScanKernelEntry", "SegmentedScanKernel"]

assert S_VALUES == (16, 32, 64, 128)  # TileSide's choices


class ScanRunParams(KernelParams):
    """A 1-D scan of n elements (scan paper §3, §4)."""

    n: OptionalCount = None
    algorithm: Literal["mcscan-ul1", "mcscan", "scanu", "scanul1", "vec-cumsum", "memcpy"] | None = Field(
        None, description="the scan kernel (default: mcscan-ul1 where every row's fp16 sum fits its fp16 C1, "
                          "else mcscan; mcscan for int8)")
    s: TileSide = 128
    blocks: int | None = Field(None, ge=1, le=2**20, description="blocks of the multi-core scans (default: all "
                                                                 "AI cores)")
    chunk: int | None = Field(None, ge=0, le=MAX_ELEMENTS, description="elements per L2 chunk (None: the paper's "
                                                                       "rule, 0: off)")
    exclusive: bool = Field(False, description="exclusive instead of inclusive scan")
    dtype: Literal["fp16", "int8"] = Field("fp16", description="input dtype")
    out_dtype: Literal["fp32", "fp16", "int32"] | None = Field(None, description="output dtype (default fp32 "
                                                                                 "for fp16, int32 for int8)")
    l2: Literal[L2_STARTS] = Field("flushed", description="what L2 holds at the start")  # type: ignore[valid-type]

    @property
    def scan(self) -> ScanParams:
        return ScanParams(s=self.s, blocks=self.blocks, chunk=self.chunk, exclusive=self.exclusive, dtype=self.dtype,
                          out_dtype=self.out_dtype)


class ScanKernelEntry(KernelSpec):
    """The 1-D scans of `run scan`: one entry, the algorithm a parameter (kernels.KERNELS holds each one)."""

    name = "scan"
    title = "1-D scan (ScanU, ScanUL1, MCScan, MCScanUL1, vector-only CumSum, memcpy)"
    source = "scan paper §3-§4, Algorithms 1-4; the authors' scan_single_core.cpp, scan_multi_core.cpp"
    family = "scan"
    Params = ScanRunParams
    inputs = (InputSpec("x", ("fp16", "int8"), "(n,)", "fp16 uniform in [0, 1), int8 uniform in [-128, 127]"),)
    space = "scan"
    streaming = True
    tunable_class = ScanTunable
    false_flags = {"exclusive": "--inclusive"}
    aliases = {"algorithm": ("-a",)}
    run_command = RunCommand(
        doc="Scan an array on the simulated Ascend NPU: simulated time, bandwidth, % of peak and of memcpy,\n"
            "phases, pipe utilisation and counters, with the result checked against NumPy.",
        help={
            "n": "Elements to scan: 100000000, 1e8, 100_000_000, 2**27 or 2**32+1. Optional with --input.",
            "algorithm": "Scan kernel: mcscan-ul1, mcscan, scanu, scanul1, vec-cumsum, memcpy (default: mcscan-ul1 "
                         "where every row's fp16 sum fits its fp16 C1, else mcscan, saying why; mcscan for int8).",
            "s": "Tile side s (s x s matrices): 16, 32, 64 or 128.",
            "blocks": "Blocks of the multi-core scans (default and at most: all AI cores).",
            "exclusive": "Exclusive or inclusive scan.",
            "dtype": "Input dtype: fp16 or int8 (default fp16, or the --input array's).",
            "out_dtype": "Output dtype: fp32 (default for fp16), fp16, int32 (int8 input).",
            "l2": "What L2 holds at the start: flushed (default: full of dirty lines, as the papers measured), "
                  "clean or warm (the input resident).",
            "seed": "Seed of the generated input.",
            "input_file": "Scan this 1-D float16 or int8 .npy array instead of generated data.",
            "output_file": "Save the scanned array as .npy (written as a memory map: any n).",
            "model_only": "Timings and counters only, no functional run.",
            "trace": "Write the timeline as a Chrome trace JSON (open it in Perfetto).",
            "out": "Result JSON path (default: results/runs/<kernel>/<time>-<id>.json).",
        },
        from_input=("l2",),
        extras=(
            ExtraOption("chunk", ("--chunk",), choices=("auto", "off"), closed=False, metavar="<str>",
                        help="Elements per L2 chunk: 'auto' (default: the paper's rule), 'off'/0, or a count such as "
                             "2**24."),  # completion offers the words; the count the command's steps parse
            ExtraOption("generator", ("--generator",), choices=GENERATORS, default="random",
                        help="Generated input: random (seeded), constant (ones) or counting; produced block by "
                             "block, so any n streams."),
            ExtraOption("partition_limit", ("--partition-limit",), "count", PARTITION_LIMIT,
                        help="Items per streaming partition (default 2**31-1; results do not depend on it)."),
            ExtraOption("warm_l2", ("--warm-l2/--no-warm-l2",), "bool", None,  # None: not given (--l2 decides)
                        help="Start with the input in L2 (the same as --l2 warm; default: off)."),
        ),
        omit=("verify",),  # the streaming scan always verifies, on the fly
        order=("n", "algorithm", "s", "blocks", "chunk", "exclusive", "dtype", "out_dtype", "seed", "input_file",
               "output_file", "generator", "partition_limit", "model_only", "l2", "warm_l2", "hardware", "trace",
               "out", "no_save", "json_out"),
        steps="run_scan",
    )
    tune_command = TuneCommand(
        doc="Tune the multi-core scans (algorithm, s, blocks, L2 chunk) for n elements (default: a problem set, "
            "1e8)\nand compare with the scan paper's choices (s = 128, all AI cores, L2 splitting of §6.1.1).",
        help={"n": "Elements (1e8, 2**27 and 100_000_000 work)."},
        omit=("out_dtype", "l2"),  # a scan's problem is n, dtype and exclusive (tuning/session.py)
        order=("n", "dtype", "exclusive"),
    )

    @staticmethod
    def algorithm(params) -> str:
        """The algorithm that runs: the given one, or the default's (its choice on data is run_scan's)."""
        return params.algorithm or ("mcscan" if params.dtype == "int8" else "mcscan-ul1")

    def check(self, params, hw):
        get_kernel(self.algorithm(params)).check(params.n, params.scan, hw)

    def simulate(self, params, hw, facts=None) -> SimResult:
        return get_kernel(self.algorithm(params)).simulate(params.n, params.scan, hw, l2=params.l2)

    def bytes_moved(self, params, facts=None):
        return params.n * (params.scan.in_bytes + params.scan.out_bytes)

    run_options = ("warm_l2", "progress", "generator", "out", "keep_output", "partition_limit", "output_path")

    def run_streaming(self, ctx, /, **options: Any):
        from ascendbench.kernels.scan_run import run_scan

        if not options.pop("verify"):
            raise ParamError("verify", "the streaming scan always verifies on the fly")
        values = ctx.params.model_dump(exclude_unset=True) | options  # its defaults for the rest
        return run_scan(ctx, RunOptions.take(values), **values)

    @staticmethod
    def estimate_functional_seconds(n: int, algorithm: str, params: ScanParams, hw: HardwareProfile) -> float:
        """Host seconds the streaming functional run of n elements would take (kernels/scan_run.py)."""
        from ascendbench.kernels.scan_run import estimate_functional_seconds

        return estimate_functional_seconds(n, algorithm, params, hw)


class _RowScanParams(KernelParams):
    s: TileSide = 128
    exclusive: bool = Field(False, description="exclusive instead of inclusive scan")
    dtype: Literal["fp16", "int8"] = Field("fp16", description="input dtype")
    warm_l2: WarmL2 = False


class BatchedRunParams(_RowScanParams):
    """A scan of every row of a (batch, length) array (scan paper appendix B.1)."""

    batch: int | None = Field(None, ge=0, le=MAX_ELEMENTS, description=f"rows{FROM_INPUT}")
    length: int | None = Field(None, ge=0, le=MAX_ELEMENTS, description=f"elements per row{FROM_INPUT}")
    algorithm: Literal["auto", "scanu", "scanul1", "vector"] = Field("auto", description="scanu, scanul1, auto "
                                                                     "(the faster by the timing model) or vector")


class BatchedScanKernel(KernelSpec):
    """Batched scans: ScanU with 2:1 vector/cube scheduling or ScanUL1 with one AI core per row."""

    name = "batched-scan"
    title = "Batched scan (rows of a 2-D array)"
    source = "scan paper appendix B.1; kernel_scan_batch.h"
    family = "row-scan"
    Params = BatchedRunParams
    inputs = (InputSpec("x", ("fp16", "int8"), "(batch, length)", "as run scan's"),)
    space = "batched-scan"
    streaming = True
    tunable_class = BatchedScanTunable
    false_flags = {"exclusive": "--inclusive"}
    aliases = {"algorithm": ("-a",)}
    size_field = "length"
    run_command = RunCommand(
        doc="Scan every row of a (batch, length) array (scan paper appendix B.1): simulated time, bandwidth,\n"
            "the algorithm auto chose, phases, pipe utilisation and counters, checked against NumPy row by row.",
        help={
            "batch": "Rows (independent arrays), e.g. 40. Optional with --input.",
            "length": "Elements per row: 65536, 64e3 or 2**16. Optional with --input.",
            "algorithm": "scanu (ScanU, 2:1 vector/cube), scanul1 (ScanUL1, one AI core per row), auto (the faster "
                         "by the timing model) or vector (vector-only baseline).",
            "s": "Tile side s (s x s matrices): 16, 32, 64 or 128.",
            "exclusive": "Exclusive or inclusive scan.",
            "dtype": "Input dtype: fp16 (fp32 output) or int8 (int32 output); default fp16 or the --input array's.",
            "warm_l2": "Start with the input in L2 (default: cold).",
            "seed": "Seed of the generated input.",
            "input_file": "Scan the rows of this 2-D (batch, length) float16 or int8 .npy array.",
            "output_file": "Save the scanned rows as .npy.",
            "verify": "Check every row against NumPy.",
            "out": "Result JSON path (default: results/runs/batched-<algorithm>/<time>-<id>.json).",
        },
        order=("batch", "length", "algorithm", "s", "exclusive", "dtype", "seed", "input_file", "output_file",
               "verify", "model_only", "warm_l2", "hardware", "trace", "out", "no_save", "json_out"),
        steps="run_batched",
    )
    tune_command = TuneCommand(
        doc="Tune batched scans (ScanU or ScanUL1, s) for batch x length rows (default: the space's problem set)\n"
            "and compare with the scan paper's crossover rule (ScanU for more than 18 rows shorter than 4096).",
        help={"batch": "Rows (with --length: one problem).", "length": "Elements per row."},
        omit=("warm_l2",),  # a problem is batch, length, dtype and exclusive (tuning/session.py)
        order=("batch", "length", "dtype", "exclusive"),
    )

    def _params(self, params):
        from ascendbench.kernels.batched_scan import BatchedScanParams

        return BatchedScanParams(algorithm=params.algorithm, s=params.s, exclusive=params.exclusive,
                                 dtype=params.dtype)

    def size(self, params):
        return int(params.batch or 0) * int(params.length or 0)

    def check(self, params, hw):
        from ascendbench.kernels.batched_scan import check

        check(params.batch, params.length, self._params(params))

    def simulate(self, params, hw, facts=None):
        from ascendbench.kernels.batched_scan import simulate_batched

        return simulate_batched(params.batch, params.length, self._params(params), hw, warm_l2=params.warm_l2).sim

    def bytes_moved(self, params, facts=None):
        p = self._params(params).scan
        return self.size(params) * (p.in_bytes + p.out_bytes)

    run_options = ("progress",)

    def run_streaming(self, ctx, /, **options: Any):
        from ascendbench.kernels.row_scan_run import run_batched_scan

        values = ctx.params.model_dump(exclude_unset=True) | options
        return run_batched_scan(ctx, RunOptions.take(values), **values)


class SegmentedRunParams(_RowScanParams):
    """A segmented scan of n values with head flags (scan paper B.2)."""

    n: OptionalCount = None
    algorithm: Literal["mcscan", "mcscan-ul1", "vector"] = Field("mcscan", description="the values' scan")
    segment_length: int = Field(1024, ge=1, le=MAX_ELEMENTS, description="mean segment length of generated flags")
    heads: Literal["random", "regular"] = Field("random", description="how generated flags are placed")


class SegmentedScanKernel(KernelSpec):
    """Segmented scans by two matrix scans (values and flags) and a subtraction of the heads' prefixes."""

    name = "segmented-scan"
    title = "Segmented scan"
    source = "scan paper appendix B.2"
    family = "row-scan"
    Params = SegmentedRunParams
    false_flags = {"exclusive": "--inclusive"}
    aliases = {"algorithm": ("-a",)}
    inputs = (InputSpec("values", ("fp16", "int8"), "(n,)", "as run scan's"),
              InputSpec("flags", ("bool", "int8", "uint8"), "(n,)", "heads with probability 1/segment_length"))
    streaming = True
    run_command = RunCommand(
        doc="Segmented scan (values and head flags) built on the matrix scans: simulated time, bandwidth, the time "
            "of\neach kernel of the sequence, pipe utilisation and counters, checked against NumPy.",
        help={
            "n": "Elements: 1000000, 1e6 or 2**20. Optional with --input.",
            "segment_length": "Generated flags: mean (random) or exact (regular) segment length.",
            "heads": "Generated flags: random (each element a head with probability 1/segment-length, seeded) or "
                     "regular (a head every segment-length elements).",
            "algorithm": "mcscan or mcscan-ul1 (on the matrix scans) or vector (vector-only baseline).",
            "s": "Tile side s of the matrix scans: 16, 32, 64 or 128.",
            "exclusive": "Exclusive or inclusive scan.",
            "dtype": "Values dtype: fp16 (fp32 output) or int8 (int32 output); default fp16 or the input's.",
            "warm_l2": "Start with the input in L2 (default: cold).",
            "seed": "Seed of the generated values and flags.",
            "input_file": "A .npz with 1-D arrays 'values' (float16 or int8) and 'flags' (bool/int8/uint8, non-zero "
                          "starts a segment), or a .npy of values (flags then generated).",
            "output_file": "Save the result as .npy.",
            "verify": "Check against NumPy.",
            "model_only": "Timings and counters only (generated random flags: the expected segment count).",
            "out": "Result JSON path (default: results/runs/segmented-scan/<time>-<id>.json).",
        },
        order=("n", "input_file", "segment_length", "heads", "algorithm", "s", "exclusive", "dtype", "seed",
               "output_file", "verify", "model_only", "warm_l2", "hardware", "trace", "out", "no_save", "json_out"),
        steps="run_segmented",
    )

    def _params(self, params):
        from ascendbench.kernels.segmented_scan import SegmentedScanParams

        return SegmentedScanParams(algorithm=params.algorithm, s=params.s, exclusive=params.exclusive,
                                   dtype=params.dtype)

    def check(self, params, hw):
        from ascendbench.kernels.segmented_scan import check

        check(params.n, self._params(params))

    def simulate(self, params, hw, facts=None):
        from ascendbench.kernels.segmented_scan import simulate_segmented
        from ascendbench.kernels.row_scan_run import expected_segments

        segments = (facts or {}).get("segments", expected_segments(params.n, params.segment_length, params.heads))
        return simulate_segmented(params.n, segments, self._params(params), hw, warm_l2=params.warm_l2)

    def bytes_moved(self, params, facts=None):
        p = self._params(params).scan
        return params.n * (p.in_bytes + 1 + p.out_bytes)

    run_options = ("progress",)

    def run_streaming(self, ctx, /, **options: Any):
        from ascendbench.kernels.row_scan_run import run_segmented_scan

        values = ctx.params.model_dump(exclude_unset=True) | options
        return run_segmented_scan(ctx, RunOptions.take(values), **values)


MAX_DIM = 2**40  # as kernels.hgemm.MAX_DIM
WORKLOAD = ExtraOption("workload", ("--workload",), choices=list_workloads, closed=False, metavar="<workload>",
                       help="A named workload instead of one shape: {choices}.")  # run hgemm's and tune hgemm's


class HgemmRunParams(KernelParams):
    """C = alpha * A @ B + beta * C in fp16 (HGEMM paper)."""

    m: int = Field(ge=0, le=MAX_DIM, description="rows of A and C")
    n: int = Field(ge=0, le=MAX_DIM, description="columns of B and C")
    k: int = Field(ge=0, le=MAX_DIM, description="columns of A, rows of B")
    batch: int = Field(1, ge=1, le=MAX_DIM, description="independent GEMMs of this shape")
    variant: Literal["proposed", "gemm-example"] = Field("proposed", description="the paper's kernel or "
                                                         "CATLASS's basic matmul (GemmExample)")
    m0: int | None = Field(None, ge=16, multiple_of=16, description="tile rows (default: the selector's)")
    n0: int | None = Field(None, ge=16, multiple_of=16, description="tile columns (default: the selector's)")
    k0: int | None = Field(None, ge=8, multiple_of=8, description="tile depth (default: the selector's)")
    split_k: int = Field(1, ge=1, description="K split over this many cores")
    shuffle_k: bool = Field(True, description="ShuffleK")
    padding: bool = Field(True, description="pad unaligned rows first")
    double_buffer: bool = Field(True, description="double buffering of L1/L0")
    alpha: float = Field(1.0, allow_inf_nan=False, description="the BLAS scalar alpha")
    beta: float = Field(0.0, allow_inf_nan=False, description="the BLAS scalar beta")
    warm_l2: WarmL2 = False
    every_core: bool = Field(False, description="simulate every AI core")

    @model_validator(mode="after")
    def _fp16_scalars(self):
        for name in ("alpha", "beta"):
            if abs(getattr(self, name)) > 65504:
                raise ValueError(f"{name}: must be representable in fp16 (|{name}| <= 65504)")
        return self

    @property
    def hgemm(self):
        from ascendbench.kernels.hgemm import HgemmParams

        return HgemmParams(variant=self.variant, m0=self.m0, n0=self.n0, k0=self.k0, split_k=self.split_k,
                           shuffle_k=self.shuffle_k, padding=self.padding, double_buffer=self.double_buffer,
                           alpha=self.alpha, beta=self.beta)


# The tile sizes each on-chip buffer of an HGEMM tiling holds (kernels/hgemm.py _block_bytes; L1's depth K1
# follows from the others).
_TILE_SIDES = {"L0A": ("m0", "k0"), "L0B": ("k0", "n0"), "L0C": ("m0", "n0"), "L1": ("m0", "n0", "k0"),
               "UB": ("m0", "n0")}


class HgemmKernel(KernelSpec):
    """HGEMM with the dual-stream design of the HGEMM paper; variant gemm-example is CATLASS's basic matmul."""

    name = "hgemm"
    title = "HGEMM (C = alpha A B + beta C, fp16)"
    source = "HGEMM paper §4; CATLASS examples/00_basic_matmul"
    family = "gemm"
    Params = HgemmRunParams
    inputs = (InputSpec("a", ("fp16",), "(batch, m, k)", "uniform in [-1, 1)"),
              InputSpec("b", ("fp16",), "(batch, k, n)", "uniform in [-1, 1)"),
              InputSpec("c", ("fp16",), "(batch, m, n)", "uniform in [-1, 1) when beta != 0"))
    variants = ("proposed", "gemm-example")
    space = "hgemm"
    unit = "TFLOPS"
    default_hardware = "atlas-300t-a2"  # the HGEMM paper's chip
    streaming = True
    tunable_class = HgemmTunable
    size_field = "m"
    run_command = RunCommand(
        doc="Run C = alpha * A @ B + beta * C (fp16, fp32 accumulation) on the simulated NPU: TFLOPS, % of cube\n"
            "peak, the tiling and where it came from, stage times, pipe utilisation, and the check against NumPy.",
        help={
            "m": "Rows of A and C (required unless --a/--b/--c or --workload give the shape).",
            "n": "Columns of B and C.",
            "k": "Columns of A, rows of B (the reduction).",
            "batch": "Independent GEMMs of this shape.",
            "alpha": "alpha of C = alpha A B + beta C.",
            "beta": "beta (0: C is not read).",
            "m0": "Tile M0 (multiple of 16; default: the selector's).",
            "n0": "Tile N0 (multiple of 16).",
            "k0": "Tile K0 (multiple of 8).",
            "split_k": "Split each block's K over this many cores (SplitK).",
            "shuffle_k": "ShuffleK (§4.3.2).",
            "padding": "Pad A and B to 512-byte aligned rows.",
            "double_buffer": "Two slots per buffer where they fit.",
            "variant": "proposed (the HGEMM paper) or gemm-example (CATLASS basic matmul, the paper's baseline).",
            "warm_l2": "Start with A, B (and C, when all three fit) in L2: the state after back-to-back runs, as the "
                       "HGEMM paper timed them (default: cold).",
            "every_core": "Simulate every AI core, not one per group of cores with the same task count: slower, and "
                          "without the grouping's error (up to 14% on shapes bound by L2).",
            "seed": "Seed of the generated A, B, C (uniform in [-1, 1)).",
            "output_file": "Save C as .npy (single shape).",
            "verify": "Check against NumPy (up to M*N*K*batch = 2**33, 2**27 per shape in a workload; larger shapes "
                      "are timed only).",
            "trace": "Chrome trace of the (first) shape.",
            "out": "Result JSON path (default: results/runs/hgemm/<time>-<id>.json).",
        },
        model_only=False,
        from_input=("m", "n", "k"),  # a workload or the --a/--b/--c files may give the shape
        extras=(
            WORKLOAD,
            ExtraOption("a_file", ("--a",), "path", help="A as a float16 .npy (M x K, or batch x M x K)."),
            ExtraOption("b_file", ("--b",), "path", help="B as a float16 .npy (K x N, or batch x K x N: the same "
                                                          "batch as A)."),
            ExtraOption("c_file", ("--c",), "path", help="C as a float16 .npy (M x N, or batch x M x N: the same "
                                                          "batch as A)."),
            ExtraOption("jobs", ("--jobs",), "count", help="Worker processes for a workload's shapes (default: the "
                                                          "usable cores, at most 8, for 64 shapes or more; at most 4 "
                                                          "per usable core)."),
        ),
        omit=("input_file",),  # its matrices come as --a, --b, --c
        order=("m", "n", "k", "batch", "workload", "alpha", "beta", "m0", "n0", "k0", "split_k", "shuffle_k",
               "padding", "double_buffer", "variant", "seed", "a_file", "b_file", "c_file", "output_file", "verify",
               "warm_l2", "every_core", "jobs", "hardware", "trace", "out", "no_save", "json_out"),
        steps="run_hgemm",
    )
    tune_command = TuneCommand(
        doc="Tune HGEMM tilings (M0, N0, K0, SplitK, ShuffleK, padding, double buffering) for one shape, a "
            "workload\nor a problem set (default: the fig6 shapes and llama2-qk) and compare with the paper's tile "
            "selector.",
        help={"m": "Rows of A and C (with --n and --k: one shape).",
              "every_core": "Simulate every AI core in each trial (as `run hgemm --every-core`): exact sharing of L2 "
                            "and HBM, several times slower per trial."},
        extras=(WORKLOAD,),
        omit=("variant", "alpha", "beta", "warm_l2"),  # a problem is a shape (or workload) and every_core
        order=("m", "n", "k", "batch", "workload", "every_core"),
    )

    def params(self, values=None, **kwargs):
        try:
            return super().params(values, **kwargs)
        except ParamError as exc:
            if exc.param == "params":  # alpha / beta out of fp16's range: name the scalar
                scalar, message = str(exc).split(": ", 2)[1:]
                raise ParamError(scalar, message) from None
            raise

    def size(self, params):
        return params.m * params.n * params.k * params.batch

    def _shape(self, params):
        from ascendbench.kernels.hgemm import GemmShape

        return GemmShape(params.m, params.n, params.k, params.batch)

    def simulate(self, params, hw: HardwareProfile, facts=None):
        from ascendbench.kernels.hgemm import simulate_hgemm

        return simulate_hgemm(self._shape(params), params.hgemm, hw, warm_l2=params.warm_l2,
                              every_core=params.every_core)[0]

    def check(self, params, hw):
        from ascendbench.kernels.hgemm import resolve_tiling

        resolve_tiling(self._shape(params), params.hgemm, hw)

    def bytes_moved(self, params, facts=None):
        b = params.batch
        return 2 * b * (params.m * params.k + params.k * params.n + params.m * params.n * (2 if params.beta else 1))

    # a workload or the --a/--b/--c files give the shape; `params` (an HgemmParams, the CLI's) replaces the
    # model's variant, tile and scalar fields
    run_options = ("workload", "a_file", "b_file", "c_file", "jobs", "progress", "params")

    def run_params(self, values, options):
        """The model with the shape fields left out (None) validated as 0: run_hgemm takes them from the
        workload or the input files, or says which is missing."""
        given = {k: v for k, v in values.items() if v is not None}
        checked = self.params({x: 0 for x in ("m", "n", "k")} | given)
        return self.Params.model_construct(_fields_set=checked.model_fields_set & set(given), **dict(checked))

    def refuse_data(self, arrays, input_file):
        if input_file is not None:
            raise ParamError("input-file", "hgemm takes its matrices as a_file, b_file, c_file")
        if arrays is not None:
            raise ParamError("input", "hgemm takes its matrices as .npy files, not arrays: "
                                      'ascendbench.run("hgemm", a_file=..., b_file=..., c_file=...)')

    def run_streaming(self, ctx, /, **options: Any):
        from ascendbench.kernels.hgemm_run import run_hgemm

        params = ctx.params
        given = params.model_fields_set
        m, n, k = (getattr(params, x) if x in given else None for x in ("m", "n", "k"))
        options.setdefault("params", params.hgemm)
        # every shape is always timed; without data (model_only) there is nothing to verify
        options["verify"] = not options.pop("model_only") and options["verify"]
        try:
            return run_hgemm(ctx, m, n, k, batch=params.batch, warm_l2=params.warm_l2,
                             every_core=params.every_core, **options)
        except BufferCapacityError as exc:  # the user's tile, not the profile: the message names the tile size
            tile = options["params"]
            named = [x for x in _TILE_SIDES.get(str(exc).split(":", 1)[0], ()) if getattr(tile, x) is not None]
            if not named:
                raise
            raise ParamError(max(named, key=lambda x: getattr(tile, x)), str(exc)) from None  # the larger side
