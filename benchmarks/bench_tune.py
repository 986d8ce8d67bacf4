"""Speed of the tuner and how fast its samplers find the optimum (targets from the tuner issue, 2-core machine).

Usage: python benchmarks/bench_tune.py [--trials 500] [--budget 300] [--seeds 5] [--jobs 2] [--skip-search]

1. Overhead: `tune hgemm` with the TPE sampler, --trials 500 on one shape (2048 x 128 x 2048), wall time against
   the time the timing model itself took for the same configurations (target: 500 trials in <= 30 s).
2. Search efficiency: for the fig6 and llama2-qk shapes, the exhaustive optimum of the hgemm space, then for
   TPE and random search the number of trials until the best is within 1% (and 5%) of it, median over
   --seeds seeds (a run that does not get there within --budget trials counts as "> budget").

Runs in a temporary folder (journal storage there); prints one table per part.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from ascendbench.hardware import load_profile
from ascendbench.interrupts import run_script
from ascendbench.kernels.tunable import Infeasible, get_tunable
from ascendbench.tuning.space import load_space, space_path
from ascendbench.tuning.study import TuneRequest, _trials_to_within, evaluate_grid, tune_problem
from ascendbench.workloads import load_workload


def overhead(trials: int, folder: Path) -> bool:
    problem = {"m": 2048, "n": 128, "k": 2048, "batch": 1}
    request = TuneRequest("hgemm", space_path("hgemm"), "atlas-300t-a2", "tpe", 0, trials,
                          storage=str(folder / "overhead.journal"), exhaustive=False)
    t0 = time.perf_counter()
    outcome = tune_problem(request, problem)
    wall = time.perf_counter() - t0
    # The same configurations through the timing model alone (distinct ones: the tuner caches repeats).
    import optuna

    study = optuna.load_study(study_name=outcome.study_name,
                              storage=optuna.storages.JournalStorage(
                                  optuna.storages.journal.JournalFileBackend(str(folder / "overhead.journal"))))
    configs = {json.dumps(t.user_attrs["config"], sort_keys=True) for t in study.trials if "config" in t.user_attrs}
    tunable, hw = get_tunable("hgemm"), load_profile("atlas-300t-a2")
    from ascendbench.kernels.hgemm import RUN_CACHE

    RUN_CACHE.clear()  # the tuner's run filled it: time the model from cold, as the tuner first met each point
    t1 = time.perf_counter()
    for text in configs:
        try:
            tunable.evaluate(problem, json.loads(text), hw)
        except Infeasible:
            pass
    model = time.perf_counter() - t1
    print(f"tune hgemm 2048x128x2048, TPE, {outcome.trials['finished']} trials: {wall:.1f} s wall "
          f"(target <= 30 s); timing model alone on its {len(configs)} distinct configurations {model:.1f} s; "
          f"tuner overhead {wall - model:.1f} s ({(wall - model) / max(outcome.trials['finished'], 1) * 1e3:.1f} "
          f"ms per trial)")
    return wall <= 30


def search(budget: int, seeds: int, jobs: int, folder: Path) -> None:
    space = load_space(space_path("hgemm"))
    shapes = list(load_workload("fig6").shapes) + list(load_workload("llama2-qk").shapes)
    print(f"\ntrials to get within 1% / 5% of the exhaustive optimum (median of {seeds} seeds, budget {budget})")
    print(f"{'shape':>18} {'feasible':>9} {'optimum us':>11} {'TPE 1%':>8} {'TPE 5%':>8} {'random 1%':>10} "
          f"{'random 5%':>10}")
    for m, n, k, batch in shapes:
        problem = {"m": m, "n": n, "k": k, "batch": batch}
        base = TuneRequest("hgemm", space.path, "atlas-300t-a2", jobs=jobs, exhaustive=False)
        t0 = time.perf_counter()
        grid = evaluate_grid(base, space, problem)
        grid_s = time.perf_counter() - t0
        feasible = [t for _, t in grid if t is not None]
        optimum = min(feasible)
        cells = []
        for sampler in ("tpe", "random"):
            hits = {0.01: [], 0.05: []}
            for seed in range(seeds):
                request = TuneRequest("hgemm", space.path, "atlas-300t-a2", sampler, seed, budget,
                                      storage=str(folder / f"{sampler}-{seed}-{m}x{n}x{k}.journal"),
                                      exhaustive=False)
                history = tune_problem(request, problem).history
                for frac, found in hits.items():
                    found.append(_trials_to_within(history, optimum, frac) or budget + 1)
            cells += [_median(hits[0.01], budget), _median(hits[0.05], budget)]
        print(f"{f'{m}x{n}x{k}':>18} {len(feasible):>9} {optimum * 1e6:>11.1f} {cells[0]:>8} {cells[1]:>8} "
              f"{cells[2]:>10} {cells[3]:>10}   (grid evaluated in {grid_s:.0f} s)")


def _median(values: list[int], budget: int) -> str:
    med = statistics.median(values)
    return f"> {budget}" if med > budget else f"{med:g}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=500)
    ap.add_argument("--budget", type=int, default=300)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--skip-search", action="store_true")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        ok = overhead(args.trials, Path(tmp))
        if not args.skip_search:
            search(args.budget, args.seeds, args.jobs, Path(tmp))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(run_script(main))
