"""Learn a tile selector from solved shapes and measure it on held-out shapes (the tuner issue's last item).

Usage: python benchmarks/learn_selector.py [--train 160] [--test 40] [--seed 0] [--hardware atlas-300t-a2]
                                           [--write] [--jobs 2] [--solved FILE] [--cross-validate]

Training shapes cover what LLM serving meets as well as the HGEMM paper's random workload: M log-uniform in
[1, 16384] (decode steps to long prefills), N and K log-uniform in [256, 32768]. Held out: --test random shapes
drawn with another seed, and LLM_SHAPES, the projections of Llama 2 7B and 70B at M = 1, 16, 128 and 2048. Every
shape is solved over the tile grid of the tuning space (M0 and N0 of tuning_spaces/hgemm.toml, K0
from 8 to 1024: 512 tiles, the other options as the paper's kernel runs them). The selector
(ascendbench/tuning/selector.py: a ranking of the tiles and the tiles its cross-validation trusts) is fitted
on the training shapes only (--cross-validate first prints its nested cross-validation on them, which is how
its constants were chosen); for the held-out shapes the script prints,
per set, the geometric-mean speed-up of the learned selector over the paper's selector (§4.2.3), the same for
the per-shape best tile, the share of the paper's gap to the best tile that the learned selector recovers, and
its worst shape (the issue's goals: never more than 2% slower than the paper's selector, half of the gap
recovered on average); each LLM shape on a line. --write stores the selector as the package's for the
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

import numpy as np

from ascendbench import __version__
from ascendbench.commands.common import argparse_count
from ascendbench.hardware import load_profile
from ascendbench.interrupts import run_script
from ascendbench.kernels.registry import get_tunable
from ascendbench.kernels.tunable import Infeasible
from ascendbench.processes import jobs_error, starting_children
from ascendbench.tuning.selector import TILE_OPTIONS, Solved, fit, selector_path
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


def _paper_tile(shape, hardware: str) -> tuple[int, int, int]:
    m, n, k = shape
    heuristic = get_tunable("hgemm").heuristic({"m": m, "n": n, "k": k, "batch": 1}, _profile(hardware))
    return heuristic["m0"], heuristic["n0"], heuristic["k0"]


def _machine(hardware: str) -> dict[str, float]:
    """The profile's figures the selector's features use (selector.tile_features)."""
    hw = _profile(hardware)
    return {"ai_cores": hw.ai_cores, "l1_bytes": hw.l1_bytes, "l0a_bytes": hw.l0a_bytes, "l0b_bytes": hw.l0b_bytes,
            "gm_read_bytes_per_cycle": hw.gm_read_bytes_per_cycle,
            "l2_read_bytes_per_cycle": hw.l2_read_bytes_per_cycle,
            "hbm_bytes_per_cycle": float(int(hw.hbm_bytes_per_cycle)),  # whole bytes: a feature scale
            "gm_read_latency_cycles": hw.gm_read_latency_cycles}


def _solve(args) -> dict:
    shape, hardware = args
    times = {}
    for tile in _tiles():
        t = _time((shape, tile, hardware))
        if t is not None:
            times[tile] = t
    paper = _paper_tile(shape, hardware)
    paper_time = times.get(paper) or _time((shape, paper, hardware))
    return {"shape": shape, "times": times, "paper": paper_time}


M_RANGE, NK_RANGE = (1, 16384), (256, 32768)
# (M, N, K) of C = A B, A M x K: Llama 2 7B (hidden 4096, FFN 11008; fused QKV 12288) and 70B (hidden 8192, FFN
# 28672, 8 KV heads of 128: K/V projections 1024 wide), each at M = 1, 16, 128, 2048 tokens
_LAYERS = {"7B qkv": (12288, 4096), "7B down": (4096, 11008), "70B kv": (1024, 8192), "70B up": (28672, 8192),
           "70B down": (8192, 28672)}
LLM_SHAPES = [(f"{name} M={m}", (m, n, k)) for name, (n, k) in _LAYERS.items() for m in (1, 16, 128, 2048)]


def _log_uniform(rng: random.Random, low: int, high: int) -> int:
    return min(high, max(low, round(math.exp(rng.uniform(math.log(low), math.log(high))))))


def _shapes(count: int, seed: int) -> list[tuple[int, int, int]]:
    rng = random.Random(seed)
    return [(_log_uniform(rng, *M_RANGE), _log_uniform(rng, *NK_RANGE), _log_uniform(rng, *NK_RANGE))
            for _ in range(count)]


def _measure(selector, solved: list[dict], hardware: str) -> dict:
    """The learned selector on solved held-out shapes: per shape its speed-up over the paper's tile and the best
    tile's, and over the set the geometric means, the share of the gap recovered and the worst shape."""
    rows = []
    for r in solved:
        m, n, k = r["shape"]
        tile, _, source = selector.select(m, n, k, _paper_tile(r["shape"], hardware))
        learned = r["paper"] if source == "paper" else r["times"].get(tuple(tile)) or r["paper"]
        rows.append({"shape": r["shape"], "source": source, "tile": list(tile),
                     "speedup": r["paper"] / learned, "best": r["paper"] / min(r["times"].values())})
    return _summarise(rows)


def _summarise(rows: list[dict]) -> dict:
    logs = [math.log(x["speedup"]) for x in rows]
    gaps = [math.log(x["best"]) for x in rows]
    worst = min(rows, key=lambda x: x["speedup"])
    return {"shapes": len(rows), "geomean_speedup_over_paper": math.exp(sum(logs) / len(rows)),
            "geomean_speedup_best_tile": math.exp(sum(gaps) / len(rows)),
            "gap_recovered": sum(logs) / sum(gaps) if sum(gaps) > 0 else float("nan"),
            "worst": {"shape": worst["shape"], "speedup": worst["speedup"]},
            "slower_than_paper": sum(x["speedup"] < 1 - 1e-12 for x in rows),
            "paper_rule_used": sum(x["source"] == "paper" for x in rows), "rows": rows}


def _print_set(name: str, m: dict) -> None:
    w = m["worst"]
    print(f"{name} ({m['shapes']} shapes): learned vs paper's selector {m['geomean_speedup_over_paper']:.3f}x "
          f"(geometric mean); best tile {m['geomean_speedup_best_tile']:.3f}x; gap recovered "
          f"{m['gap_recovered'] * 100:.0f}%; worst {'x'.join(map(str, w['shape']))} {w['speedup']:.3f}x "
          f"(goal >= 0.98); slower than the paper's on {m['slower_than_paper']}; the paper's rule used on "
          f"{m['paper_rule_used']}")


def read_solved(doc: dict) -> tuple[list[dict], list[dict], list[dict]]:
    """The training, random held-out and LLM held-out shapes of a --solved document, each {"shape", "paper",
    "times": {tile: seconds}}."""
    return tuple([{"shape": tuple(r["shape"]), "paper": r["paper"], "times": {tuple(t): v for t, v in r["times"]}}
                  for r in doc[part]] for part in ("train", "test", "llm"))  # type: ignore[return-value]


def _as_solved(r: dict, hardware: str) -> Solved:
    return Solved(tuple(r["shape"]), r["times"], r["paper"], _paper_tile(r["shape"], hardware))


def _cross_validate(solved_train: list[dict], hardware: str, ranges, folds: int = 5) -> dict:
    """Nested cross-validation on the training shapes only (how SAFE_LOSS and MARGIN were chosen): each of
    `folds` folds (fixed seed) is measured as _measure does with a selector fitted on the other shapes (which
    runs its own inner folds to decide what it trusts)."""
    rows = []
    for fold in np.array_split(np.random.default_rng(0).permutation(len(solved_train)), folds):
        held = set(fold.tolist())
        selector = fit([_as_solved(r, hardware) for i, r in enumerate(solved_train) if i not in held], hardware,
                       ranges, _machine(hardware))
        rows += _measure(selector, [solved_train[i] for i in sorted(held)], hardware)["rows"]
    return _summarise(rows)


def _solve_all(args, train, test, llm):
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
        solved = [pool.map(_solve, [(s, args.hardware) for s in shapes]) for shapes in (train, test, llm)]
    print(f"solved {len(train)} training and {len(test) + len(llm)} held-out shapes over {len(_tiles())} tiles in "
          f"{time.perf_counter() - t0:.0f} s")
    return solved


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--train", type=argparse_count("train"), default=160)
    ap.add_argument("--test", type=argparse_count("test"), default=40)
    ap.add_argument("--seed", type=argparse_count("seed"), default=0)
    ap.add_argument("--hardware", default="atlas-300t-a2")
    ap.add_argument("--jobs", type=argparse_count("jobs"), default=2)
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--cross-validate", action="store_true", help="first print the selector's nested "
                    "cross-validation on the training shapes (about a minute)")
    ap.add_argument("--solved", type=Path, help="a JSON file of solved shapes: read when it exists (the same "
                    "--train, --test and --seed), else written after solving (to fit again without solving)")
    args = ap.parse_args(argv)
    if message := jobs_error(args.jobs):
        ap.error(f"--jobs: {message}")
    train, test = _shapes(args.train, 2 * args.seed), _shapes(args.test, 2 * args.seed + 1)
    llm = [shape for _, shape in LLM_SHAPES]
    key = {"train": train, "test": test, "llm": llm, "hardware": args.hardware, "tool_version": __version__}
    if args.solved is not None and args.solved.exists():
        doc = json.loads(args.solved.read_text())
        if doc["key"] != json.loads(json.dumps(key)):
            ap.error(f"--solved: {args.solved} holds other shapes, hardware or tool version")
        solved_train, solved_test, solved_llm = read_solved(doc)
        print(f"read {args.solved}")
    else:
        solved_train, solved_test, solved_llm = _solve_all(args, train, test, llm)
        if args.solved is not None:
            args.solved.write_text(json.dumps({"key": key, **{
                part: [{"shape": r["shape"], "paper": r["paper"],
                        "times": [[list(t), v] for t, v in r["times"].items()]} for r in rows] for part, rows in (("train", solved_train), ("test", solved_test),
                                                         ("llm", solved_llm))}}))
    ranges = [M_RANGE, NK_RANGE, NK_RANGE]
    if args.cross_validate:
        t0 = time.perf_counter()
        _print_set("training shapes, nested 5-fold cross-validation", _cross_validate(solved_train, args.hardware,
                                                                                       ranges))
        print(f"  ({time.perf_counter() - t0:.0f} s)")
    t0 = time.perf_counter()
    selector = fit([_as_solved(r, args.hardware) for r in solved_train], args.hardware, ranges,
                   _machine(args.hardware),
                   {"shapes": len(train), "distribution": "M log-uniform in [1, 16384], N and K log-uniform in "
                    "[256, 32768]", "seed": 2 * args.seed, "tool_version": __version__,
                    "made_by": "benchmarks/learn_selector.py"})
    fit_s = time.perf_counter() - t0
    selector.trained_on["fit_s"] = round(fit_s, 1)
    print(f"fitted the ranking model ({len(selector.tiles)} tiles) and its cross-validation in {fit_s:.1f} s; "
          f"trusted tiles per paper's tile: " + ", ".join(f"{p}: {len(d)}" for p, d in selector.trusted.items()))
    random_set, llm_set = _measure(selector, solved_test, args.hardware), _measure(selector, solved_llm, args.hardware)
    _print_set("held-out random shapes", random_set)
    _print_set("held-out LLM layers", llm_set)
    for (name, _), row in zip(LLM_SHAPES, llm_set["rows"], strict=True):
        tile = "x".join(map(str, row["tile"]))
        print(f"  {name:16s} {'x'.join(map(str, row['shape'])):>18s}  {row['source']:7s} {tile:>11s}  "
              f"{row['speedup']:.3f}x (best tile {row['best']:.3f}x)")
    if args.write:
        path = selector_path(args.hardware)
        selector.trained_on["held_out"] = {
            "random": {k: v for k, v in random_set.items() if k != "rows"} | {"seed": 2 * args.seed + 1},
            "llm": {k: v for k, v in llm_set.items() if k != "rows"}
            | {"shapes_by_name": {name: list(shape) for name, shape in LLM_SHAPES}}}
        doc = selector.to_dict()
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(doc, indent=1) + "\n")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(run_script(main))
