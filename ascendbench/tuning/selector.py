"""A tile selector learned from solved shapes: beyond the HGEMM paper's rule (§4.2.3), a readable table that falls
back to the paper's rule wherever it has no evidence of doing better.

Shapes are put in buckets by quantile thresholds of the training shapes on M (LEVELS["m"] levels), N and K; each
bucket holds the tile (M0, N0, K0) with the smallest total regret over the training shapes that fall in it, where
a shape's regret for a tile is log(time(tile) / time(its best tile)) on the timing model (the other options as
the paper's kernel runs them: no SplitK, ShuffleK, padding and double buffering on). A tile is a candidate for a
bucket only if it runs on every training shape there and is at most MARGIN slower than the paper's tile on each
of them; a bucket where no candidate is faster than the paper's tile in total, and an empty bucket, say "paper".
Shapes outside the training ranges (per dimension) are not the table's business either: the paper's rule. So the
learned selector departs from the paper only where its training shapes showed a gain.

The table is data (JSON, `ascendbench/tuning/selectors/`), made by `benchmarks/learn_selector.py`, which also
measures it on held-out shapes; `ascendbench hgemm select --selector learned` prints its decision trace.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

__all__ = ["LEVELS", "MARGIN", "SELECTORS_PACKAGE", "TILE_OPTIONS", "LearnedSelector", "SelectorError", "Solved",
           "fit", "load_selector", "selector_path"]

SELECTORS_PACKAGE = "ascendbench.tuning"
TILE_OPTIONS = {"split_k": 1, "shuffle_k": True, "padding": True, "double_buffer": True}  # as the paper runs
LEVELS = {"m": 3, "n": 2, "k": 2}  # quantile levels per dimension (M decides most: 1 to thousands of rows)
MARGIN = 0.01  # a candidate tile is at most this much slower than the paper's on every training shape

Tile = tuple[int, int, int]
PAPER = "paper"  # a bucket's entry: use the paper's rule


@dataclass(frozen=True)
class Solved:
    """A training or held-out shape: (M, N, K), the simulated time (s) of every tile that runs, and the time of
    the paper's selector's tile."""

    shape: tuple[int, int, int]
    times: Mapping[Tile, float]
    paper: float


class SelectorError(ValueError):
    """No learned selector for this hardware, or a selector file that is not one."""


@dataclass(frozen=True)
class LearnedSelector:
    """thresholds: per dimension (M, N, K) the ascending cut points between its levels; table: bucket key
    ("m<i>n<j>k<l>", the levels) -> {"tile": [M0, N0, K0] or "paper", "shapes": training shapes there,
    "mean_regret": their mean time / best - 1 with that choice, "gain_over_paper": their geometric-mean
    speed-up over the paper's tile}; ranges: per dimension the (lowest, highest) value trained on."""

    hardware: str
    thresholds: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]
    table: dict[str, dict[str, Any]]
    ranges: tuple[tuple[int, int], tuple[int, int], tuple[int, int]]
    trained_on: dict[str, Any] = field(default_factory=dict)

    def levels(self, m: int, n: int, k: int) -> tuple[int, int, int]:
        return tuple(sum(v >= t for t in cuts) for v, cuts in zip((m, n, k), self.thresholds, strict=True))  # type: ignore[return-value]

    def bucket(self, m: int, n: int, k: int) -> str:
        return "".join(f"{name}{level}" for name, level in zip("mnk", self.levels(m, n, k), strict=True))

    def select(self, m: int, n: int, k: int, paper: Tile) -> tuple[Tile, list[str], str]:
        """(M0, N0, K0) for an M x N x K GEMM, the decision trace (one line per step) and its source: "learned"
        (the bucket's tile) or "paper" (`paper`, the paper's selector's tile for this shape: outside the
        training ranges, or a bucket where the table has no evidence of doing better)."""
        outside = [f"{name} = {v} (trained on {lo} to {hi})" for name, v, (lo, hi)
                   in zip("MNK", (m, n, k), self.ranges, strict=True) if not lo <= v <= hi]
        if outside:
            return paper, [f"outside the training ranges: {', '.join(outside)}; the paper's rule: "
                           f"{_tile_text(paper)}"], PAPER
        trace = []
        for name, v, cuts, level in zip("MNK", (m, n, k), self.thresholds, self.levels(m, n, k), strict=True):
            lo = f"{cuts[level - 1]} <= " if level else ""
            hi = f" < {cuts[level]}" if level < len(cuts) else ""
            trace.append(f"{name} = {v}: level {level} of {len(cuts) + 1} ({lo}{name}{hi})")
        key = self.bucket(m, n, k)
        entry = self.table.get(key)
        if entry is None:
            trace.append(f"bucket {key}: no training shape; the paper's rule: {_tile_text(paper)}")
            return paper, trace, PAPER
        if entry["tile"] == PAPER:
            trace.append(f"bucket {key}: no tile beat the paper's rule on its {entry['shapes']} training shapes "
                         f"within {MARGIN:.0%} on each; the paper's rule: {_tile_text(paper)}")
            return paper, trace, PAPER
        tile = tuple(entry["tile"])
        trace.append(f"bucket {key}: tile {_tile_text(tile)} (least regret over its {entry['shapes']} training "
                     f"shapes, mean {entry['mean_regret'] * 100:.1f}% slower than each one's best tile, "
                     f"{entry['gain_over_paper']:.3f}x the paper's tile)")
        return tile, trace, "learned"  # type: ignore[return-value]

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "learned-tile-selector", "format": 2, "hardware": self.hardware,
                "thresholds": {name: list(cuts) for name, cuts in zip("mnk", self.thresholds, strict=True)},
                "ranges": {name: list(r) for name, r in zip("mnk", self.ranges, strict=True)},
                "table": self.table, "trained_on": self.trained_on}

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> LearnedSelector:
        try:
            if doc["kind"] != "learned-tile-selector" or doc.get("format") != 2:
                raise KeyError("kind or format")
            thresholds = tuple(tuple(int(v) for v in doc["thresholds"][name]) for name in "mnk")
            ranges = tuple((int(doc["ranges"][name][0]), int(doc["ranges"][name][1])) for name in "mnk")
            return cls(str(doc["hardware"]), thresholds, {str(k): dict(v) for k, v in doc["table"].items()},  # type: ignore[arg-type]
                       ranges, dict(doc.get("trained_on", {})))  # type: ignore[arg-type]
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise SelectorError(f"not a learned tile selector of this version ({exc})") from None


def _tile_text(tile: Sequence[int]) -> str:
    return "x".join(str(v) for v in tile)


def fit(solved: Sequence[Solved], hardware: str, ranges: Sequence[tuple[int, int]],
        trained_on: Mapping[str, Any] | None = None) -> LearnedSelector:
    """Learn the table from solved shapes (see the module docstring); `ranges`: the (low, high) per dimension
    the shapes were drawn from. Raises SelectorError without shapes."""
    if not solved:
        raise SelectorError("no solved shapes to learn from")
    thresholds = tuple(_cuts([s.shape[i] for s in solved], LEVELS[name]) for i, name in enumerate("mnk"))
    probe = LearnedSelector(hardware, thresholds, {}, tuple(ranges))  # type: ignore[arg-type]
    buckets: dict[str, list[Solved]] = {}
    for s in solved:
        buckets.setdefault(probe.bucket(*s.shape), []).append(s)
    table = {key: _choose(members) for key, members in sorted(buckets.items())}
    return LearnedSelector(hardware, thresholds, table, tuple(ranges), dict(trained_on or {}))  # type: ignore[arg-type]


def _cuts(values: Sequence[int], levels: int) -> tuple[int, ...]:
    """The levels-quantiles of `values` (levels - 1 ascending cut points)."""
    if levels < 2:
        return ()
    return tuple(int(v) for v in statistics.quantiles(values, n=levels, method="inclusive"))


def _choose(members: Sequence[Solved]) -> dict[str, Any]:
    """A bucket's entry: the candidate tile of least total log regret (module docstring), or "paper"."""
    best = {id(s): min(s.times.values()) for s in members}
    common = set.intersection(*(set(s.times) for s in members))
    candidates = [tile for tile in common if all(s.times[tile] <= s.paper * (1 + MARGIN) for s in members)]

    def total(tile: Tile) -> float:
        return sum(math.log(s.times[tile] / best[id(s)]) for s in members)

    paper_total = sum(math.log(s.paper / best[id(s)]) for s in members)
    tile = min(sorted(candidates), key=total) if candidates else None
    if tile is None or total(tile) >= paper_total:
        chosen, times = PAPER, [s.paper for s in members]
    else:
        chosen, times = list(tile), [s.times[tile] for s in members]
    return {"tile": chosen, "shapes": len(members),
            "mean_regret": sum(t / best[id(s)] - 1 for t, s in zip(times, members, strict=True)) / len(members),
            "gain_over_paper": math.exp(sum(math.log(s.paper / t) for t, s in zip(times, members, strict=True))
                                        / len(members))}


def selector_path(hardware: str) -> Path:
    return Path(str(resources.files(SELECTORS_PACKAGE) / "selectors" / f"hgemm-{hardware}.json"))


def load_selector(hardware: str, path: Path | None = None) -> LearnedSelector:
    """The learned selector of a hardware profile (shipped in the package) or of a file.
    Raises SelectorError when there is none or the file is not one."""
    target = path or selector_path(hardware)
    try:
        doc = json.loads(Path(target).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SelectorError(f"no learned selector for {hardware!r} (make one with benchmarks/learn_selector.py)"
                            ) from None
    except (OSError, ValueError) as exc:
        raise SelectorError(f"cannot read {target}: {exc}") from None
    return LearnedSelector.from_dict(doc)
