"""Beyond INT_MAX: wall time and peak memory of the streaming functional scan, and the timing model at 2**40.

Usage: python benchmarks/bench_intmax.py [--n 2**32+1] [--skip-functional]

Prints:
- the functional streaming scan (MCScan, int8 ones, s = 128, partitions of 2**31 - 1) of n = 2**32 + 1 elements
  with on-the-fly verification, run through `ascendbench run scan` in a fresh process: wall time and peak RSS
  (target: RSS <= 2 GB at any n), plus a direct run that checks the closed form y_i = wrap_int32(i + 1) at both
  ends and on both sides of every partition edge and of 2**31 and 2**32;
- the timing model alone at n = 2**40 for every scan kernel (host milliseconds, simulated seconds).
This is also where the slow test of tests/kernels/test_intmax.py runs by default (it takes minutes).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's package, also in the child process below

from ascendbench.commands.common import argparse_count
from ascendbench.hardware import load_profile
from ascendbench.interrupts import run_script
from ascendbench.kernels import SCAN_KERNELS, ScanParams
from ascendbench.kernels.partition import GeneratedSource, partitions
from ascendbench.kernels.scan_numerics import ScanVerifier, stream_pieces


def functional_cli(n: int) -> dict:
    """`ascendbench run scan` in a fresh process (generated constant int8, verified on the fly, not kept)."""
    cmd = [sys.executable, "-m", "ascendbench.cli", "run", "scan", "--n", str(n), "--dtype", "int8", "--algorithm",
           "mcscan", "--generator", "constant", "--json", "--no-save"]
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
        proc = subprocess.run(cmd, check=False, capture_output=True, text=True, cwd=tmp, env=env)
    wall = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    doc = json.loads(proc.stdout) if proc.returncode == 0 else {}
    return {"wall_s": wall, "peak_rss_bytes": rss, "exit": proc.returncode,
            "passed": doc.get("verification", {}).get("passed"), "partitions": doc.get("problem", {}).get("partitions"),
            "stderr": proc.stderr.strip()[-300:]}


def functional_closed_form(n: int) -> dict:
    hw = load_profile("ascend-910b4")
    p = ScanParams(s=128, dtype="int8")
    plan = partitions(n)
    marks = {0, n - 1} | {b for _, b in plan if b < n} | {b - 1 for _, b in plan}
    marks |= {i for i in (2**31 - 1, 2**31, 2**32 - 1, 2**32) if i < n}
    seen = {}
    check = ScanVerifier("mcscan", n, p, hw)
    t0 = time.perf_counter()
    for lo, xb, yb in stream_pieces("mcscan", GeneratedSource(n, "int8", "constant"), p, hw):
        check.feed(xb, yb)
        for i in marks:
            if lo <= i < lo + yb.shape[0]:
                seen[i] = int(yb[i - lo])
    wall = time.perf_counter() - t0
    ok = seen == {i: (i + 1 + 2**31) % 2**32 - 2**31 for i in marks} and check.result().passed
    return {"wall_s": wall, "closed_form_ok": ok, "checked_positions": len(marks),
            "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}


def model_at(n: int) -> list[dict]:
    hw = load_profile("ascend-910b4")
    rows = []
    for name, kernel in SCAN_KERNELS.items():
        t0 = time.perf_counter()
        sim = kernel.simulate(n, ScanParams(), hw)
        rows.append({"kernel": name, "host_ms": (time.perf_counter() - t0) * 1e3, "simulated_s": sim.time_s})
    return rows


def arguments() -> argparse.ArgumentParser:
    """The options; --n takes the CLI's counts (1e9, 2**32+1, ...: ascendbench.commands.common.parse_count)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=argparse_count("n"), default=2**32 + 1,
                    help="elements of the functional scan (default 2**32+1)")
    ap.add_argument("--skip-functional", action="store_true")
    return ap


def main(argv=None) -> int:
    args = arguments().parse_args(argv)
    n = args.n
    print("timing model at n = 2**40 (ascend-910b4, fp16, defaults):")
    for row in model_at(2**40):
        print(f"  {row['kernel']:<11} host {row['host_ms']:7.1f} ms   simulated {row['simulated_s']:.3f} s")
    if args.skip_functional:
        return 0
    print(f"functional streaming scan, n = {n:,} int8 ones, mcscan (s = 128), verified on the fly:")
    cli = functional_cli(n)
    print(f"  `run scan` process: wall {cli['wall_s']:.0f} s, peak RSS {cli['peak_rss_bytes'] / 2**20:.0f} MiB "
          f"(target <= 2 GB), verification passed: {cli['passed']}, partitions: {cli['partitions']}, "
          f"exit {cli['exit']}")
    direct = functional_closed_form(n)
    print(f"  direct stream with closed-form checks at {direct['checked_positions']} positions: "
          f"{'ok' if direct['closed_form_ok'] else 'FAILED'}, wall {direct['wall_s']:.0f} s, "
          f"peak RSS {direct['peak_rss_bytes'] / 2**20:.0f} MiB")
    return 0 if cli["exit"] == 0 and cli["passed"] and direct["closed_form_ok"] else 1


if __name__ == "__main__":
    sys.exit(run_script(main))
