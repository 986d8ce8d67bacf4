"""Speed of `ascendbench correlate` against the correlate issue's targets, measured in one run (2-core machine).

Usage: python benchmarks/bench_correlate.py [--rows 200] [--fit-rows 100] [--folds 5]

1. `--rows` rows of scans (five algorithms, s = 32-128, n = 1e4 to 1e9), sorts, top-k and HGEMM shapes on the
   default profile, read from a CSV and correlated with a cold simulation cache: target under 20 s.
2. `--fit` of 3 free constants (hbm_efficiency, gm_read_bytes_per_cycle, host_launch_us) over `--fit-rows`
   scan rows, some timed around the host call, and `--folds` folds: target under 2 minutes. The rows'
   "measured" times are simulated on a profile with those constants perturbed (HBM 20% lower, per-core GM
   rate 10% higher, the launch 30 us longer), so the fit must also recover them; the recovered values are
   printed beside the true ones.

Exits 1 when a target is missed. Nothing is written outside a temporary folder.
"""

from __future__ import annotations

import argparse
import csv
import random
import tempfile
import time
from pathlib import Path

import _checkout  # noqa: F401  (this checkout's ascendbench)

from ascendbench.commands.common import argparse_count
from ascendbench.correlate import RowSimulator, correlate, fit_constants, read_measurements
from ascendbench.hardware import load_profile
from ascendbench.interrupts import run_script

TRUE = {"hbm_efficiency": 0.8, "gm_read_bytes_per_cycle": 1.1}  # factors on the shipped values
LAUNCH_EXTRA_US = 30.0
COLUMNS = ["kernel", "label", "window", "n", "algorithm", "s", "m", "k", "measured_us"]


def mixed_rows(count: int, rng: random.Random) -> list[dict]:
    """Rows of several kernels with a made-up measured time (the speed does not depend on it)."""
    rows = []
    for i in range(count):
        kind = i % 4
        if kind == 0 or kind == 1:
            row = {"kernel": "scan", "n": str(rng.choice([10**4, 10**5, 10**6, 10**7, 10**8, 10**9])),
                   "algorithm": rng.choice(["mcscan", "mcscan-ul1", "scanu", "scanul1", "vec-cumsum"]),
                   "s": str(rng.choice([32, 64, 128]))}
        elif kind == 2:
            row = {"kernel": "sort", "n": str(rng.choice([10**4, 10**5, 10**6]))}
            if rng.random() < 0.5:
                row = {"kernel": "topk", "n": row["n"], "k": str(rng.choice([16, 256]))}
        else:
            row = {"kernel": "hgemm", "m": str(rng.choice([256, 1024, 4096])), "n": str(rng.choice([512, 2048, 8192])),
                   "k": str(rng.choice([256, 1024, 4096]))}
        rows.append({**row, "label": f"row {i + 1}", "window": "kernel", "measured_us": f"{rng.uniform(10, 5000):.3f}"})
    return rows


def write_csv(path: Path, rows: list[dict]) -> Path:
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows({c: r.get(c, "") for c in COLUMNS} for r in rows)
    return path


def fit_rows(count: int, rng: random.Random, folder: Path) -> Path:
    """Scan rows whose measured time is the simulation on the perturbed profile."""
    shipped = load_profile()
    truth = shipped.replace(**{k: getattr(shipped, k) * f for k, f in TRUE.items()},
                            host_launch_us=shipped.host_launch_us + LAUNCH_EXTRA_US)
    rows = [{"kernel": "scan", "n": str(rng.choice([10**5, 3 * 10**5, 10**6, 3 * 10**6, 10**7])),
             "algorithm": rng.choice(["mcscan", "mcscan-ul1"]), "s": str(rng.choice([64, 128])),
             "window": "host" if i % 2 else "kernel", "label": f"row {i + 1}", "measured_us": "1"}
            for i in range(count)]
    path = write_csv(folder / "fit.csv", rows)
    simulator = RowSimulator()
    for row, m in zip(rows, read_measurements(path)):
        kernel_us, window_us = simulator.time_us(m, truth)
        row["measured_us"] = repr(kernel_us + window_us)
    return write_csv(path, rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=argparse_count("rows"), default=200)
    ap.add_argument("--fit-rows", type=argparse_count("fit-rows"), default=100)
    ap.add_argument("--folds", type=argparse_count("folds"), default=5)
    args = ap.parse_args(argv)
    rng = random.Random(0)
    ok = True
    with tempfile.TemporaryDirectory() as folder:
        path = write_csv(Path(folder) / "mixed.csv", mixed_rows(args.rows, rng))
        t0 = time.perf_counter()
        doc = correlate(read_measurements(path), source=path)
        wall = time.perf_counter() - t0
        refused = sum(r.status != "ok" for r in doc.rows)
        ok &= wall < 20
        print(f"correlate {args.rows} mixed rows ({refused} refused by their kernel): {wall:.1f} s, target < 20 s"
              f" {'ok' if wall < 20 else 'MISSED'}")

        path = fit_rows(args.fit_rows, rng, Path(folder))
        names = [*TRUE, "host_launch_us"]
        t0 = time.perf_counter()
        outcome = fit_constants(read_measurements(path), names, folds=args.folds)
        wall = time.perf_counter() - t0
        ok &= wall < 120
        print(f"--fit of {len(names)} constants over {args.fit_rows} rows, {args.folds} folds: {wall:.1f} s, "
              f"target < 120 s {'ok' if wall < 120 else 'MISSED'}")
        shipped = load_profile()
        for name in names:
            true = (shipped.host_launch_us + LAUNCH_EXTRA_US if name == "host_launch_us"
                    else getattr(shipped, name) * TRUE[name])
            print(f"  {name}: shipped {outcome.before[name]:g}, true {true:g}, fitted {outcome.after[name]:g} "
                  f"({outcome.after[name] / true - 1:+.2%})")
        print(f"  cross-validated error {outcome.cv_error_before:.2%} -> {outcome.cv_error_after:.2%}")
    return 0 if ok else 1


if __name__ == "__main__":
    run_script(main)
