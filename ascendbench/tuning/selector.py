"""A tile selector learned from solved shapes: beyond the HGEMM paper's rule (§4.2.3), a readable table.

Shapes are put in buckets by thresholds on M, N and K (a dimension is "small" below its threshold, "large"
from it); each bucket holds the tile (M0, N0, K0) with the smallest total regret over the training shapes that
fall in it, where a shape's regret for a tile is log(time(tile) / time(its best tile)) on the timing model
(the other options as the paper's kernel runs them: no SplitK, ShuffleK, padding and double buffering on).
A tile that cannot run on some training shape of its bucket is never chosen for it. Empty buckets take the
tile of least regret over all training shapes. The thresholds are the training shapes' medians.

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

__all__ = ["SELECTORS_PACKAGE", "TILE_OPTIONS", "LearnedSelector", "SelectorError", "fit", "load_selector",
           "selector_path"]

SELECTORS_PACKAGE = "ascendbench.tuning"
TILE_OPTIONS = {"split_k": 1, "shuffle_k": True, "padding": True, "double_buffer": True}  # as the paper runs

Tile = tuple[int, int, int]


class SelectorError(ValueError):
    """No learned selector for this hardware, or a selector file that is not one."""


@dataclass(frozen=True)
class LearnedSelector:
    """thresholds: (M, N, K) bucket thresholds; table: bucket ("MNK" of "s"/"l") -> tile, with the number of
    training shapes and their mean regret (time / best - 1) there; default: the tile for empty buckets."""

    hardware: str
    thresholds: tuple[int, int, int]
    table: dict[str, dict[str, Any]]
    default: Tile
    trained_on: dict[str, Any] = field(default_factory=dict)

    def bucket(self, m: int, n: int, k: int) -> str:
        return "".join("l" if v >= t else "s" for v, t in zip((m, n, k), self.thresholds, strict=True))

    def select(self, m: int, n: int, k: int) -> tuple[Tile, list[str]]:
        """(M0, N0, K0) for an M x N x K GEMM and the decision trace (one line per step)."""
        key = self.bucket(m, n, k)
        low, high = self.trained_on.get("range", (None, None))
        outside = [] if low is None else [f"{name} = {v}" for name, v in zip("MNK", (m, n, k), strict=True)
                                          if not low <= v <= high]
        trace = [f"outside the training range {low} to {high} ({', '.join(outside)}): the table was not learned "
                 "there, its nearest bucket is used"] if outside else []
        trace += [f"{name} = {v} {'>=' if c == 'l' else '<'} {t}: {'large' if c == 'l' else 'small'}"
                 for name, v, t, c in zip("MNK", (m, n, k), self.thresholds, key, strict=True)]
        entry = self.table.get(key)
        if entry is None:
            trace.append(f"bucket {key}: no training shape; default tile {_tile_text(self.default)}")
            return self.default, trace
        tile = tuple(entry["tile"])
        trace.append(f"bucket {key}: tile {_tile_text(tile)} (least regret over its {entry['shapes']} training "
                     f"shapes, mean {entry['mean_regret'] * 100:.1f}% slower than each one's best tile)")
        return tile, trace  # type: ignore[return-value]

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "learned-tile-selector", "hardware": self.hardware, "thresholds": list(self.thresholds),
                "table": self.table, "default": list(self.default), "trained_on": self.trained_on}

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> LearnedSelector:
        try:
            if doc["kind"] != "learned-tile-selector":
                raise KeyError("kind")
            return cls(str(doc["hardware"]), tuple(int(v) for v in doc["thresholds"]),  # type: ignore[arg-type]
                       {str(k): dict(v) for k, v in doc["table"].items()},
                       tuple(int(v) for v in doc["default"]), dict(doc.get("trained_on", {})))  # type: ignore[arg-type]
        except (KeyError, TypeError, ValueError) as exc:
            raise SelectorError(f"not a learned tile selector ({exc})") from None


def _tile_text(tile: Sequence[int]) -> str:
    return "x".join(str(v) for v in tile)


def fit(solved: Sequence[tuple[tuple[int, int, int], Mapping[Tile, float]]], hardware: str,
        trained_on: Mapping[str, Any] | None = None) -> LearnedSelector:
    """Learn the table from solved shapes: (M, N, K) with the simulated time of every tile that can run.
    Raises SelectorError without shapes."""
    if not solved:
        raise SelectorError("no solved shapes to learn from")
    thresholds = tuple(int(statistics.median(shape[i] for shape, _ in solved)) for i in range(3))
    probe = LearnedSelector(hardware, thresholds, {}, (0, 0, 0))  # type: ignore[arg-type]
    buckets: dict[str, list[Mapping[Tile, float]]] = {}
    for shape, times in solved:
        buckets.setdefault(probe.bucket(*shape), []).append(times)
    table = {}
    for key, members in sorted(buckets.items()):
        tile, regret = _least_regret(members)
        table[key] = {"tile": list(tile), "shapes": len(members), "mean_regret": regret}
    default, _ = _least_regret([times for _, times in solved])
    return LearnedSelector(hardware, thresholds, table, default, dict(trained_on or {}))  # type: ignore[arg-type]


def _least_regret(members: Sequence[Mapping[Tile, float]]) -> tuple[Tile, float]:
    """The tile that runs on every member with the least total log regret, and its mean regret."""
    common = set.intersection(*(set(times) for times in members))
    if not common:
        raise SelectorError("no tile runs on every training shape of a bucket")
    best = {id(times): min(times.values()) for times in members}

    def total(tile: Tile) -> float:
        return sum(math.log(times[tile] / best[id(times)]) for times in members)

    tile = min(sorted(common), key=total)
    mean = sum(times[tile] / best[id(times)] - 1 for times in members) / len(members)
    return tile, mean


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
