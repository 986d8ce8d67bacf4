"""Top-p (nucleus) sampling, exactly the rule of Llama 3's `sample_top_p` (the scan paper §5.5, §6.5).

Per row of probabilities (float16, the key dtype of the paper's fp16 radix sort, or float32, kept as they are:
rounding them to float16 would move the nucleus boundary, e.g. [0.3, 0.1, 0.1, 0.5] with p = 0.8 keeps 3 tokens
in float32 and 2 in float16, where 0.3 rounds up to 0.30005):

1. sort descending, stable (ties keep index order): values s and original indices idx;
2. inclusive cumulative sum in float32, sequentially: c[i] = fl32(c[i-1] + s[i]);
3. mask the tokens with fl32(c[i] - s[i]) > p (p as float32); p = 1 masks none (a float16 row can sum past 1,
   and p = 1 asks for the whole distribution; Llama's softmax rows in float32 sum to 1 within rounding);
4. renormalise what remains: r[i] = fl32(s[i] / S) with S = c[m-1], the float32 sum of the m kept tokens;
5. draw one position j with probability r[j] / sum(r): the first j with R[j] > u * R[m-1], R the float64
   running sum of r, u uniform in [0, 1) (one u per row, drawn in row order);
6. return idx[j].

The kept tokens always form a prefix of the sorted row: c never decreases (non-negative summands, monotone
rounding) and fl32(c[i] - s[i]) never decreases either, since c[i+1] - s[i+1] >= c[i] - s[i] before rounding.
So m = the number of unmasked tokens, S is exactly Llama's `probs_sort.sum()` in sequential float32, the top
token is always kept (c[0] - s[0] = 0 <= p), p = 0 keeps only the top token(s) of zero prefix sum, and a
zero-probability token is never drawn (R repeats its previous value exactly).

Variants: "radix" sorts with the LSB radix sort of the scan paper §5.3 (fp16 keys, with indices) and
cumsums with MCScan; "baseline" is the vector-only sort and the vector-only cumsum (PyTorch's sort and
cumsum in the paper's Fig. 6.8). Both return the same tokens (the sort is stable and the rule is fixed); only
the simulated time differs. See `simulate_top_p` for the timing and what it assumes about batches. On float32
rows (dtype "fp32", not the paper's kernel) the radix sort takes fp32 keys (32 passes) and both variants
cumsum with the vector-only CumSum in fp32: the cube has no fp32 rate in the hardware model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import Field, field_validator

from ascendbench.hardware import HardwareProfile
from ascendbench.kernels import contract
from ascendbench.kernels.base import ParamError
from ascendbench.kernels.sampling import DistributionError
from ascendbench.sim.result import Gap, SimResult, fixed_cost, sequence

__all__ = ["TOPP_DTYPES", "TOPP_VARIANTS", "TopPResult", "TopPTiming", "check_probs", "simulate_top_p",
           "top_p_draw", "top_p_sample"]

TOPP_VARIANTS = ("radix", "baseline")
# dtype -> (NumPy dtype, bytes per probability): fp16 is the paper's kernel, fp32 scans float32 rows as they are
TOPP_DTYPES = {"fp16": (np.float16, 2), "fp32": (np.float32, 4)}
_BLOCK_ELEMENTS = 1 << 22  # rows are processed in blocks of about this many elements (bounded temporaries)


@dataclass
class TopPResult:
    """tokens: the drawn token per row, int64, shape probs.shape[:-1] (0-d for one row); kept: the nucleus
    size m per row (int64, same shape); u: the uniforms used (float64, same shape)."""

    tokens: np.ndarray
    kept: np.ndarray
    u: np.ndarray


_FP32_MAX = float(np.finfo(np.float32).max)


def _rows(probs) -> np.ndarray:
    if isinstance(probs, np.ma.MaskedArray):
        raise ParamError("probs", "masked arrays are not supported; pass the data you mean")
    probs = np.asarray(probs)
    if probs.ndim not in (1, 2):
        raise ParamError("probs", f"must have shape (vocab,) or (batch, vocab), got {tuple(probs.shape)}")
    if probs.dtype not in (np.float16, np.float32):
        raise ParamError("probs", f"dtype must be float16 (the paper's fp16 kernel) or float32, got "
                                  f"{probs.dtype}; convert with probs.astype(numpy.float32)")
    return probs


def check_probs(probs: np.ndarray) -> None:
    """Check that every row is a probability row: finite, non-negative, not all zero, at least one token, a
    sum within float32's range (the rule's running sum is float32).
    (Rows need not sum to 1: the rule compares the running sum with p as Llama does.)

    Raises:
        DistributionError: naming the row (for 2-D input) and the token.
    """
    probs = _rows(probs)
    two_d = probs.ndim == 2
    rows = probs if two_d else probs[None]

    def where(r: int) -> str:
        return f"probs: row {r}" if two_d else "probs"

    if rows.shape[1] == 0 and rows.shape[0] > 0:
        raise DistributionError(f"{where(0)} has no tokens (vocab size 0)")
    step = max(1, _BLOCK_ELEMENTS // max(rows.shape[1], 1))
    for lo in range(0, rows.shape[0], step):
        block = rows[lo: lo + step]
        for test, kind in ((np.isnan, "NaN"), (np.isinf, "infinite"), (lambda b: b < 0, "negative")):
            bad = test(block)
            if bad.any():
                r, t = np.unravel_index(int(np.argmax(bad)), bad.shape)
                value = f" ({block[r, t]!s})" if kind == "negative" else ""
                raise DistributionError(f"{where(lo + r)}: token {t} is {kind}{value}; probabilities must be "
                                        "finite and non-negative")
        zero = ~(block > 0).any(axis=1)
        if zero.any():
            r = int(np.argmax(zero))
            raise DistributionError(f"{where(lo + r)} is all zero; a probability row needs a positive entry")
        # the rule's running sum is float32: a row whose sum passes float32's largest would make it inf
        sums = block.sum(axis=1, dtype=np.float64)
        over = sums > _FP32_MAX
        if over.any():
            r = int(np.argmax(over))
            raise DistributionError(_sum_overflow(where(lo + r), float(sums[r])))


def _sum_overflow(where: str, total: float) -> str:
    return (f"{where} sums to {total:.6g}, past float32's largest {_FP32_MAX:.6g} (the running sum would be "
            "inf); scale the row down")


def _check_p(p) -> np.float32:
    try:
        value = float(p)
    except (TypeError, ValueError):
        raise ParamError("p", f"must be a number in [0, 1], got {p!r}") from None
    if not 0.0 <= value <= 1.0:  # NaN fails too
        raise ParamError("p", f"must be in [0, 1], got {p!r}")
    return np.float32(value)


def _sort_desc(rows: np.ndarray, variant: str) -> np.ndarray:
    """Stable descending order of each row (int64 indices)."""
    if variant == "radix":
        from ascendbench.kernels.radix_sort import radix_sort

        return np.stack([np.asarray(radix_sort(row, descending=True, stable=True)[1], dtype=np.int64)
                         for row in rows]) if rows.shape[0] else np.empty(rows.shape, np.int64)
    # Negation is exact in fp16 and keeps ties tied (-0.0 == 0.0), so a stable ascending sort of -x is the
    # stable descending order of x.
    return np.argsort(-rows, axis=1, kind="stable")


def top_p_draw(probs: np.ndarray, p: float, u: np.ndarray, *, variant: str = "radix") -> TopPResult:
    """Top-p sampling with given uniforms (the rule of the module docstring).

    Args:
        probs: (vocab,) or (batch, vocab) float16 or float32 probability rows (sorted, summed and compared in
            float32 as they are).
        p: the nucleus threshold in [0, 1].
        u: uniforms in [0, 1), shape probs.shape[:-1] (one per row).
        variant: "radix" (sorts with radix_sort) or "baseline" (NumPy's stable sort); same tokens.

    Returns:
        TopPResult (tokens, kept, u).

    Raises:
        ParamError: p outside [0, 1] or NaN, wrong shape/dtype, unknown variant, u of the wrong shape or outside
            [0, 1). DistributionError: a row that is not a probability row (names the row).
    """
    if variant not in TOPP_VARIANTS:
        raise ParamError("variant", f"must be one of {', '.join(TOPP_VARIANTS)}, got {variant!r}")
    probs = _rows(probs)
    p32 = _check_p(p)
    check_probs(probs)
    rows = probs if probs.ndim == 2 else probs[None]
    u = np.asarray(u, dtype=np.float64).reshape(-1)
    if u.shape[0] != rows.shape[0]:
        raise ParamError("u", f"needs one uniform per row ({rows.shape[0]}), got {u.shape[0]}")
    if u.size and not ((u >= 0) & (u < 1)).all():
        raise ParamError("u", "uniforms must lie in [0, 1)")
    batch, vocab = rows.shape
    tokens = np.empty(batch, dtype=np.int64)
    kept = np.empty(batch, dtype=np.int64)
    step = max(1, _BLOCK_ELEMENTS // max(vocab, 1))
    for lo in range(0, batch, step):
        block = rows[lo: lo + step]
        order = _sort_desc(block, variant)
        s = np.take_along_axis(block, order, axis=1).astype(np.float32)
        with np.errstate(over="ignore"):  # a row within _FP32_MAX whose float32 rounding still passes it
            c = np.cumsum(s, axis=1, dtype=np.float32)
        if not np.isfinite(c[:, -1]).all():
            r = int(np.argmax(~np.isfinite(c[:, -1])))
            raise DistributionError(_sum_overflow(f"probs: row {lo + r}" if probs.ndim == 2 else "probs",
                                                  float(block[r].sum(dtype=np.float64))))
        # a prefix of each row (module docstring); p = 1 keeps every token, also where an fp16 row sums past 1
        keep = (c - s) <= p32 if p32 < 1 else np.ones(s.shape, dtype=bool)
        m = keep.sum(axis=1)
        total = c[np.arange(block.shape[0]), m - 1]
        r = np.where(keep, s / total[:, None], np.float32(0))
        big = np.cumsum(r, axis=1, dtype=np.float64)
        target = u[lo: lo + step] * big[:, -1]
        # first j with R[j] > target; R never decreases, so that is the count of R[j] <= target
        j = (big <= target[:, None]).sum(axis=1)
        tokens[lo: lo + step] = order[np.arange(block.shape[0]), j]
        kept[lo: lo + step] = m
    shape = probs.shape[:-1]
    return TopPResult(tokens.reshape(shape), kept.reshape(shape), u.reshape(shape))


def top_p_sample(probs: np.ndarray, p: float, *, rng: np.random.Generator | None = None, seed: int | None = None,
                 variant: str = "radix") -> TopPResult:
    """Llama 3's sample_top_p on float16 or float32 probability rows with a seeded generator: u =
    rng.random(batch) (or seed 0 when neither rng nor seed is given), then `top_p_draw`. Raises as top_p_draw
    does."""
    probs = _rows(probs)
    if rng is None:
        rng = np.random.default_rng(0 if seed is None else seed)
    batch = probs.shape[0] if probs.ndim == 2 else 1
    _check_p(p)
    u = rng.random(batch)
    return top_p_draw(probs, p, u, variant=variant)


# ---------------------------------------------------------------------------------------------------
# Timing
# ---------------------------------------------------------------------------------------------------
@dataclass
class TopPTiming:
    """The simulated top-p call on a (batch, vocab) input.

    sim: the whole call; row: one row alone (phases sort, cumsum, mask, renormalise, multinomial, gather);
    scans_per_row: the scans one row runs (counter "scans": one per radix pass plus the cumsum, 17 for fp16,
    33 for fp32); cores_per_row, rows_per_wave, waves: how the batch is spread over the AI cores (see
    simulate_top_p); cumsum: which scan timed the cumsum ("MCScan fp16 -> fp32", "vector-only CumSum fp16 ->
    fp32" or "vector-only CumSum fp32").
    """

    sim: SimResult
    row: SimResult
    scans_per_row: int
    cores_per_row: int
    rows_per_wave: int
    waves: int
    cumsum: str = "MCScan fp16 -> fp32"


def _cumsum_kind(variant: str, dtype: str) -> str:
    """Which scan times a row's cumsum (TopPTiming.cumsum)."""
    if dtype == "fp32":
        return "vector-only CumSum fp32"
    return "MCScan fp16 -> fp32" if variant == "radix" else "vector-only CumSum fp16 -> fp32"


def _row_steps(vocab: int, hw: HardwareProfile, variant: str, s: int, warm_l2: bool,
               dtype: str = "fp16") -> list[SimResult]:
    from ascendbench.kernels.radix_sort import simulate_radix_sort
    from ascendbench.kernels.sampling import as_phase, elementwise_pass, launch
    from ascendbench.kernels.scan import SCAN_KERNELS, ScanParams, simulate_fp32_cumsum

    vb = TOPP_DTYPES[dtype][1]  # bytes of a probability: the sort's keys, the values the later kernels move
    sort = simulate_radix_sort(vocab, dtype, hw, variant="mcscan" if variant == "radix" else "vector",
                               with_indices=True, descending=True, warm_l2=warm_l2)
    sorted_hit = vocab * vb <= hw.l2_cache_bytes  # the sorted probabilities were just written
    # the sort ran first and paid its write-backs: L2 starts clean, or with the sorted row resident
    start = "warm" if sorted_hit else "clean"
    if dtype == "fp32":
        # no fp32 cube rate in the hardware model, so no MCScan in fp32: AscendC CumSum takes float32 as it is
        cumsum = simulate_fp32_cumsum(vocab, hw, l2=start)
    elif variant == "radix":
        cumsum = SCAN_KERNELS["mcscan"].simulate(vocab, ScanParams(s=s), hw, l2=start)
    else:
        cumsum = SCAN_KERNELS["vec-cumsum"].simulate(vocab, ScanParams(), hw, l2=start)
    cumsum.counters["scans"] = cumsum.counters.get("scans", 0) + 1
    hit = vocab * (vb + 4 + vb) <= hw.l2_cache_bytes
    # Llama's remaining operators, each a kernel on all AIVs: mask = (c - s > p), s[mask] = 0 (read s and c,
    # write s); renormalise = a sum (partial sums, SyncAll) and a divide; multinomial over the row = partial
    # sums of the probabilities, SyncAll, then the AIV holding the target walks one piece; gather = one index.
    mask = elementwise_pass(hw, vocab, in_bytes=vb + 4, out_bytes=vb, vector_passes=3, phase="mask", hit=hit)
    total = elementwise_pass(hw, vocab, in_bytes=vb, out_bytes=0, vector_passes=2, phase="renormalise", hit=hit,
                             reduce=True)
    divide = elementwise_pass(hw, vocab, in_bytes=vb, out_bytes=vb, vector_passes=1, phase="renormalise",
                              hit=hit)
    sums = elementwise_pass(hw, vocab, in_bytes=vb, out_bytes=0, vector_passes=2, phase="multinomial", hit=hit,
                            reduce=True)
    walk = elementwise_pass(hw, min(vocab, 16384), in_bytes=vb, out_bytes=0, vector_passes=3,
                            phase="multinomial", hit=hit)
    walk = sequence([(walk, 1)])  # the walk is one piece on one AIV: its own launch is not a new kernel
    gather = sequence([(launch(hw), 1), (fixed_cost(hw, hw.gm_read_latency_cycles + hw.gm_write_latency_cycles,
                                                    "gather"), 1)])
    return [as_phase(sort, "sort"), as_phase(cumsum, "cumsum"), as_phase(mask, "mask"),
            as_phase(sequence([(total, 1), (divide, 1)]), "renormalise"),
            as_phase(sequence([(sums, 1), (walk, 1)]), "multinomial"), as_phase(gather, "gather")]


def _concurrent(row: SimResult, rows: int) -> SimResult:
    """`rows` copies of a row's run on disjoint cores at once: counters, HBM busy time and unit weights times
    `rows`; the wave lasts the row's time or, if longer, the HBM time of all its rows (they share HBM)."""
    if rows == 1:
        return row
    time = max(row.time_cycles, rows * row.hbm_busy_cycles)
    phases = dict(row.phases)
    if time > row.time_cycles:
        phases["HBM contention"] = time - row.time_cycles
    gaps = list(row.gaps)
    if time > row.time_cycles:  # HBM still serves the other rows: every byte it serves passes L2 too
        rate = row.hw.hbm_bytes_per_cycle
        gaps.append(Gap(row.time_cycles, time, f"HBM contention ({rows} rows share HBM)", rate, rate))
    return SimResult(row.hw, time, phases, dict(row.busy), {k: v * rows for k, v in row.counters.items()},
                     list(row.segments), row.extrapolated, row.hbm_busy_cycles * rows,
                     {u: w * rows for u, w in row.unit_weights.items()}, gaps=gaps)


def simulate_top_p(vocab: int, hw: HardwareProfile, *, batch: int = 1, variant: str = "radix", s: int = 128,
                   warm_l2: bool = False, dtype: str = "fp16") -> TopPTiming:
    """Simulated top-p sampling of `batch` rows of `vocab` fp16 (or fp32) probabilities (one sample per row).

    One row, as the scan paper's Fig. 6.8 measured it (Llama 3's operator sequence, each a kernel launch):
    sort descending with indices (variant "radix": the LSB radix sort of kernels/radix_sort.py with the int8
    MCScan, 16 passes for fp16 keys, plus its encode/decode passes; "baseline": the same sort with the
    vector-only scan), the cumsum of the sorted probabilities ("radix": MCScan with tile side s, fp16 -> fp32;
    "baseline": the vector-only CumSum on one AIV, scan paper §4.1), then mask, renormalise, multinomial and
    gather as all-AIV kernels (the same in both variants). Counter "scans": 16 + 1 = 17 per row (claim S-16).

    dtype "fp32" (not the paper's kernel): the sort takes fp32 keys (32 passes, 4-byte keys), the cumsum of
    both variants is the vector-only CumSum in fp32 (scan.simulate_fp32_cumsum: the hardware model gives no
    fp32 cube rate, so MCScan cannot be timed in fp32), and the later kernels move 4-byte probabilities; 33
    scans per row.

    Batch (our assumption; the paper measured one row): a row's kernels use at most
    min(#AIC, ceil(vocab / tile)) AI cores (tile = s*s for "radix", 128*128 for "baseline": every kernel above
    works on tiles of that size, at most one per core at a time), so floor(#AIC / that) rows run at once on
    disjoint cores; a wave of rows lasts a row's time, or longer when the rows' HBM traffic together needs
    more (they share HBM). Waves run one after another.

    Raises:
        ParamError: vocab or batch negative, unknown variant or dtype, s not in 16/32/64/128.
    """
    from ascendbench.kernels.scan import S_VALUES

    for name, value, low in (("vocab", vocab, 0), ("batch", batch, 0)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise ParamError(name, f"must be a non-negative integer, got {value!r}")
    if variant not in TOPP_VARIANTS:
        raise ParamError("variant", f"must be one of {', '.join(TOPP_VARIANTS)}, got {variant!r}")
    if s not in S_VALUES:
        raise ParamError("s", f"must be one of {', '.join(map(str, S_VALUES))}, got {s}")
    if dtype not in TOPP_DTYPES:
        raise ParamError("dtype", f"must be one of {', '.join(TOPP_DTYPES)}, got {dtype!r}")
    row = sequence([(step, 1) for step in _row_steps(int(vocab), hw, variant, s, warm_l2, dtype)])
    # fp32: no MCScan of tile side s; the sort's SplitInd and the CumSum work on 128 x 128 tiles
    tile = s * s if variant == "radix" and dtype == "fp16" else 128 * 128
    cores = max(1, min(hw.ai_cores, math.ceil(vocab / tile)))
    per_wave = max(1, min(batch, hw.ai_cores // cores)) if batch else 1
    waves = math.ceil(batch / per_wave)
    full, last = divmod(batch, per_wave)
    parts = [(_concurrent(row, per_wave), full)]
    if last:
        parts.append((_concurrent(row, last), 1))
    sim = sequence(parts) if batch else fixed_cost(hw, 0.0, "sort")
    return TopPTiming(sim, row, int(row.counters.get("scans", 0)), cores, per_wave, waves,
                      _cumsum_kind(variant, dtype))


_SHOWN_TOKENS = 32  # the result document lists the tokens of at most this many rows


def generate_probs(batch: int, vocab: int, rng: np.random.Generator, dtype: str = "fp16") -> np.ndarray:
    """Seeded (batch, vocab) probability rows: softmax of logits 3 * N(0, 1) in float32, rounded to float16
    for dtype "fp16" (peaked rows like a language model's, the top token far above the tail); the same draws
    for either dtype."""
    out = np.empty((batch, vocab), dtype=TOPP_DTYPES[dtype][0])
    step = max(1, (1 << 22) // max(vocab, 1))
    for lo in range(0, batch, step):
        logits = 3 * rng.standard_normal((min(step, batch - lo), vocab), dtype=np.float32)
        logits -= logits.max(axis=1, keepdims=True)
        e = np.exp(logits)
        out[lo: lo + step] = e / e.sum(axis=1, keepdims=True)
    return out


class TopPParams(contract.KernelParams):
    """Top-p sampling of one token per row of `batch` rows of `vocab` fp16 (or fp32) probabilities (scan paper
    §5.5)."""

    p: float = Field(0.9, description="nucleus threshold in [0, 1]")
    vocab: int | None = Field(None, ge=0, le=contract.MAX_ELEMENTS, description=f"tokens per row{contract.FROM_INPUT}")
    batch: int = Field(1, ge=0, le=contract.MAX_ELEMENTS, description="rows, each sampled independently")
    variant: Literal["radix", "baseline"] = Field("radix", description="radix: radix sort + MCScan (the "
                                                  "paper's); baseline: vector-only sort + vector-only cumsum")
    s: contract.TileSide = 128
    warm_l2: contract.WarmL2 = False
    dtype: Literal["fp16", "fp32"] = Field("fp16", description="probabilities: fp16 (the paper's kernel) or "
                                           "fp32 (fp32 sort keys and the vector-only CumSum in fp32); default "
                                           "the input's")

    @field_validator("p")
    @classmethod
    def _p_in_unit_interval(cls, p: float) -> float:
        if not 0.0 <= p <= 1.0:  # NaN fails too
            raise ValueError(f"must be in [0, 1], got {p}")
        return p


class TopPKernel(contract.KernelSpec):
    """Llama 3's sample_top_p: sort descending, cumsum, mask, renormalise, sample, map back; 17 scans per fp16
    row (claim S-16)."""

    name = "topp"
    title = "Top-p (nucleus) sampling"
    source = "scan paper §5.5, Fig. 6.8"
    Params = TopPParams
    aliases = {"vocab": ("--n",)}  # --n as in the other kernels
    inputs = (contract.InputSpec("probs", ("fp16", "fp32"), "(batch, vocab) or (vocab,)",
                                 "softmax of 3 * N(0, 1) logits, in float16 (float32 with dtype fp32); seed "
                                 "[seed, 1]"),)
    variants = ("radix", "baseline")
    draws = True
    space = "topp"
    size_field = "vocab"
    run_command = contract.RunCommand(
        doc="Draw one token per row by Llama 3's sample_top_p (sort descending, cumsum, mask cumsum - prob > p,\n"
            "renormalise, sample, map back), timed on the simulated NPU: 17 scans per fp16 row (claim S-16).",
        help={"p": "Nucleus threshold in [0, 1] (Llama 3's top_p; the paper measured 0.1).",
              "vocab": "Tokens per row (vocabulary size), e.g. 128256 or 2**17. Optional with --input.",
              "batch": "Rows, each sampled independently (default 1, or the --input array's).",
              "variant": "radix (radix sort + MCScan, the paper's) or baseline (vector-only sort + vector-only "
                         "cumsum).",
              "s": "Tile side of the cumsum MCScan: 16, 32, 64 or 128.",
              "dtype": "Probabilities: fp16 (the paper's kernel) or fp32 (fp32 sort keys, the cumsum by the "
                       "vector-only CumSum in fp32); default the --input array's (fp32 for float32/float64), else "
                       "fp16.",
              "seed": "Seed of the draws (numpy default_rng(seed), as top_p_sample(seed=...)); generated rows use "
                      "default_rng([seed, 1]).",
              "input_file": "Probabilities: a .npy of shape (vocab,) or (batch, vocab), or a .npz with 'probs'; "
                            "float16, float32 (scanned in fp32), or float64 (rounded to float32).",
              "output_file": "Save the tokens as .npy, or 'tokens' and 'kept' (nucleus sizes) as .npz.",
              "verify": "Compare with the same rule using the other sort (radix sort vs NumPy's stable argsort).",
              "warm_l2": "Start with the probabilities in L2.", "trace": "Chrome trace JSON of one row's timeline."},
        output=".npy/.npz", from_input=("batch",))

    def bind(self, params, arrays):
        self.check_array_names(arrays)
        probs = arrays["probs"]
        if probs.ndim not in (1, 2):
            raise ParamError("input", f"probs must have shape (vocab,) or (batch, vocab), got {tuple(probs.shape)}")
        rows, length = probs.shape if probs.ndim == 2 else (1, probs.shape[0])
        if length == 0 and rows > 0:
            raise ParamError("input", f"probs of shape {tuple(probs.shape)} has no tokens; a probability row needs "
                                      "at least one")
        if "vocab" in params.model_fields_set and params.vocab != length:
            raise ParamError("vocab", f"{params.vocab} disagrees with the input's {length} tokens per row; drop "
                                      "--vocab or make them equal")
        if "batch" in params.model_fields_set and params.batch != rows:
            raise ParamError("batch", f"{params.batch} disagrees with the input's {rows} rows; drop --batch or make "
                                      "them equal")
        if probs.dtype not in (np.float16, np.float32, np.float64):
            raise ParamError("input", f"probs must be float16, float32 or float64, got {probs.dtype}")
        # float32 (and float64) rows run in fp32 unless --dtype fp16 asks for the paper's kernel: rounding them
        # to float16 would move the nucleus boundary
        dtype = params.dtype if "dtype" in params.model_fields_set else (
            "fp16" if probs.dtype == np.float16 else "fp32")
        return self.replace(params, vocab=int(length), batch=int(rows), dtype=dtype)

    def complete(self, arrays, params, seed):
        """Probabilities in the run's dtype: float16 rows as they are for fp16 and widened exactly for fp32;
        float32 rows as they are for fp32, rounded to float16 for --dtype fp16; float64 rows rounded to the
        dtype. A rounding is said in the report."""
        probs = arrays["probs"]
        target = TOPP_DTYPES[params.dtype][0]
        if probs.dtype == target:
            return dict(arrays), []
        if probs.dtype == np.float16:  # to float32: exact
            return {"probs": probs.astype(target)}, [
                "probs: float16 input widened to float32 (exact) for --dtype fp32"]
        with np.errstate(over="ignore", under="ignore"):
            rounded = probs.astype(target)
        if np.isinf(rounded).any() and not np.isinf(probs).any():
            limit = "65504 and does not fit float16" if target == np.float16 else "the float32 range"
            raise ParamError("input", f"probs: a probability exceeds {limit}")
        asked = " as --dtype fp16 asks (the paper's kernel)" if target == np.float16 else ""
        return {"probs": rounded}, [f"probs: {probs.dtype} input rounded to {np.dtype(target).name}{asked}"]

    def describe_size(self, params):
        return f"{params.batch:,} x {params.vocab:,} probabilities"

    def check(self, params, hw):
        if params.vocab == 0 and params.batch > 0:
            raise ParamError("vocab", "a probability row needs at least one token")

    def functional_bytes(self, params, generated):
        # input (fp16 or fp32), sort indices, fp32 sums, float64 draw sums
        extra = 0 if params.dtype == "fp16" else 2 * (3 if generated else 2)
        return params.batch * params.vocab * ((40 if generated else 38) + extra), "vocab"

    def generate(self, params, seed):
        rng = np.random.default_rng([seed, 1])
        return {"probs": generate_probs(params.batch, params.vocab, rng, params.dtype)}

    def compute(self, arrays, params, seed=0):
        probs = arrays["probs"]
        try:
            check_probs(probs)
        except DistributionError as exc:
            raise ParamError("input", str(exc)) from None
        u = np.random.default_rng(seed).random(params.batch)
        res = top_p_draw(probs, params.p, u, variant=params.variant)
        tokens, kept = np.atleast_1d(res.tokens), np.atleast_1d(res.kept)
        outputs = {"tokens" if params.batch <= _SHOWN_TOKENS else f"tokens (first {_SHOWN_TOKENS} rows)":
                   tokens[:_SHOWN_TOKENS].tolist()}
        if params.batch:
            outputs["nucleus size"] = (int(kept[0]) if params.batch == 1 else
                                       f"min {int(kept.min())}, mean {kept.mean():.1f}, max {int(kept.max())}")
        return contract.Outcome({"tokens": res.tokens, "kept": res.kept}, outputs, {"u": u})

    def verify(self, arrays, outcome, params):
        other = "baseline" if params.variant == "radix" else "radix"
        ref = top_p_draw(arrays["probs"], params.p, outcome.facts["u"], variant=other)
        got = outcome.arrays
        ok = np.array_equal(got["tokens"], ref.tokens) and np.array_equal(got["kept"], ref.kept)
        differ = int((np.atleast_1d(ref.tokens) != np.atleast_1d(got["tokens"])).sum())
        return contract.Check(ok, "the same rule with " + ("NumPy's stable argsort" if params.variant == "radix" else
                                                 "the radix sort") + " (same uniforms)",
                     None if ok else f"tokens differ in {differ} rows")

    _last: tuple | None = None  # (params, hw, timing) of the last call: simulate, notes and outputs share it

    def timing(self, params, hw) -> TopPTiming:
        """The simulated call (simulate_top_p), computed once for the report's time, notes and outputs."""
        last = self._last
        if last is not None and last[0] == params and last[1] is hw:
            return last[2]
        timing = simulate_top_p(params.vocab, hw, batch=params.batch, variant=params.variant, s=params.s,
                                warm_l2=params.warm_l2, dtype=params.dtype)
        self._last = (params, hw, timing)
        return timing

    def simulate(self, params, hw, facts=None):
        return self.timing(params, hw).sim

    def bytes_moved(self, params, facts=None):
        return params.batch * (params.vocab * TOPP_DTYPES[params.dtype][1] + 8)

    def dtypes(self, params, outcome, arrays=None):
        return {"probs": params.dtype, "tokens": "int64"}

    def document_params(self, params, sim):
        return {"p": params.p, "batch": params.batch, "s": params.s, "warm_l2": params.warm_l2}

    def model_outputs(self, params, hw):
        t = self.timing(params, hw)
        return {"scans_per_row": t.scans_per_row, "rows_per_wave": t.rows_per_wave, "cumsum": t.cumsum}

    def notes(self, params, hw):
        t = self.timing(params, hw)
        passes = 8 * TOPP_DTYPES[params.dtype][1]
        lines = [(f"per row: sort ({passes} radix passes) + cumsum + mask, renormalise, multinomial, gather; "
                  f"{t.cores_per_row} AI core(s) per row, {t.rows_per_wave} row(s) at once, {t.waves} wave(s)")]
        if params.dtype == "fp32":
            lines.append("fp32 probabilities, not the paper's fp16 kernel: fp32 sort keys (32 radix passes) "
                         "and the cumsum by the vector-only CumSum in fp32 (the hardware model has no fp32 cube "
                         "rate for MCScan)")
        return lines
