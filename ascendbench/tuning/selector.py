"""A tile selector learned from solved shapes: beyond the HGEMM paper's rule (§4.2.3), a ranking of the tiles
that departs from the paper's tile only where cross-validation on its training shapes showed that doing so is
safe.

The model predicts, for an M x N x K GEMM and a tile (M0, N0, K0), y = log(time(tile) / time(the paper's tile))
as w . (f(shape, tile) - f(shape, paper's tile)) + c[tile] - c[paper's tile]: f are FEATURES, closed-form counts
of the tiling (waves of blocks over the AI cores, K blocks, L1 panels, padding waste, L2 hit shares, cube
fractals and bytes moved per core: `tile_features`), c one weight per tile. w and c are fitted by ridge regression
(RIDGE, on standardised columns) on every tile that runs, over the training shapes (each shape solved on the
timing model with the other options as the paper's kernel runs them: no SplitK, ShuffleK, padding and double
buffering on).

Trust: the training shapes are split into FOLDS folds (fixed seed); a model fitted without a fold predicts its
shapes, and a pair (the paper's tile, a tile) is trusted when every time the tile was predicted faster than the
paper's tile on a held-back shape it was at most SAFE_LOSS slower in truth. `select` takes the tile of least
predicted y among the trusted tiles for the shape's paper tile whose predicted gain is at least MARGIN (in log:
y < -MARGIN), else the paper's tile; shapes outside the training ranges (per dimension) get the paper's tile too.
SAFE_LOSS and MARGIN were chosen by nested cross-validation on the training shapes only (benchmarks/
learn_selector.py --cross-validate prints it for these values).

The model is data (JSON, `ascendbench/tuning/selectors/`), made by `benchmarks/learn_selector.py`, which also
measures it on held-out shapes; `ascendbench hgemm select --selector learned` prints its decision trace.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["FEATURES", "FOLDS", "MARGIN", "RIDGE", "SAFE_LOSS", "SELECTORS_PACKAGE", "TILE_OPTIONS",
           "LearnedSelector", "SelectorError", "Solved", "fit", "load_selector", "selector_path", "tile_features"]

SELECTORS_PACKAGE = "ascendbench.tuning"
TILE_OPTIONS = {"split_k": 1, "shuffle_k": True, "padding": True, "double_buffer": True}  # as the paper runs
RIDGE = 1.0  # ridge penalty on the standardised columns
FOLDS = 4  # cross-validation folds of the training shapes that decide which tiles are trusted
FOLD_SEED = 1
SAFE_LOSS = 0.01  # a trusted tile was never more than this slower than the paper's where it was predicted faster
MARGIN = 0.05  # least predicted gain, log(time(paper's tile) / time(tile)), to leave the paper's tile

Tile = tuple[int, int, int]
PAPER = "paper"  # source of a decision that keeps the paper's tile

FEATURES = (
    "log cube", "log L2 read", "log HBM read", "log GM read", "log max(cube, L2, HBM)",
    "log max(cube, L2, HBM) + C write", "log max(cube, GM)", "log waves", "log K blocks", "log active cores",
    "log blocks", "M fill", "N fill", "K fill", "log waves x K blocks", "last wave fill", "log L1 panels",
    "log panel latency + cube", "A L2 hit", "B L2 hit", "halves x log(waves x K blocks)",
    "A padded x log(waves x K blocks)", "B padded x log(waves x K blocks)", "A padded x log L1 panels",
    "B padded x log L1 panels",
)


def tile_features(m: int, n: int, k: int, tiles: Sequence[Tile], machine: Mapping[str, float]) -> np.ndarray:
    """FEATURES of an M x N x K GEMM for each tile: a float array, len(tiles) x len(FEATURES).

    machine: ai_cores, l1_bytes, l0a_bytes, l0b_bytes, gm_read_bytes_per_cycle (one core), l2_read_bytes_per_cycle
    (one core), hbm_bytes_per_cycle (the chip, after efficiency) and gm_read_latency_cycles of the profile.
    Blocks of C are M0 x N0 (ceil(M/M0) x ceil(N/N0) of them) in waves over the AI cores, each ceil(K/K0) K
    blocks deep, read in L1 panels as deep as two slots of (M0 + N0) x K1 fp16 fit L1; L2 hit shares follow the
    kernel's swizzle (the direction with fewer blocks varies fastest); cycle counts are per busiest core."""
    cores = machine["ai_cores"]
    t = np.asarray(tiles, dtype=float).reshape(-1, 3)
    m0, n0, k0 = t[:, 0], t[:, 1], t[:, 2]
    bm, bn, kb = np.ceil(m / m0), np.ceil(n / n0), np.ceil(k / k0)
    blocks = bm * bn
    waves = np.ceil(blocks / cores)
    active = np.minimum(blocks, cores)
    me, ne, ke = np.minimum(m0, m), np.minimum(n0, n), np.minimum(k0, k)
    k1 = np.maximum(k0, np.minimum((machine["l1_bytes"] // (4 * (m0 + n0))) // k0 * k0, kb * k0))
    panels = waves * np.ceil(kb / (k1 // k0))
    fast_a = bm <= bn
    fast, slow = np.where(fast_a, bm, bn), np.where(fast_a, bn, bm)
    hit_slow = np.where(fast <= active, 1 - 1 / fast, 1 - 1 / np.maximum(np.minimum(active, fast), 1))
    hit_fast = 1 - 1 / np.maximum(slow, 1)
    hit_a, hit_b = np.where(fast_a, hit_fast, hit_slow), np.where(fast_a, hit_slow, hit_fast)
    missed = (me * (1 - hit_a) + ne * (1 - hit_b)) * ke * 2
    steps = waves * kb
    cube = steps * np.ceil(me / 16) * np.ceil(ne / 16) * np.ceil(ke / 16)
    moved = (me + ne) * ke * 2
    l2 = steps * moved / machine["l2_read_bytes_per_cycle"]
    hbm = steps * missed * active / machine["hbm_bytes_per_cycle"]
    gm = steps * moved / machine["gm_read_bytes_per_cycle"]
    c_write = waves * me * ne * 2 / machine["gm_read_bytes_per_cycle"]
    bound = np.maximum.reduce([cube, l2, hbm])
    # the kernel multiplies a block in two K0/2 halves when L0A or L0B holds only one block
    halves = ((m0 * k0 * 4 > machine["l0a_bytes"]) | (k0 * n0 * 4 > machine["l0b_bytes"])) & (k0 % 32 == 0)
    pad_a, pad_b = float((k * 2) % 512 != 0), float((n * 2) % 512 != 0)
    log_steps, log_panels = np.log(steps), np.log(panels)
    cols = [np.log(cube), np.log(l2), np.log(hbm + 1), np.log(gm), np.log(bound), np.log(bound + c_write),
            np.log(np.maximum(cube, gm)), np.log(waves), np.log(kb), np.log(active), np.log(blocks),
            m / (bm * m0), n / (bn * n0), k / (kb * k0), log_steps, blocks / cores / waves, log_panels,
            np.log(panels * machine["gm_read_latency_cycles"] + cube), hit_a, hit_b, halves * log_steps,
            pad_a * log_steps, pad_b * log_steps, pad_a * log_panels, pad_b * log_panels]
    return np.stack(cols, axis=1)


@dataclass(frozen=True)
class Solved:
    """A training or held-out shape: (M, N, K), the simulated time (s) of every tile that runs, the time of the
    paper's selector's tile and that tile."""

    shape: tuple[int, int, int]
    times: Mapping[Tile, float]
    paper: float
    paper_tile: Tile


class SelectorError(ValueError):
    """No learned selector for this hardware, or a selector file that is not one."""


@dataclass(frozen=True)
class LearnedSelector:
    """machine: the profile's figures the features use (tile_features); tiles: the tiles the model ranks (those
    that ran on every training shape); weights: per feature (FEATURES order); tile_weights: per tile; trusted:
    paper's tile ("M0xN0xK0") -> {tile: [times predicted faster in cross-validation, worst time / paper's time
    then]}; ranges: per dimension the (lowest, highest) value trained on."""

    hardware: str
    machine: dict[str, float]
    tiles: tuple[Tile, ...]
    weights: tuple[float, ...]
    tile_weights: tuple[float, ...]
    trusted: dict[str, dict[str, list[float]]]
    ranges: tuple[tuple[int, int], tuple[int, int], tuple[int, int]]
    trained_on: dict[str, Any] = field(default_factory=dict)

    def predict(self, m: int, n: int, k: int, paper: Tile) -> np.ndarray:
        """Predicted log(time(tile) / time(paper's tile)) for each of `tiles` (KeyError: `paper` not a tile)."""
        i = self.tiles.index(tuple(paper))
        x = tile_features(m, n, k, self.tiles, self.machine)
        return (x - x[i]) @ np.asarray(self.weights) + np.asarray(self.tile_weights) - self.tile_weights[i]

    def select(self, m: int, n: int, k: int, paper: Tile) -> tuple[Tile, list[str], str]:
        """(M0, N0, K0) for an M x N x K GEMM, the decision trace (one line per step) and its source: "learned"
        or "paper" (`paper`, the paper's selector's tile for this shape: outside the training ranges, a paper's
        tile the model does not rank, or no trusted tile predicted at least MARGIN faster)."""
        paper = tuple(paper)  # type: ignore[assignment]
        rule = f"the paper's rule: {_tile_text(paper)}"
        outside = [f"{name} = {v} (trained on {lo} to {hi})" for name, v, (lo, hi)
                   in zip("MNK", (m, n, k), self.ranges, strict=True) if not lo <= v <= hi]
        if outside:
            return paper, [f"outside the training ranges: {', '.join(outside)}; {rule}"], PAPER
        within = ", ".join(f"{name} {lo} to {hi}" for name, (lo, hi) in zip("MNK", self.ranges, strict=True))
        trace = [f"M, N, K within the training ranges ({within})"]
        if paper not in self.tiles:
            trace.append(f"the model does not rank the paper's tile; {rule}")
            return paper, trace, PAPER
        y = self.predict(m, n, k, paper)
        best = int(np.argmin(y))
        trace.append(f"predicted fastest of {len(self.tiles)} tiles: {_tile_text(self.tiles[best])}, "
                     f"{math.exp(-y[best]):.3f}x the paper's tile {_tile_text(paper)}")
        trusted = self.trusted.get(_tile_text(paper), {})
        ok = [i for i in range(len(self.tiles)) if _tile_text(self.tiles[i]) in trusted]
        if not ok:
            trace.append(f"no tile is trusted over the paper's {_tile_text(paper)} (cross-validation on the "
                         f"training shapes); {rule}")
            return paper, trace, PAPER
        i = min(ok, key=lambda j: (y[j], j))
        count, worst = trusted[_tile_text(self.tiles[i])]
        gain = math.exp(-y[i])
        if y[i] >= -MARGIN:
            trace.append(f"the best trusted tile, {_tile_text(self.tiles[i])}, is predicted {gain:.3f}x, under "
                         f"the {math.exp(MARGIN):.3f}x margin; {rule}")
            return paper, trace, PAPER
        tile = self.tiles[i]
        trace.append(f"tile {_tile_text(tile)}: predicted {gain:.3f}x the paper's tile; trusted (predicted faster "
                     f"on {int(count)} held-back training shapes, never more than {SAFE_LOSS:.0%} slower; worst case "
                     f"{1 / worst:.3f}x the paper's tile)")
        return tile, trace, "learned"

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "learned-tile-selector", "format": 3, "hardware": self.hardware, "machine": self.machine,
                "features": list(FEATURES), "weights": list(self.weights),
                "tiles": [[*tile, w] for tile, w in zip(self.tiles, self.tile_weights, strict=True)],
                "trusted": self.trusted, "ranges": {name: list(r) for name, r in zip("mnk", self.ranges, strict=True)},
                "trained_on": self.trained_on}

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> LearnedSelector:
        try:
            if doc["kind"] != "learned-tile-selector" or doc.get("format") != 3 or doc["features"] != list(FEATURES):
                raise KeyError("kind, format or features")
            tiles = tuple((int(a), int(b), int(c)) for a, b, c, _ in doc["tiles"])
            ranges = tuple((int(doc["ranges"][name][0]), int(doc["ranges"][name][1])) for name in "mnk")
            return cls(str(doc["hardware"]), {str(k): float(v) for k, v in doc["machine"].items()}, tiles,
                       tuple(float(w) for w in doc["weights"]), tuple(float(row[3]) for row in doc["tiles"]),
                       {str(p): {str(t): [float(c), float(w)] for t, (c, w) in d.items()}
                        for p, d in doc["trusted"].items()},
                       ranges, dict(doc.get("trained_on", {})))  # type: ignore[arg-type]
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise SelectorError(f"not a learned tile selector of this version ({exc})") from None


def _tile_text(tile: Sequence[int]) -> str:
    return "x".join(str(v) for v in tile)


def _design(s: Solved, tiles: Sequence[Tile], machine: Mapping[str, float]) -> tuple[np.ndarray, np.ndarray]:
    """Rows (one per tile) of the regression: feature differences to the paper's tile, then the tile indicators
    minus the paper's; and the targets log(time / paper's time)."""
    x = tile_features(*s.shape, tiles, machine)
    i = tiles.index(s.paper_tile)
    one_hot = np.eye(len(tiles))
    one_hot[:, i] -= 1
    y = np.log(np.array([s.times[t] for t in tiles]) / s.paper)
    return np.hstack([x - x[i], one_hot]), y


def _ridge(solved: Sequence[Solved], tiles: Sequence[Tile], machine: Mapping[str, float]) -> np.ndarray:
    rows = [_design(s, tiles, machine) for s in solved]
    x, y = np.vstack([r[0] for r in rows]), np.concatenate([r[1] for r in rows])
    scale = x.std(axis=0) + 1e-9
    xs = x / scale
    return np.linalg.solve(xs.T @ xs + RIDGE * np.eye(x.shape[1]), xs.T @ y) / scale


def fit(solved: Sequence[Solved], hardware: str, ranges: Sequence[tuple[int, int]], machine: Mapping[str, float],
        trained_on: Mapping[str, Any] | None = None) -> LearnedSelector:
    """Learn the model and its trusted tiles from solved shapes (see the module docstring); `ranges`: the
    (low, high) per dimension the shapes were drawn from; `machine`: as tile_features. Raises SelectorError
    without shapes or when a paper's tile is not among the tiles that ran on every shape."""
    if not solved:
        raise SelectorError("no solved shapes to learn from")
    tiles = sorted(set.intersection(*(set(s.times) for s in solved)))
    if missing := [s.shape for s in solved if s.paper_tile not in tiles]:
        raise SelectorError(f"the paper's tile does not run on every training shape (e.g. {missing[0]})")
    record: dict[str, dict[str, list[float]]] = {}
    for fold in np.array_split(np.random.default_rng(FOLD_SEED).permutation(len(solved)), FOLDS):
        held = set(fold.tolist())
        if not held or len(held) == len(solved):
            continue
        w = _ridge([s for i, s in enumerate(solved) if i not in held], tiles, machine)
        for i in sorted(held):
            s = solved[i]
            x, _ = _design(s, tiles, machine)
            for j in np.nonzero(x @ w < 0)[0]:
                entry = record.setdefault(_tile_text(s.paper_tile), {}).setdefault(_tile_text(tiles[j]), [0, 0.0])
                entry[0] += 1
                entry[1] = max(entry[1], s.times[tiles[j]] / s.paper)
    trusted = {p: {t: [c, worst] for t, (c, worst) in sorted(d.items()) if worst <= 1 + SAFE_LOSS}
               for p, d in sorted(record.items())}
    w = _ridge(solved, tiles, machine) if len(solved) > 1 else np.zeros(len(FEATURES) + len(tiles))
    return LearnedSelector(hardware, dict(machine), tuple(tiles), tuple(float(v) for v in w[:len(FEATURES)]),
                           tuple(float(v) for v in w[len(FEATURES):]), {p: d for p, d in trusted.items() if d},
                           tuple(ranges), dict(trained_on or {}))  # type: ignore[arg-type]


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
