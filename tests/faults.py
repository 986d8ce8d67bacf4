"""Fault injection for `run` and `tune`: SIGKILLs at chosen moments, then an audit of what was left.

Shared by tests/test_faults.py (a few faults, in the suite) and benchmarks/bench_faults.py (100 SIGKILLs).

How trials lost are counted: the killed processes run with a `sitecustomize` (on PYTHONPATH, so spawned
--jobs workers load it too) that appends a line to a log file each time the tuner's objective returns, naming
the worker and the configuration. A trial whose objective returned is then finished by Optuna and stored; a
kill between the two loses that trial, the one in flight. So, per worker:

    logged - stored <= 1   (trials lost beyond the one in flight: the excess)
    stored <= logged       (per configuration; more stored than evaluated is a duplicate record)

After the kill the same command is run again (the resume), and the audit checks that every trial stored before
the kill is still there, the trial numbers are 0..n-1, nothing is left RUNNING, and no hidden staging file,
partial output or lock is left in the folder.
"""

from __future__ import annotations

import collections
import json
import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_HOOK = '''\
import os
if os.environ.get("ASCENDBENCH_FAULT_LOG"):
    import json
    from ascendbench.tuning import study as _study

    _call = _study._Objective.__call__

    def _logged(self, trial):
        try:
            return _call(self, trial)
        finally:  # the objective returned (or was pruned): the trial is now in flight to the storage
            line = json.dumps({"worker": _study._WORKER,
                               "config": _study.config_key(trial.user_attrs.get("config", {}))})
            with open(os.environ["ASCENDBENCH_FAULT_LOG"], "a") as fh:
                fh.write(line + "\\n")

    _study._Objective.__call__ = _logged
'''

# Files a run or a tune may leave by design: the journal and what the audit itself writes.
_EXPECTED = {"studies.journal", "objective.log", "hook", "r.json", "y.npy", "resume.json",
             "evaluations.sqlite"}  # the tuner's evaluation store (its -wal and -shm files must be gone)


@dataclass
class Audit:
    """What one fault left behind (every count should be 0; `notes` says what each non-zero one was)."""

    studies_lost: int = 0
    trials_lost: int = 0  # beyond the one in flight, per worker
    duplicates: int = 0
    running_left: int = 0
    files_left: int = 0
    processes_left: int = 0
    bad_outputs: int = 0
    torn_records: int = 0  # journal tails set aside (<journal>.torn-*): a kill should tear none
    evaluated: int = 0  # trials whose objective returned in the killed processes (not a fault count)
    stored: int = 0  # of those, stored
    notes: list[str] = field(default_factory=list)

    COUNTS = ("studies_lost", "trials_lost", "duplicates", "running_left", "files_left", "processes_left",
              "bad_outputs", "torn_records")

    def add(self, other: Audit) -> None:
        for name in (*self.COUNTS, "evaluated", "stored"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.notes += other.notes

    def clean(self) -> bool:
        return not any(getattr(self, name) for name in self.COUNTS)


def _env(folder: Path) -> dict[str, str]:
    hook = folder / "hook"
    hook.mkdir(exist_ok=True)
    (hook / "sitecustomize.py").write_text(_HOOK)
    env = dict(os.environ, ASCENDBENCH_FAULT_LOG=str(folder / "objective.log"), COLUMNS="200")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(hook), str(ROOT), env.get("PYTHONPATH", "")) if p)
    return env


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "ascendbench.cli", *args]


def alive(pid: int) -> bool:
    """Whether process `pid` runs (a zombie does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie is gone for every purpose here
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def workers_of(pid: int) -> list[int]:
    """The tuning workers `pid` spawned (multiprocessing's resource tracker left out), from every process's
    parent in /proc (a task's `children` file lists only the children that thread started)."""
    workers = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            if ppid != pid:
                continue
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                if b"resource_tracker" not in fh.read():
                    workers.append(int(entry))
        except (OSError, ValueError, IndexError):
            pass
    return workers


def _leftovers(folder: Path) -> list[str]:
    """Files in `folder` (recursively, the audit's own files aside) that nothing should have left."""
    left = []
    for path in folder.rglob("*"):
        rel = path.relative_to(folder)
        if rel.parts[0] in _EXPECTED or path.is_dir() or rel.parts[0].startswith("studies.journal.torn-"):
            continue  # a torn tail set aside is counted as such (Audit.torn_records)
        if rel.parts[0] == "results" and path.suffix == ".json" and not path.name.startswith("."):
            continue  # a result document the resume wrote
        left.append(str(rel))
    return sorted(left)


TUNE = ["tune", "scan", "--n", "1e6", "--sampler", "random", "--no-exhaustive", "--storage", "studies.journal",
        "--no-save"]


def tune_fault(folder: Path, rng: random.Random, *, jobs: int = 1, victim: str = "parent",
               delay: float | None = None, after_trials: int = 0, trials: int = 400,
               timeout: float = 120) -> Audit:
    """SIGKILL a `tune scan` (the parent, or one --jobs worker: `victim` "worker") `delay` seconds after its
    start (random in [1, 6] s if None), or after `after_trials` trials were evaluated, then resume it with the
    same command and audit the journal."""
    folder.mkdir(parents=True, exist_ok=True)
    env, audit = _env(folder), Audit()
    before_kill = _stored(folder)
    torn_before = len(list(folder.glob("studies.journal.torn-*")))
    log = folder / "objective.log"
    log.unlink(missing_ok=True)
    cmd = _cli(*TUNE, "--trials", str(trials), "--jobs", str(jobs))
    proc = subprocess.Popen(cmd, cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    delay = rng.uniform(1.0, 6.0) if delay is None else delay
    workers: list[int] = []
    deadline = time.monotonic() + timeout
    while after_trials and _lines(log) < after_trials and proc.poll() is None and time.monotonic() < deadline:
        workers = workers_of(proc.pid) or workers
        time.sleep(0.02)
    end = time.monotonic() + delay
    while time.monotonic() < end and proc.poll() is None:
        workers = workers_of(proc.pid) or workers
        time.sleep(0.05)
    target = proc.pid
    if victim == "worker":
        workers = workers_of(proc.pid) or workers
        spawned = [p for p in workers if alive(p)]
        target = rng.choice(spawned) if spawned else proc.pid  # still starting: the parent
    family = [proc.pid, *workers]
    if proc.poll() is None:
        os.kill(target, signal.SIGKILL)
    try:
        _out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        audit.processes_left += 1
        audit.notes.append(f"tune did not end within {timeout} s of a SIGKILL of its {victim}")
        os.killpg(proc.pid, signal.SIGKILL)
        _out, err = proc.communicate()
    if "Traceback" in err:
        audit.bad_outputs += 1
        audit.notes.append(f"traceback after a SIGKILL of the {victim}: {err.strip().splitlines()[-1]}")
    # every process that logged a trial is the killed run's, also one started after the last look at the
    # parent's children
    family += sorted(_logged_pids(log) - set(family))
    deadline = time.monotonic() + 10  # orphaned workers notice their parent is gone and end
    while any(alive(p) for p in family) and time.monotonic() < deadline:
        time.sleep(0.05)
    outlived = [p for p in family if alive(p)]
    if outlived:
        audit.processes_left += len(outlived)
        audit.notes.append(f"{len(outlived)} process(es) still running 10 s after the kill")
        for pid in outlived:
            os.kill(pid, signal.SIGKILL)

    stored = _stored(folder)
    evaluated = collections.Counter()
    if log.exists():
        for line in log.read_text().splitlines():
            rec = json.loads(line)
            evaluated[rec["worker"], rec["config"]] += 1
    for name in stored:
        if name.startswith("<journal unreadable"):
            audit.studies_lost += 1
            audit.notes.append(name)
    for name, old in before_kill.items():
        if len(stored.get(name, [])) < len(old):
            audit.studies_lost += 1
            audit.notes.append(f"study {name}: {len(old)} trials before the kill, {len(stored.get(name, []))} after")
    family += sorted(_logged_pids(log) - set(family))  # one that logged while the others ended
    pids = {str(p) for p in family}
    new = collections.Counter()  # the killed run's stored trials, by the processes that ran them
    for trials_ in stored.values():
        for t in trials_:
            if t["worker"].rsplit(":", 1)[-1] in pids:
                new[t["worker"], t["config"]] += 1
    for key, count in new.items():
        if count > evaluated[key]:
            audit.duplicates += count - evaluated[key]
            audit.notes.append(f"{key}: stored {count} times, evaluated {evaluated[key]}")
    audit.evaluated, audit.stored = sum(evaluated.values()), sum(new.values())
    per_worker = collections.Counter()
    for (worker, _config), count in evaluated.items():
        per_worker[worker] += count - min(count, new[worker, _config])
    for worker, missing in per_worker.items():
        if missing > 1:
            audit.trials_lost += missing - 1
            audit.notes.append(f"worker {worker}: {missing} evaluated trials not stored (1 may be in flight)")

    # the resume: the same command, to a few more trials, must end normally and keep everything
    resume = subprocess.run(_cli(*TUNE, "--trials", str(_count(stored) + 3), "--json"), cwd=folder,
                            env=dict(env, ASCENDBENCH_FAULT_LOG=""), capture_output=True, text=True,
                            timeout=timeout)
    if resume.returncode != 0:
        audit.studies_lost += 1
        audit.notes.append(f"resume exited {resume.returncode}: {resume.stderr.strip().splitlines()[-1:]}")
    after = _stored(folder)
    for name, trials_ in after.items():
        if name.startswith("<journal unreadable"):
            audit.studies_lost += 1
            audit.notes.append(f"after the resume: {name}")
        numbers = sorted(t["number"] for t in trials_)
        if numbers != list(range(len(numbers))):
            audit.duplicates += len(numbers) - len(set(numbers))
            audit.notes.append(f"study {name}: trial numbers not 0..{len(numbers) - 1}")
        running = sum(t["state"] == "RUNNING" for t in trials_)
        audit.running_left += running
        if running:
            audit.notes.append(f"study {name}: {running} trial(s) left RUNNING")
        kept = {t["number"] for t in trials_}
        lost = [t["number"] for t in stored.get(name, []) if t["number"] not in kept]
        if lost:
            audit.studies_lost += 1
            audit.notes.append(f"study {name}: trials {lost[:5]} gone after the resume")
    _count_leftovers(audit, folder, "left in the folder")
    torn = sorted(folder.glob("studies.journal.torn-*"))
    audit.torn_records += len(torn) - torn_before
    if len(torn) > torn_before:
        audit.notes.append(f"journal tail set aside: {torn[-1].name}")
    return audit


def _count(stored: dict[str, list[dict]]) -> int:
    return max((len(t) for t in stored.values()), default=0)


def _logged_pids(log: Path) -> set[int]:
    """The processes that logged a trial in `log` (its workers are "host:pid")."""
    if not log.exists():
        return set()
    return {int(json.loads(line)["worker"].rsplit(":", 1)[-1]) for line in log.read_text().splitlines() if line}


def _lines(path: Path) -> int:
    try:
        with open(path, "rb") as fh:
            return fh.read().count(b"\n")
    except FileNotFoundError:
        return 0


def _count_leftovers(audit: Audit, folder: Path, what: str) -> None:
    left = _leftovers(folder)
    audit.files_left += len(left)
    if left:
        audit.notes.append(f"{what}: {', '.join(left[:5])}")


def _stored(folder: Path) -> dict[str, list[dict]]:
    """study name -> its trials (number, state, worker, config key), read through the tool's own storage
    (which sets a torn tail aside, as a resume would)."""
    journal = folder / "studies.journal"
    if not journal.exists():
        return {}
    try:
        return _dump(str(journal))
    except Exception as exc:  # noqa: BLE001 - any failure to read it is a lost journal
        return {f"<journal unreadable: {exc}>": []}


def _dump(journal: str) -> dict[str, list[dict]]:
    import optuna

    from ascendbench.tuning.study import config_key, open_storage

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    storage = open_storage(journal)
    out = {}
    for summary in optuna.get_all_study_summaries(storage):
        trials = optuna.load_study(study_name=summary.study_name, storage=storage).get_trials(deepcopy=False)
        out[summary.study_name] = [{"number": t.number, "state": t.state.name,
                                    "worker": str(t.user_attrs.get("worker", "")),
                                    "config": config_key(t.user_attrs.get("config", {}))} for t in trials]
    return out


RUN = ["run", "scan", "--n", "2**24", "--output-file", "y.npy", "--out", "r.json"]


def run_fault(folder: Path, rng: random.Random, delay: float | None = None, timeout: float = 120) -> Audit:
    """SIGKILL a `run scan --output-file` `delay` seconds after its start (random in [0.5, 5] s if None); then
    any command writing into that folder must remove what the killed run left, and what is there must be
    whole: the output array complete or absent, the result document valid or absent."""
    folder.mkdir(parents=True, exist_ok=True)
    env, audit = _env(folder), Audit()
    proc = subprocess.Popen(_cli(*RUN), cwd=folder, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    delay = rng.uniform(0.5, 5.0) if delay is None else delay
    try:
        proc.wait(timeout=delay)
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=timeout)
    audit.add(_check_run_outputs(folder))
    # the next command writing there (a small run into the same folder) sweeps the dead writer's leftovers
    nxt = subprocess.run(_cli("run", "scan", "--n", "1000", "--output-file", "y.npy", "--no-save"), cwd=folder,
                         env=env, capture_output=True, text=True, timeout=timeout)
    if nxt.returncode != 0:
        audit.bad_outputs += 1
        audit.notes.append(f"the run after the kill exited {nxt.returncode}: {nxt.stderr.strip()[-200:]}")
    _count_leftovers(audit, folder, "left after the next run")
    (folder / "y.npy").unlink(missing_ok=True)
    (folder / "r.json").unlink(missing_ok=True)
    return audit


def _check_run_outputs(folder: Path) -> Audit:
    import numpy as np

    audit = Audit()
    y, r = folder / "y.npy", folder / "r.json"
    if y.exists():
        try:
            arr = np.load(y)
            if arr.shape != (2**24,):
                raise ValueError(f"shape {arr.shape}")
        except Exception as exc:  # noqa: BLE001 - any failure to read it whole is a bad output
            audit.bad_outputs += 1
            audit.notes.append(f"y.npy is not whole: {exc}")
    if r.exists():
        try:
            json.loads(r.read_text())
        except ValueError as exc:
            audit.bad_outputs += 1
            audit.notes.append(f"r.json is not whole: {exc}")
    return audit

