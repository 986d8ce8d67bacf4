"""Learn a tile selector from solved shapes and measure it on held-out shapes (the tuner issue's last item).

Usage: python benchmarks/learn_selector.py [--train 60] [--test 40] [--seed 0] [--hardware atlas-300t-a2]
                                           [--write] [--jobs 2]

Random shapes, M, N, K uniform in [256, 10000] as the HGEMM paper's random workload (claim G-7), split into a
training set and a held-out set drawn with different seeds. Every shape is solved over the tile grid of the
tuning space (M0 and N0 of ascendbench/tuning/spaces/hgemm.toml, K0 from 8 to 1024: 512 tiles, the other
options as the paper's kernel runs them). The selector (ascendbench/tuning/selector.py) is fitted on the
training shapes; on the held-out shapes the script prints the geometric-mean speed-up of the learned selector
over the paper's selector (§4.2.3), the same for the per-shape best tile, and the share of the paper's gap to
the best tile that the learned selector recovers. --write stores the table as the package's selector for the
hardware (ascendbench/tuning/selectors/hgemm-<hardware>.json).
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import random
import time
from pathlib import Path

from ascendbench import __version__
from ascendbench.commands.common import argparse_count
from ascendbench.hardware import load_profile
from ascendbench.interrupts import run_script
from ascendbench.kernels.registry import get_tunable
from ascendbench.kernels.tunable import Infeasible
from ascendbench.processes import jobs_error, starting_children
from ascendbench.tuning.selector import TILE_OPTIONS, fit, selector_path
from ascendbench.tuning.space import load_space, space_path


def _tiles() -> list[tuple[int, int, int]]:
    space = load_space(space_path("hgemm"))
    p = space.parameters
    return [(m0, n0, k0) for m0 in p["m0"].values() for n0 in p["n0"].values() for k0 in p["k0"].values()]


def _time(args) -> float | None:
    shape, tile, hardware = args
    m, n, k = shape
    try:
        return get_tunable("hgemm").evaluate({"m": m, "n": n, "k": k, "batch": 1},
                                             {"m0": tile[0], "n0": tile[1], "k0": tile[2], **TILE_OPTIONS},
                                             _profile(hardware)).time_s
    except Infeasible:
        return None


_PROFILES: dict = {}


def _profile(name):
    if name not in _PROFILES:
        _PROFILES[name] = load_profile(name)
    return _PROFILES[name]


def _solve(args) -> dict:
    shape, hardware = args
    times = {}
    for tile in _tiles():
        t = _time((shape, tile, hardware))
        if t is not None:
            times[tile] = t
    heuristic = get_tunable("hgemm").heuristic({"m": shape[0], "n": shape[1], "k": shape[2], "batch": 1},
                                               _profile(hardware))
    paper = (heuristic["m0"], heuristic["n0"], heuristic["k0"])
    paper_time = times.get(paper) or _time((shape, paper, hardware))
    return {"shape": shape, "times": times, "paper": paper_time}


def _shapes(count: int, seed: int) -> list[tuple[int, int, int]]:
    rng = random.Random(seed)
    return [(rng.randint(256, 10000), rng.randint(256, 10000), rng.randint(256, 10000)) for _ in range(count)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--train", type=argparse_count("train"), default=60)
    ap.add_argument("--test", type=argparse_count("test"), default=40)
    ap.add_argument("--seed", type=argparse_count("seed"), default=0)
    ap.add_argument("--hardware", default="atlas-300t-a2")
    ap.add_argument("--jobs", type=argparse_count("jobs"), default=2)
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args(argv)
    if message := jobs_error(args.jobs):
        ap.error(f"--jobs: {message}")
    train, test = _shapes(args.train, 2 * args.seed), _shapes(args.test, 2 * args.seed + 1)
    t0 = time.perf_counter()
    pool = None
    try:  # started so that a Ctrl-C is not lost and the workers print no traceback (the pool's exit ends them)
        with starting_children() as starter:
            pool = starter.start(lambda: multiprocessing.get_context("spawn").Pool(args.jobs))
    except KeyboardInterrupt:
        if pool is not None:
            pool.terminate()
        raise
    with pool:
        solved_train = pool.map(_solve, [(s, args.hardware) for s in train])
        solved_test = pool.map(_solve, [(s, args.hardware) for s in test])
    print(f"solved {len(train)} training and {len(test)} held-out shapes over {len(_tiles())} tiles in "
          f"{time.perf_counter() - t0:.0f} s")
    selector = fit([(r["shape"], r["times"]) for r in solved_train], args.hardware,
                   {"shapes": len(train), "range": [256, 10000], "seed": 2 * args.seed, "tool_version": __version__,
                    "made_by": "benchmarks/learn_selector.py"})
    print(f"thresholds M, N, K: {selector.thresholds}")
    for key, entry in selector.table.items():
        print(f"  {key}: {'x'.join(map(str, entry['tile']))}  ({entry['shapes']} shapes, mean regret "
              f"{entry['mean_regret'] * 100:.1f}%)")
    logs_learned, logs_best, fallbacks = [], [], 0
    for r in solved_test:
        tile, _ = selector.select(*r["shape"])
        learned = r["times"].get(tuple(tile))
        if learned is None:  # the learned tile cannot run here: the paper's choice is used
            learned, fallbacks = r["paper"], fallbacks + 1
        best = min(r["times"].values())
        logs_learned.append(math.log(r["paper"] / learned))
        logs_best.append(math.log(r["paper"] / best))
    n = len(solved_test)
    speedup = math.exp(sum(logs_learned) / n)
    optimum = math.exp(sum(logs_best) / n)
    recovered = sum(logs_learned) / sum(logs_best) if sum(logs_best) > 0 else float("nan")
    print(f"held-out shapes ({n}): learned selector vs paper's selector, geometric-mean speed-up {speedup:.3f}x; "
          f"per-shape best tile {optimum:.3f}x; share of the paper's gap to the best tile recovered "
          f"{recovered * 100:.0f}%; learned tile could not run on {fallbacks} (paper's used); learned slower "
          f"than the paper's on {sum(v < -1e-12 for v in logs_learned)}")
    if args.write:
        path = selector_path(args.hardware)
        selector.trained_on["held_out"] = {"shapes": n, "seed": 2 * args.seed + 1,
                                           "geomean_speedup_over_paper": speedup,
                                           "geomean_speedup_best_tile": optimum, "gap_recovered": recovered}
        doc = selector.to_dict()
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(doc, indent=1) + "\n")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(run_script(main))
