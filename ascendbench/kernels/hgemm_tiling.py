"""The HGEMM paper's self-adaptive tiling selector: choose M0 x N0 x K0 for an M x N x K GEMM (pure function).

The selector balances fewer accumulation loops along K (a larger K0) against the number of AI cores a tiling
needs (a larger M0, N0 needs fewer): it tries K0 from Table 2 larger first and, for each K0, the M0 x N0 of
Table 1 that fit the buffers for that K0, smaller first, and accepts the first tiling whose aicore_num is
smaller than the threshold (the number of AI cores of the chip). Table 2's index_mn_max keeps blocks inside the
paper's chip's L0 buffers; on another profile a `fits` check (kernels.hgemm.tile_misfit, the check run hgemm
makes) skips the candidates that do not fit its buffers.

Source: the HGEMM paper ("Efficient Low-Precision GEMM on Ascend NPU") §4.2.1 equations 4-5 (aicore_num,
acc_loop), §4.2.2 Table 1 (index_mn -> M0, N0), §4.2.3 Table 2 (index_k -> K0, index_mn_max) and the two-queue
algorithm with its worked example 2048 x 128 x 2048 -> 128 x 128 x 256 (claims G-1, G-2, G-3).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, Literal

__all__ = [
    "DEFAULT_THRESHOLD",
    "FALLBACK",
    "NoTileFits",
    "TABLE_1",
    "TABLE_2",
    "TilingDecision",
    "TilingStep",
    "acc_loop",
    "aicore_num",
    "select_tiling",
]

# Table 1 (§4.2.2): index_mn -> (M0, N0).
TABLE_1: dict[int, tuple[int, int]] = {0: (16, 16), 1: (32, 32), 2: (64, 64), 3: (128, 128), 4: (256, 128)}
# Table 2 (§4.2.3): index_k -> (K0, index_mn_max); index_mn_max keeps each block inside L0A, L0B and L0C.
TABLE_2: dict[int, tuple[int, int]] = {0: (128, 4), 1: (256, 3), 2: (512, 2), 3: (1024, 1)}
# §4.2.3: the final solution when no K0 admits a tiling under the threshold, M0 x N0 x K0 = 256 x 128 x 128.
FALLBACK: tuple[int, int, int] = (256, 128, 128)
# §4.2.3: the threshold the paper uses on the Atlas 300T A2 (its number of AI cores).
DEFAULT_THRESHOLD = 20

# fits(m0, n0, k0): None when the tile fits the chip's buffers, else why not ("UB needs 98,304 B, ...")
Fits = Callable[[int, int, int], str | None]


class NoTileFits(ValueError):
    """No tile the selector tries, the fallback included, fits the buffers (see select_tiling's `fits`).

    `smallest` is the smallest tile tried, M0xN0xK0, and `why` the reason it does not fit."""

    def __init__(self, tried: int, smallest: str, why: str) -> None:
        super().__init__(f"fits: none of the {tried} tile(s) the HGEMM paper's selector tries fits (the "
                         f"smallest, {smallest}: {why})")
        self.tried, self.smallest, self.why = tried, smallest, why


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def aicore_num(m: int, n: int, m0: int, n0: int, batch: int = 1) -> int:
    """Number of AI cores (one per M0 x N0 block of C) a tiling needs: ceil(M/M0) * ceil(N/N0) * batch.

    Args:
        m, n: rows and columns of C (elements, >= 0).
        m0, n0: tile sizes along M and N (elements, >= 1).
        batch: number of M x N x K GEMMs in the batch (the paper's n).

    Returns:
        The count as a Python int (exact at any size, no overflow).

    Source: HGEMM paper §4.2.1 equation 4; example (claim G-2): 256 x 4096, tile 128 x 512, 8 batches -> 128.
    """
    return _ceil_div(int(m), int(m0)) * _ceil_div(int(n), int(n0)) * int(batch)


def acc_loop(k: int, k0: int) -> int:
    """Rounds of accumulation along K of one block of C: ceil(K/K0).

    Args:
        k: the reduction dimension K (elements, >= 0).
        k0: tile size along K (elements, >= 1).

    Returns:
        The count as a Python int (exact at any size).

    Source: HGEMM paper §4.2.1 equation 5; example (claim G-2): K = 512, K0 = 64 -> 8.
    """
    return _ceil_div(int(k), int(k0))


@dataclass(frozen=True)
class TilingStep:
    """One candidate the selector looked at, in the order it looked.

    k0, index_k: the K0 of Table 2 and its index.
    index_mn, m0, n0: the Table 1 entry tried (None when K0 itself was rejected by the K0 < 2K rule).
    aicore_num, acc_loop: equations 4 and 5 for this candidate (None when K0 was rejected).
    accepted: whether the selector stopped here.
    reason: why, e.g. "aicore_num 1024 >= threshold 20", "accepted: aicore_num 16 < threshold 20",
        "K0 1024 not < 2K (2K = 200)" or "does not fit: UB needs 49,152 B, 32,768 B on <profile>".
    misfit: why the tile does not fit the buffers (None when it fits, or when no `fits` check was given).
    """

    k0: int
    index_k: int
    index_mn: int | None
    m0: int | None
    n0: int | None
    aicore_num: int | None
    acc_loop: int | None
    accepted: bool
    reason: str
    misfit: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict; `misfit` only where a tile did not fit (documents of fitting runs unchanged)."""
        out = asdict(self)
        if out["misfit"] is None:
            del out["misfit"]
        return out


@dataclass(frozen=True)
class TilingDecision:
    """The tiling chosen for one M x N x K GEMM (with batch) and how it was reached.

    m0, n0, k0: the tile sizes (elements).
    aicore_num, acc_loop: equations 4 and 5 for the chosen tiling.
    source: "selector" (a candidate was accepted) or "fallback" (none was: 256 x 128 x 128, or when that does
        not fit the buffers, the fitting candidate tried with the fewest aicore_num).
    trace: every candidate tried, in queue order (see TilingStep).
    m, n, k, batch, threshold: the inputs.
    fallback_misfit: why 256 x 128 x 128 does not fit, when the fallback is another tile (else None).
    """

    m0: int
    n0: int
    k0: int
    aicore_num: int
    acc_loop: int
    source: Literal["selector", "fallback"]
    trace: tuple[TilingStep, ...]
    m: int
    n: int
    k: int
    batch: int
    threshold: int
    fallback_misfit: str | None = None

    @property
    def tile(self) -> str:
        """The chosen tiling written M0xN0xK0, e.g. "128x128x256"."""
        return f"{self.m0}x{self.n0}x{self.k0}"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: the inputs, the chosen tiling and the trace as a list of dicts."""
        return {
            "m": self.m, "n": self.n, "k": self.k, "batch": self.batch, "threshold": self.threshold,
            "m0": self.m0, "n0": self.n0, "k0": self.k0, "tile": self.tile,
            "aicore_num": self.aicore_num, "acc_loop": self.acc_loop, "source": self.source,
            "trace": [step.to_dict() for step in self.trace],
        } | ({"fallback_misfit": self.fallback_misfit} if self.fallback_misfit is not None else {})


def _check_positive(name: str, value: int) -> int:
    """`value` as a Python int (NumPy integers accepted); ValueError naming `name` unless an integer >= 1."""
    if isinstance(value, bool):  # every bad argument is a ValueError naming it (the documented contract)
        raise ValueError(f"{name}: must be an integer, got {value!r}")  # noqa: TRY004
    try:
        value = operator.index(value)
    except TypeError:
        raise ValueError(f"{name}: must be an integer, got {value!r}") from None
    if value < 1:
        raise ValueError(f"{name}: must be at least 1, got {value}")
    return value


def select_tiling(
    m: int, n: int, k: int, batch: int = 1, threshold: int = DEFAULT_THRESHOLD, fits: Fits | None = None
) -> TilingDecision:
    """Choose M0 x N0 x K0 for an M x N x K GEMM with the paper's two-queue selector.

    Queue A holds the K0 of Table 2 with K0 < 2K, larger first. For each K0 popped, queue B holds the Table 1
    entries with index_mn <= that K0's index_mn_max, smaller first; the first whose aicore_num (equation 4)
    is smaller than the threshold (strictly) is the answer. When no K0 admits one, or queue A is empty
    (K <= 64), the answer is the fallback 256 x 128 x 128.

    With `fits`, a candidate that does not fit the buffers is passed over as one over the threshold is (the
    next candidate of the queues is tried), and when the fallback does not fit either, the answer is the
    fitting candidate tried with the fewest aicore_num (the fallback's aim: fewest blocks; the earliest in
    queue order on a tie, so the larger K0).

    Args:
        m, n, k: the GEMM's dimensions (elements, each >= 1).
        batch: number of GEMMs of this size in the batch (>= 1).
        threshold: AI cores available (>= 1); the paper uses 20 for the Atlas 300T A2.
        fits: fits(m0, n0, k0) -> None when the tile fits the chip's buffers, else the reason (a str). None:
            every tile fits (the paper's chip, for which Table 2's index_mn_max was made).

    Returns:
        The TilingDecision, with the trace of every candidate tried (K0 rejected by K0 < 2K included).

    Raises:
        ValueError: an argument is not an integer >= 1; the message starts with the argument's name.
        NoTileFits (a ValueError, message starting "fits: "): with `fits`, no candidate tried and not the
            fallback fits.

    Source: HGEMM paper §4.2.3 (Tables 1 and 2, the algorithm, and the example, claims G-1 and G-3).
    """
    m, n, k = _check_positive("m", m), _check_positive("n", n), _check_positive("k", k)
    batch, threshold = _check_positive("batch", batch), _check_positive("threshold", threshold)
    steps: list[TilingStep] = []
    fitting: list[tuple[int, TilingStep]] = []  # (aicore_num, step) of the candidates that fit, in queue order
    for index_k in sorted(TABLE_2, key=lambda i: TABLE_2[i][0], reverse=True):  # queue A: larger K0 first
        k0, index_mn_max = TABLE_2[index_k]
        if not k0 < 2 * k:
            steps.append(TilingStep(k0, index_k, None, None, None, None, None, False,
                                    f"K0 {k0} not < 2K (2K = {2 * k})"))
            continue
        loops = acc_loop(k, k0)
        queue_b = sorted((i for i in TABLE_1 if i <= index_mn_max),
                         key=lambda i: TABLE_1[i][0] * TABLE_1[i][1])
        for index_mn in queue_b:  # queue B: smaller M0 x N0 first
            m0, n0 = TABLE_1[index_mn]
            cores = aicore_num(m, n, m0, n0, batch)
            misfit = fits(m0, n0, k0) if fits is not None else None
            if cores < threshold and misfit is None:
                steps.append(TilingStep(k0, index_k, index_mn, m0, n0, cores, loops, True,
                                        f"accepted: aicore_num {cores} < threshold {threshold}"))
                return TilingDecision(m0, n0, k0, cores, loops, "selector", tuple(steps),
                                      m, n, k, batch, threshold)
            reason = (f"aicore_num {cores} >= threshold {threshold}" if cores >= threshold
                      else f"does not fit: {misfit}")
            steps.append(TilingStep(k0, index_k, index_mn, m0, n0, cores, loops, False, reason, misfit))
            if misfit is None:
                fitting.append((cores, steps[-1]))
    m0, n0, k0 = FALLBACK
    misfit = fits(m0, n0, k0) if fits is not None else None
    if misfit is None:
        return TilingDecision(m0, n0, k0, aicore_num(m, n, m0, n0, batch), acc_loop(k, k0), "fallback",
                              tuple(steps), m, n, k, batch, threshold)
    if not fitting:
        tried = [(s.m0 * s.n0, s.k0, s) for s in steps if s.m0 is not None]
        if not tried:
            raise NoTileFits(1, f"{m0}x{n0}x{k0}", misfit)
        *_, small = min(tried, key=lambda t: t[:2])
        raise NoTileFits(len(tried) + 1, f"{small.m0}x{small.n0}x{small.k0}", small.misfit)
    cores, best = min(fitting, key=lambda c: c[0])  # min() keeps the first of equal ones: queue order
    return TilingDecision(best.m0, best.n0, best.k0, cores, best.acc_loop, "fallback", tuple(steps),
                          m, n, k, batch, threshold, fallback_misfit=misfit)
