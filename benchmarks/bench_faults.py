"""Is anything lost when a run or a tune is killed? SIGKILLs at random moments, then an audit of each.

Usage: python benchmarks/bench_faults.py [--kills 100] [--seed 0]

Each kill is one of, in turn: a `tune scan` with one process SIGKILLed, a `tune scan --jobs 2` with one
worker SIGKILLed, a `tune scan --jobs 2` with the parent SIGKILLed (its workers must end on their own), and a
`run scan --output-file` SIGKILLed; each at a random moment of its run (tune: every other time 1-6 s after
the start, start-up included, else 0-4 s after its first trial was evaluated; run: 0.5-5 s). The tunes of one kind share a journal, so each kill also resumes the studies of the
kills before it. After each kill the same command runs again, and tests/faults.py audits what was left:

    studies lost, trials lost beyond the one in flight (per killed process), duplicates counted (a trial
    stored more often than it was evaluated, or trial numbers not 0..n-1), RUNNING left, files left (hidden
    staging and partial files, locks), processes left (workers still running 10 s after the kill), bad
    outputs (a traceback, an output array or result document that is not whole).

Target: all 0. Runs in a temporary folder; about 8 s a kill on two cores.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

import _checkout  # noqa: F401 - this checkout's ascendbench (and tests/)
from ascendbench.commands.common import argparse_count
from ascendbench.interrupts import run_script
from tests.faults import Audit, run_fault, tune_fault

KINDS = [("tune, one process", dict(jobs=1, victim="parent")),
         ("tune --jobs 2, a worker", dict(jobs=2, victim="worker")),
         ("tune --jobs 2, the parent", dict(jobs=2, victim="parent")),
         ("run scan --output-file", None)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kills", type=argparse_count("kills"), default=100, help="SIGKILLs in all (default 100)")
    ap.add_argument("--seed", type=argparse_count("seed"), default=0, help="seed of the moments (default 0)")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    totals = {name: Audit() for name, _ in KINDS}
    kills = {name: 0 for name, _ in KINDS}
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bench-faults-") as tmp:
        for i in range(args.kills):
            name, options = KINDS[i % len(KINDS)]
            folder = Path(tmp) / str(i % len(KINDS))
            if options is None:
                audit = run_fault(folder, rng)
            elif (i // len(KINDS)) % 2:  # within 4 s after the first trial: the search itself
                audit = tune_fault(folder, rng, after_trials=1, delay=rng.uniform(0.0, 4.0), **options)
            else:  # 1-6 s after the start: start-up (imports, workers starting, the study opening) included
                audit = tune_fault(folder, rng, **options)
            totals[name].add(audit)
            kills[name] += 1
            status = "clean" if audit.clean() else "; ".join(audit.notes)
            print(f"kill {i + 1:3d}/{args.kills} {name:28s} {status}", flush=True)
    print(f"\n{args.kills} SIGKILLs in {time.monotonic() - t0:.0f} s (seed {args.seed})")
    header = ["kind", "kills", *Audit.COUNTS, "evaluated", "stored"]
    rows = [[name, kills[name], *(getattr(a, c) for c in Audit.COUNTS), a.evaluated, a.stored]
            for name, a in totals.items()]
    everything = Audit()
    for a in totals.values():
        everything.add(a)
    rows.append(["all", args.kills, *(getattr(everything, c) for c in Audit.COUNTS), everything.evaluated,
                 everything.stored])
    widths = [max(len(str(r[j])) for r in [header, *rows]) for j in range(len(header))]
    for row in [header, *rows]:
        print("  ".join(str(v).rjust(w) if j else str(v).ljust(w) for j, (v, w) in enumerate(zip(row, widths))))
    print("target: every count 0" + ("  -> met" if everything.clean() else "  -> NOT met"))
    return 0 if everything.clean() else 1


if __name__ == "__main__":
    sys.exit(run_script(main))
