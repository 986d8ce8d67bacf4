"""Weighted sampling by inverse transform (the scan paper, appendix B.3): a scan of the weights, then SplitInd
with the predicate `cumsum > u * total`; the sample is the first index whose cumulative weight exceeds u * total.

Function: `weighted_sample` draws any number of samples from any number of categories (no 2^24 limit) with
the exact rule

    index = min { i : C[i] > u * C[n-1] },   C = inclusive scan of the weights, u uniform in [0, 1).

C is accumulated in float64 in chunks of `CDF_CHUNK` elements, each chunk starting from the previous chunk's last
value (the carry of the kernel's L2 chunks). C never decreases and a zero weight repeats the previous value
exactly (c + 0 == c), so a zero-weight category is never the first to exceed the target, and u * C[n-1] <
C[n-1] for u < 1, so an index always exists. Memory: the weights plus one chunk of float64 and the samples.

Timing (`simulate_weighted_sample`): variant "scan" runs MCScan over the fp16 weights (fp32 output) and then
one SplitInd per sample over the fp32 scan with the predicate computed in the kernel (KERNELS.md: the authors
published no kernel for this operator; this follows the paper's description). Variant "baseline" models
torch.multinomial with replacement: the vector-only CumSum on one AIV (scan paper §4.1), then one binary
search per sample (dependent 32-byte GM reads by the scalar unit), the samples spread over all AIVs. The
baseline refuses more than 2^24 categories, as torch.multinomial does (scan paper B.3, claim S-18).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import Field

from ascendbench.hardware import HardwareProfile
from ascendbench.kernels import contract
from ascendbench.kernels.base import ParamError
from ascendbench.kernels.partition import index_bytes, offset_dtype, offset_type
from ascendbench.kernels.programs import Ring, aiv_groups, loop, piece_elements, split_front
from ascendbench.sim.engine import Engine
from ascendbench.sim.result import SimResult, fixed_cost, sequence, simulate

__all__ = [
    "CDF_CHUNK",
    "MULTINOMIAL_MAX_CATEGORIES",
    "SAMPLE_VARIANTS",
    "DistributionError",
    "SampleTiming",
    "as_phase",
    "check_variant_size",
    "check_weights",
    "elementwise_pass",
    "inverse_transform",
    "launch",
    "simulate_weighted_sample",
    "weighted_sample",
]

CDF_CHUNK = 1 << 20  # elements per chunk of the float64 CDF (memory bound of the functional path)
MULTINOMIAL_MAX_CATEGORIES = 1 << 24  # torch.multinomial's limit (scan paper B.3; PyTorch's own check)
SAMPLE_VARIANTS = ("scan", "baseline")


class DistributionError(ValueError):
    """The weights (or probabilities) are not a distribution; the message names the array, the row or
    element and what is wrong (negative, NaN, infinite, zero total)."""


def _describe(value) -> str:
    return str(value)  # NumPy's shortest repr of the element's own dtype (-0.1, not -0.0999756)


def check_weights(weights: np.ndarray, name: str = "weights", *, chunk: int = CDF_CHUNK) -> float:
    """Check that `weights` (1-D, float16 or float32) are finite and non-negative with a positive total;
    return the total (float64). Scans in chunks, so memory stays bounded for any length.

    Raises:
        DistributionError: naming the first offending element, or the zero total.
    """
    total = 0.0
    n = weights.shape[0]
    for lo in range(0, n, chunk):
        part = np.asarray(weights[lo: lo + chunk])
        bad = ~np.isfinite(part)
        if bad.any():
            i = int(np.argmax(bad))
            kind = "NaN" if np.isnan(part[i]) else "infinite"
            raise DistributionError(f"{name}: element {lo + i} is {kind}; weights must be finite and non-negative")
        neg = part < 0
        if neg.any():
            i = int(np.argmax(neg))
            raise DistributionError(f"{name}: element {lo + i} is negative ({_describe(part[i])}); weights must be "
                                    "finite and non-negative")
        total += float(part.sum(dtype=np.float64))
    if not total > 0:
        raise DistributionError(f"{name}: the total weight is zero" + (" (no categories)" if n == 0 else "")
                                + "; at least one weight must be positive")
    return total


def _chunk_ends(weights: np.ndarray, chunk: int) -> np.ndarray:
    """C at the last element of each chunk (float64), with the chunk carry rule of the module docstring."""
    ends = np.empty(math.ceil(weights.shape[0] / chunk), dtype=np.float64)
    carry = 0.0
    for c, lo in enumerate(range(0, weights.shape[0], chunk)):
        carry = float(_chunk_cdf(weights, lo, chunk, carry)[-1])
        ends[c] = carry
    return ends


def _chunk_cdf(weights: np.ndarray, lo: int, chunk: int, carry: float) -> np.ndarray:
    local = np.cumsum(np.asarray(weights[lo: lo + chunk], dtype=np.float64))
    return carry + local


def inverse_transform(weights: np.ndarray, u: np.ndarray, *, chunk: int = CDF_CHUNK) -> np.ndarray:
    """Indices min { i : C[i] > u * C[n-1] } for each u (see the module docstring for C).

    Args:
        weights: (n,) float16 or float32, already checked (check_weights).
        u: (k,) float64 in [0, 1).
        chunk: elements per CDF chunk (tests use small chunks to exercise the carry).

    Returns:
        (k,) indices, int32 while n <= 2**31 - 1 and int64 beyond (CUB's offset type), each with
        weights[index] > 0.
    """
    u = np.asarray(u, dtype=np.float64)
    ends = _chunk_ends(weights, chunk)
    targets = u * ends[-1]
    # The chunk holding each sample: the first chunk whose last C exceeds the target.
    which = np.searchsorted(ends, targets, side="right")
    out = np.empty(u.shape, dtype=offset_dtype(len(weights)))
    starts = np.concatenate(([0.0], ends[:-1]))
    for c in np.unique(which):
        sel = which == c
        lo = int(c) * chunk
        cdf = _chunk_cdf(weights, lo, chunk, float(starts[c]))
        out[sel] = lo + np.searchsorted(cdf, targets[sel], side="right")
    return out


def weighted_sample(weights: np.ndarray, samples: int = 1, *, rng: np.random.Generator | None = None,
                    seed: int | None = None, chunk: int = CDF_CHUNK) -> np.ndarray:
    """Draw `samples` indices with probability proportional to `weights` (with replacement).

    Args:
        weights: (n,) float16 or float32, finite and non-negative with a positive total; any n (beyond 2^24).
        samples: number of draws (>= 0).
        rng / seed: a numpy Generator, or a seed for a new one (default seed 0); the draws use
            u = rng.random(samples) in order.

    Returns:
        (samples,) indices (int32 while n <= 2**31 - 1, else int64); a zero-weight category is never returned.

    Raises:
        DistributionError: invalid weights (the message names the element); ParamError: samples < 0, a
        weights array that is not 1-D float16/float32.
    """
    weights = _as_weights(weights)
    if isinstance(samples, bool) or not isinstance(samples, (int, np.integer)) or samples < 0:
        raise ParamError("samples", f"must be a non-negative integer, got {samples!r}")
    check_weights(weights, chunk=chunk)
    if rng is None:
        rng = np.random.default_rng(0 if seed is None else seed)
    u = rng.random(int(samples))
    return inverse_transform(weights, u, chunk=chunk)


def _as_weights(weights) -> np.ndarray:
    if isinstance(weights, np.ma.MaskedArray):
        raise ParamError("weights", "masked arrays are not supported; pass the data you mean")
    weights = np.asarray(weights)
    if weights.ndim != 1:
        raise ParamError("weights", f"must be a 1-D array, got shape {tuple(weights.shape)}")
    if weights.dtype not in (np.float16, np.float32):
        raise ParamError("weights", f"dtype must be float16 or float32, got {weights.dtype}")
    return weights


# ---------------------------------------------------------------------------------------------------
# Timing
# ---------------------------------------------------------------------------------------------------
def launch(hw: HardwareProfile) -> SimResult:
    """One kernel launch (the profile's kernel_launch_us)."""
    return fixed_cost(hw, hw.kernel_launch_us * 1e-6 * hw.clock_hz, "launch", kernel_launches=1)


def as_phase(res: SimResult, name: str) -> SimResult:
    """`res` with all its time reported as one phase `name` (a step of a composed operator); counters, busy
    time and the timeline are kept."""
    return SimResult(res.hw, res.time_cycles, {name: res.time_cycles}, dict(res.busy), dict(res.counters),
                     list(res.segments), res.extrapolated, res.hbm_busy_cycles, dict(res.unit_weights),
                     gaps=list(res.gaps))


def elementwise_pass(hw: HardwareProfile, n: int, *, in_bytes: int, out_bytes: int, vector_passes: int,
                     phase: str, hit: bool, writeback: bool = True, reduce: bool = False) -> SimResult:
    """A kernel on all AIVs over n elements, the copy kernel's structure (kernels/programs.py): pieces of up
    to COPY_PIECE elements split contiguously over the AIVs, double-buffered; per piece one GM read of
    `in_bytes` per element, `vector_passes` dependent vector passes over the fp32 work (4 B per element) and a
    write of `out_bytes` per element (none when 0). `reduce` adds the write of one 4-byte partial result per
    AIV and a SyncAll (a reduction's partial sums). Includes its kernel launch. Phase `phase`."""
    if n == 0:
        return launch(hw)
    piece = piece_elements(hw, in_bytes + 4, out_bytes)
    pieces = math.ceil(n / piece)
    per_aiv = split_front(pieces, hw.aiv_cores)

    def build(engine: Engine, skip: int) -> None:
        engine.phase = phase
        last = []
        for _, unit, count, tail in aiv_groups(engine, per_aiv, n, piece):
            engine.alloc(unit, "UB", 2 * piece * (in_bytes + 4 + out_bytes), f"{phase} pieces (2 buffers)")
            ring = Ring(2)
            ops = []

            def emit(i: int, unit=unit, ring=ring, tail=tail, last_index=count - 1, ops=ops) -> None:
                elems = min(tail, piece) if i == last_index else piece
                rd = engine.gm_read(unit, "MTE2", elems * in_bytes, l2_hit=hit, deps=[ring.wait()], label="in")
                vec = engine.vector(unit, elems * 4, deps=[rd], label=phase, passes=vector_passes)
                done = vec
                if out_bytes:
                    done = engine.gm_write(unit, "MTE3", elems * out_bytes, writeback=writeback, deps=[vec],
                                           label="out")
                ring.push(done)
                ops.append(done)

            loop(engine, count, skip, emit)
            if reduce:
                last.append(engine.gm_write(unit, "MTE3", 4, writeback=True, deps=[ops[-1]], label="partial->GM"))
        if reduce:
            engine.sync_all(last)

    res = simulate(hw, build, max(per_aiv), warm_l2=False)
    return sequence([(launch(hw), 1), (res, 1)])


def _binary_search(hw: HardwareProfile, n: int, samples: int, hit: bool) -> SimResult:
    """One binary search per sample over an n-element fp32 CDF in GM: ceil(log2 n) dependent reads of one
    element (a 32-byte MTE transfer each) and a scalar compare each, the samples split contiguously over all
    AIVs; each index is written (8 bytes) when found. Includes the kernel launch. Phase "search"."""
    if samples == 0 or n == 0:
        return launch(hw)
    steps = max(1, math.ceil(math.log2(n))) if n > 1 else 1
    per_aiv = [c for c in split_front(samples, hw.aiv_cores) if c]

    def build(engine: Engine, skip: int) -> None:
        engine.phase = "search"
        for w, weight in engine.groups(per_aiv):
            unit = f"core{w // hw.aiv_per_core}.aiv{w % hw.aiv_per_core}"
            engine.set_weight(unit, weight)
            prev: list = [None]

            def emit(i: int, unit=unit, prev=prev) -> None:
                dep = prev[0]
                for _ in range(steps):
                    rd = engine.gm_read(unit, "MTE2", 4, l2_hit=hit, deps=[dep], label="C[mid]")
                    dep = engine.compute(unit, "SCALAR", hw.scalar_op_cycles, deps=[rd], label="compare")
                prev[0] = dep
                engine.gm_write(unit, "MTE3", 8, writeback=True, deps=[dep], label="index->GM")

            loop(engine, per_aiv[w], skip, emit)

    res = simulate(hw, build, max(per_aiv), warm_l2=False)
    return sequence([(launch(hw), 1), (res, 1)])


@dataclass
class SampleTiming:
    """The simulated run of one call: `sim` (the whole call, phases "scan" and "split" or "search"), the
    simulated pieces, and the number of scans it ran (counter "scans")."""

    sim: SimResult
    scan: SimResult
    draw: SimResult
    scans: int


def check_variant_size(n: int, variant: str) -> None:
    """Raise ParamError unless `variant` can sample from n categories (the baseline stops at 2^24)."""
    if variant not in SAMPLE_VARIANTS:
        raise ParamError("variant", f"must be one of {', '.join(SAMPLE_VARIANTS)}, got {variant!r}")
    if variant == "baseline" and n > MULTINOMIAL_MAX_CATEGORIES:
        raise ParamError("variant", f"baseline (torch.multinomial) supports at most 2**24 = "
                                    f"{MULTINOMIAL_MAX_CATEGORIES:,} categories, got {n:,}; the scan variant has no "
                                    "such limit (claim S-18)")


def simulate_weighted_sample(n: int, samples: int, hw: HardwareProfile, *, variant: str = "scan", s: int = 128,
                             warm_l2: bool = False) -> SampleTiming:
    """Simulated weighted sampling of `samples` indices from n fp16 weights (module docstring).

    variant "scan": MCScan (tile side s, fp16 -> fp32, inclusive) then `samples` SplitInd kernels over the
    fp32 scan with the predicate `> u * total` evaluated in the kernel (kernels/split.py simulate_split with
    predicate=True, int32 indices), each its own launch; the scan output stays in L2 when it fits.
    variant "baseline": vector-only CumSum on one AIV (kernels/scan.py vec-cumsum), then one binary search per
    sample (`_binary_search`). The uniforms' generation is not timed in either.

    Raises:
        ParamError: unknown variant, s not in 16/32/64/128, n > 2^24 for the baseline, negative n or samples.
    """
    from ascendbench.kernels.scan import S_VALUES, SCAN_KERNELS, ScanParams
    from ascendbench.kernels.split import simulate_split

    for name, value in (("n", n), ("samples", samples)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise ParamError(name, f"must be a non-negative integer, got {value!r}")
    check_variant_size(n, variant)
    if s not in S_VALUES:
        raise ParamError("s", f"must be one of {', '.join(map(str, S_VALUES))}, got {s}")
    fits = n * 4 <= hw.l2_cache_bytes
    if variant == "scan":
        scan = SCAN_KERNELS["mcscan"].simulate(n, ScanParams(s=s), hw, warm_l2=warm_l2)
        split = simulate_split(n, "fp32", hw, variant="splitind", with_indices=True, predicate=True, resident=fits)
        draw = sequence([(split, samples)]) if samples else fixed_cost(hw, 0.0, "split")
        draw_phase = "split"
    else:
        scan = SCAN_KERNELS["vec-cumsum"].simulate(n, ScanParams(), hw, warm_l2=warm_l2)
        draw = _binary_search(hw, n, samples, fits)
        draw_phase = "search"
    scan.counters["scans"] = scan.counters.get("scans", 0) + 1
    sim = sequence([(as_phase(scan, "scan"), 1), (as_phase(draw, draw_phase), 1)])
    return SampleTiming(sim, scan, draw, int(sim.counters["scans"]))


_SHOWN = 32  # the result document lists at most this many sampled indices
_VERIFY_LIMIT = 1 << 25  # the reference's float64 running sum of the whole array (256 MiB) up to this n
_EXACT_TOTAL = 2.0**29  # fp16 weights are multiples of 2^-24: float64 sums below 2^29 are exact in any order


def reference_indices(weights: np.ndarray, u: np.ndarray) -> np.ndarray:
    """The rule on one float64 running sum C of the whole array: the first i with C(i) > u * C(n-1)."""
    cdf = np.cumsum(weights, dtype=np.float64)
    return np.searchsorted(cdf, u * cdf[-1], side="right")


class SampleParams(contract.KernelParams):
    """Weighted sampling of `samples` indices from n fp16 weights (scan paper §5.6, B.3)."""

    samples: int = Field(1, ge=0, le=contract.MAX_ELEMENTS, description="indices to draw, with replacement")
    n: contract.OptionalCount = None
    variant: Literal["scan", "baseline"] = Field("scan", description="scan: MCScan + SplitInd per sample (the "
                                                 "paper's); baseline: vector-only cumsum + binary search "
                                                 "(torch.multinomial, at most 2**24 categories)")
    s: contract.TileSide = 128
    warm_l2: contract.WarmL2 = False


class WeightedSampleKernel(contract.KernelSpec):
    """Draw indices with probability proportional to the weights: an inclusive scan, then the first index whose
    running sum exceeds u * total (SplitInd with that predicate)."""

    name = "sample"
    title = "Weighted sampling by inverse transform"
    source = "scan paper §5.6, B.3"
    Params = SampleParams
    inputs = (contract.InputSpec("weights", ("fp16",), "(n,)", "uniform in [0, 1) in float16; seed [seed, 1]"),)
    variants = ("scan", "baseline")
    draws = True
    space = "sample"
    run_command = contract.RunCommand(
        doc="Draw indices with probability proportional to the weights: an inclusive scan of the weights, then the\n"
            "first index whose running sum exceeds u * total (SplitInd with the predicate > u * total). A zero-weight\n"
            "category is never returned.",
        help={"samples": "Indices to draw (with replacement), e.g. 1 or 1e6.", "n": contract.N_HELP,
              "variant": "scan (MCScan + SplitInd per sample, the paper's) or baseline (vector-only cumsum + binary "
                         "search, torch.multinomial; at most 2**24 categories).",
              "s": "Tile side of the MCScan: 16, 32, 64 or 128.",
              "seed": "Seed of the draws (numpy default_rng(seed), as weighted_sample(seed=...)); generated weights "
                      "use default_rng([seed, 1]).",
              "input_file": "Weights: a 1-D float16 .npy, or a .npz with an array 'weights'.",
              "output_file": "Save the indices as .npy, or as 'indices' in a .npz.",
              "verify": "Check every index has positive weight and, where float64 sums are exact, equals one "
                        "running sum's rule.",
              "warm_l2": "Start with the weights in L2."},
        output=".npy/.npz")

    def bind(self, params, arrays):
        self.check_array_names(arrays)
        weights = arrays["weights"]
        if weights.ndim != 1:
            raise ParamError("input", f"weights must be 1-D, got shape {tuple(weights.shape)}")
        if weights.dtype != np.float16:
            raise ParamError("input", f"weights must be float16 (the MCScan's input), got {weights.dtype}; convert "
                                      "with weights.astype(numpy.float16)")
        if weights.shape[0] == 0:
            raise ParamError("input", "weights of shape (0,) hold no categories; at least one is needed")
        return super().bind(params, arrays)

    def check(self, params, hw):
        check_variant_size(params.n, params.variant)

    def check_functional(self, params):
        if params.n == 0:
            raise ParamError("n", "at least one category is needed")

    def functional_bytes(self, params, generated):
        weights, draws = params.n * 2 if generated else 0, params.samples * 24
        return weights + (1 << 20) * 16 + draws, "samples" if draws > params.n * 2 else "n"

    def generate(self, params, seed):
        return {"weights": np.random.default_rng([seed, 1]).random(params.n, dtype=np.float32).astype(np.float16)}

    def compute(self, arrays, params, seed=0):
        weights = arrays["weights"]
        try:
            total = check_weights(weights)
        except DistributionError as exc:
            raise ParamError("input", str(exc)) from None
        u = np.random.default_rng(seed).random(params.samples)
        indices = inverse_transform(weights, u)
        shown = f"indices (first {_SHOWN})" if params.samples > _SHOWN else "indices"
        return contract.Outcome({"indices": indices}, {shown: indices[:_SHOWN].tolist()}, {"u": u, "total": total})

    def verify(self, arrays, outcome, params):
        weights, indices, u = arrays["weights"], outcome.arrays["indices"], outcome.facts["u"]
        positive = bool((weights[indices] > 0).all())
        exact = params.n <= _VERIFY_LIMIT and outcome.facts["total"] < _EXACT_TOTAL
        same = bool(np.array_equal(indices, reference_indices(weights, u))) if exact else True
        what = ("one float64 running sum C of all weights (the first i with C(i) > u * C(n-1)); every index has "
                "positive weight") if exact else "positive weight at every index (sums not exact: rule not recomputed)"
        return contract.Check(positive and same, what, None if positive and same else
                     ("a zero-weight index was drawn" if not positive else "indices differ from the reference"))

    def simulate(self, params, hw, facts=None):
        return simulate_weighted_sample(params.n, params.samples, hw, variant=params.variant, s=params.s,
                                        warm_l2=params.warm_l2).sim

    def bytes_moved(self, params, facts=None):
        return params.n * 2 + params.samples * index_bytes(params.n)

    def dtypes(self, params, outcome, arrays=None):
        return {"weights": "fp16", "indices": offset_type(params.n)}

    def document_params(self, params, sim):
        return {"samples": params.samples, "s": params.s, "warm_l2": params.warm_l2}
