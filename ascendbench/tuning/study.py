"""Driving Optuna: one study per problem, kept in a storage so that no finished trial is ever lost.

Each problem (one HGEMM shape, one scan size) gets its own study, named after the kernel, the problem and the
hardware (or `<study name>/<problem>` when the user names the study), so running the same command again
resumes it. The objective is the simulated time in seconds (minimised); a configuration the kernel cannot run
ends as a PRUNED trial with the kernel's reason in its user attribute "infeasible", so that samplers learn to
avoid it and it is never scored. `trials` is the number of finished (complete or infeasible) trials the study
should hold: a resumed study runs only the missing ones. Several processes (`jobs`, or other machines on one
RDB storage) share a study; each stops when the study holds enough finished trials.

The default storage is an Optuna journal file (`results/tuning/studies.journal`), which takes several writer
processes through file locks (plain SQLite does not: "database is locked").
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import json
import math
import multiprocessing
import os
import secrets
import signal
import threading
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import optuna
from optuna.trial import TrialState

from ascendbench.hardware import HardwareProfile, load_profile
from ascendbench.interrupts import note
from ascendbench.kernels.base import ParamError
from ascendbench.kernels.tunable import Evaluation, Infeasible, get_tunable
from ascendbench.sim.engine import BufferCapacityError
from ascendbench.tuning.space import SearchSpace, load_space

__all__ = [
    "DEFAULT_STORAGE",
    "SAMPLERS",
    "ProblemOutcome",
    "TuneError",
    "TuneRequest",
    "describe_storage",
    "open_storage",
    "study_name_for",
    "tune_problem",
]

SAMPLERS = ("tpe", "random", "cmaes", "gp", "grid")
DEFAULT_STORAGE = Path("results") / "tuning" / "studies.journal"
AUTO_EXHAUSTIVE_POINTS = 512  # spaces with at most this many grid points are evaluated whole automatically
_FINISHED = (TrialState.COMPLETE, TrialState.PRUNED)
_RDB_SCHEMES = ("sqlite", "postgresql", "mysql", "oracle", "mssql")

optuna.logging.set_verbosity(optuna.logging.WARNING)


class TuneError(ValueError):
    """A user error in a tuning request (the message names the option and what is allowed)."""


@dataclass(frozen=True)
class TuneRequest:
    """What to tune. problems: JSON-ready dicts (see kernels/tunable.py); storage: an RDB URL, a journal file
    path or None (the default journal file); trials: finished trials each study should hold."""

    kernel: str
    space_path: Path
    hardware: str
    sampler: str = "tpe"
    seed: int = 0
    trials: int = 200
    timeout_s: float | None = None
    storage: str | None = None
    study_name: str | None = None
    jobs: int = 1
    exhaustive: bool | None = None  # None: automatically when the grid is small
    run_id: str = field(default_factory=lambda: secrets.token_hex(4))  # marks the trials this command ran


@dataclass
class ProblemOutcome:
    """What tuning one problem found (times in seconds, throughput in the kernel's unit)."""

    problem: dict[str, Any]
    key: str
    study_name: str
    trials: dict[str, int]
    best: dict[str, Any] | None
    heuristic: dict[str, Any]
    speedup: float | None
    infeasible_reasons: dict[str, int]
    exhaustive: dict[str, Any] | None = None
    history: list[float] = field(default_factory=list, repr=False)  # best-so-far time after each finished trial


# ---------------------------------------------------------------------------------------------------------
# Storage and samplers
# ---------------------------------------------------------------------------------------------------------
def _is_url(storage: str) -> bool:
    return storage.split(":", 1)[0].split("+", 1)[0] in _RDB_SCHEMES and "://" in storage


def open_storage(storage: str | None) -> optuna.storages.BaseStorage:
    """An Optuna storage: an RDB URL (sqlite:///..., postgresql://...) with heartbeats, so that trials of a
    killed worker are marked failed; anything else is a journal file path (created with its folder).

    Raises TuneError (--storage) when the database cannot be opened or the path cannot be written."""
    target = str(storage) if storage is not None else str(DEFAULT_STORAGE)
    if "://" in target and not _is_url(target):
        raise TuneError(f"--storage: unknown URL scheme {target.split('://', 1)[0]!r}; give an RDB URL "
                        "(postgresql://..., mysql://..., sqlite:///FILE) or a journal file path")
    if target.split("+", 1)[0].startswith("sqlite") and target.split("://", 1)[1] in ("", "/", "/:memory:"):
        raise TuneError("--storage: sqlite:// needs a file (sqlite:///studies.db): an in-memory database "
                        "keeps nothing")
    try:
        if _is_url(target):
            return _rdb_storage(target)
        path = Path(target)
        _check_journal(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        # A writer killed while holding the file lock leaves it behind; others break it after the grace period
        # (a write holds the lock for milliseconds, so 10 s is safe and keeps a resumed run from waiting long).
        # The path must be absolute: the lock is a symlink to the journal, and a relative target would dangle,
        # so a stale lock could never be broken.
        path = path.resolve()
        lock = optuna.storages.journal.JournalFileSymlinkLock(str(path), grace_period=10)
        return optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(path), lock))
    except TuneError:
        raise
    except ImportError:
        raise TuneError(f"--storage: no database driver for {describe_storage(storage)} is installed "
                        "(PostgreSQL: the postgres extra, pip install -e '.[postgres]' in the project's folder)") from None
    except Exception as exc:  # noqa: BLE001 - SQLAlchemy, OS and Optuna errors all mean "cannot open"
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise TuneError(f"--storage: cannot open {describe_storage(storage)}: {first}") from None


def _rdb_storage(url: str, attempts: int = 5) -> optuna.storages.RDBStorage:
    """RDBStorage with heartbeats. Workers that start together on an empty database race to create Optuna's
    tables (one gets a unique-key violation); a short retry sees the tables the other one made."""
    for attempt in range(attempts):
        try:
            with warnings.catch_warnings():  # heartbeats are "experimental" in Optuna; they mark killed trials
                warnings.simplefilter("ignore")
                return optuna.storages.RDBStorage(url, heartbeat_interval=30, grace_period=90)
        except ImportError:
            raise
        except Exception:  # re-raised on the last attempt
            if attempt == attempts - 1:
                raise
            time.sleep(0.5 * (attempt + 1))
    raise AssertionError("unreachable")


def _check_journal(path: Path) -> None:
    """Refuse a journal path that is not a regular file, not an Optuna journal, or not writable (with its
    folder, where the lock file goes), before anything is appended to it."""
    if path.exists() or path.is_symlink():
        if not path.is_file():
            raise TuneError(f"--storage: {path} exists and is not a regular file")
        with open(path, "rb") as fh:
            first = fh.readline(1 << 20)
        if first:
            try:
                ok = isinstance(json.loads(first), dict) and "op_code" in json.loads(first)
            except (ValueError, UnicodeDecodeError):
                ok = False
            if not ok:
                raise TuneError(f"--storage: {path} is not an Optuna journal file (its first line is not a "
                                "journal record); give a new path or the journal of earlier studies")
        if not os.access(path, os.W_OK):
            raise TuneError(f"--storage: {path} is not writable")
    folder = path.parent if str(path.parent) else Path(".")
    for parent in (folder, *folder.parents):
        if parent.exists():
            if not parent.is_dir():
                raise TuneError(f"--storage: {parent} is not a folder")
            if not os.access(parent, os.W_OK):
                raise TuneError(f"--storage: folder {parent} is not writable")
            break


def describe_storage(storage: str | None) -> str:
    """The storage as it may be printed or saved: passwords of URLs hidden."""
    if storage is None:
        return str(DEFAULT_STORAGE)
    if _is_url(storage):
        try:
            from sqlalchemy.engine import make_url

            return make_url(storage).render_as_string(hide_password=True)
        except Exception:  # noqa: BLE001 - an unparsable URL is printed without its credentials part
            return storage.split("://", 1)[0] + "://..."
    return storage


def make_sampler(name: str, seed: int, space: SearchSpace) -> optuna.samplers.BaseSampler:
    """The sampler for --sampler NAME, seeded. Raises TuneError for unknown names or a missing package."""
    if name == "tpe":
        return optuna.samplers.TPESampler(seed=seed)
    if name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    if name == "grid":
        _check_grid_size(space, "--sampler")
        return optuna.samplers.GridSampler(space.optuna_grid(), seed=seed)
    if name == "cmaes":
        if importlib.util.find_spec("cmaes") is None:
            raise TuneError("--sampler: cmaes needs the 'cmaes' package (pip install cmaes)")
        return optuna.samplers.CmaEsSampler(seed=seed, warn_independent_sampling=False)
    if name == "gp":
        missing = [m for m in ("torch", "scipy") if importlib.util.find_spec(m) is None]
        if missing:
            raise TuneError(f"--sampler: gp needs {' and '.join(missing)} (the gp extra: pip install -e '.[gp]' in the project's folder)")
        return optuna.samplers.GPSampler(seed=seed)
    raise TuneError(f"--sampler: must be one of {', '.join(SAMPLERS)}, got {name!r}")


def study_name_for(request: TuneRequest, key: str) -> str:
    if request.study_name:
        return f"{request.study_name}/{key}"
    return f"{request.kernel}/{request.hardware}/{key}"


# ---------------------------------------------------------------------------------------------------------
# The objective
# ---------------------------------------------------------------------------------------------------------
class _Objective:
    """Simulated time of the suggested configuration; infeasible points are pruned with their reason.
    Evaluations are cached by configuration (the timing model is deterministic)."""

    def __init__(self, kernel: str, space: SearchSpace, problem: Mapping[str, Any], hw: HardwareProfile,
                 run_id: str = ""):
        self.tunable, self.run_id = get_tunable(kernel), run_id
        self.space, self.problem, self.hw = space, dict(problem), hw
        self.cache: dict[str, Evaluation | str] = {}

    def evaluate(self, config: Mapping[str, Any]) -> Evaluation:
        key = json.dumps(config, sort_keys=True)
        if key not in self.cache:
            try:
                self.cache[key] = self.tunable.evaluate(self.problem, config, self.hw)
            except Infeasible as exc:
                self.cache[key] = exc.reason
        value = self.cache[key]
        if isinstance(value, str):
            raise Infeasible(value)
        return value

    def __call__(self, trial: optuna.Trial) -> float:
        config = self.space.suggest(trial)
        trial.set_user_attr("config", config)
        trial.set_user_attr("run", self.run_id)
        try:
            ev = self.evaluate(config)
        except Infeasible as exc:
            trial.set_user_attr("infeasible", exc.reason)
            raise optuna.TrialPruned(exc.reason) from None
        trial.set_user_attr("throughput", ev.throughput)
        return ev.time_s


@functools.lru_cache(maxsize=8)
def _profile(hardware: str) -> HardwareProfile:
    """The profile of a run, read once per process (every problem, trial batch and grid chunk uses it)."""
    return load_profile(hardware)


def _finished(study: optuna.Study) -> int:
    return len(study.get_trials(deepcopy=False, states=_FINISHED))


def _open_study(request: TuneRequest, space: SearchSpace, problem: Mapping[str, Any], key: str,
                storage) -> optuna.Study:
    """The problem's study (made if new), checked to belong to this kernel, problem, hardware and space.
    Its sampler is set by whoever runs trials on it (_optimize)."""
    name = study_name_for(request, key)
    study = optuna.create_study(study_name=name, storage=storage, direction="minimize", load_if_exists=True)
    want = {"kernel": request.kernel, "problem": dict(problem), "hardware": request.hardware,
            "space": space.fingerprint()}
    have = study.user_attrs
    if not have:
        for attr, value in want.items():
            study.set_user_attr(attr, value)
        with warnings.catch_warnings():  # experimental in Optuna, harmless: names the objective in dashboards
            warnings.simplefilter("ignore")
            study.set_metric_names(["time_s"])
    else:
        for attr, value in want.items():
            if have.get(attr) != value:
                raise TuneError(f"--study-name: study {name!r} was made with another {attr} "
                                f"({have.get(attr)!r}, now {value!r}); choose another --study-name")
    return study


def _sampler_seed(seed: int, worker: int, done: int) -> int:
    """A different seed per worker and per resumption (a resumed random search must not repeat itself),
    the same for the same command and history."""
    return (seed * 1_000_003 + worker * 7919 + done) % (2**32)


def _optimize(request: TuneRequest, space: SearchSpace, problem: dict[str, Any], key: str, worker: int,
              progress: Callable[[int, float | None], None] | None = None, escalate: bool = True,
              storage=None) -> None:
    """Run trials until the study holds request.trials finished ones (or the timeout / grid ends)."""
    storage = storage if storage is not None else open_storage(request.storage)
    study = _open_study(request, space, problem, key, storage)
    done = _finished(study)
    if done >= request.trials or (request.sampler == "grid" and done >= space.grid_size):
        return  # enough trials, or the grid is already covered (Optuna would re-evaluate points)
    study.sampler = make_sampler(request.sampler, _sampler_seed(request.seed, worker, done), space)
    objective = _Objective(request.kernel, space, problem, _profile(request.hardware), request.run_id)
    callbacks: list[Callable] = [optuna.study.MaxTrialsCallback(request.trials, states=_FINISHED)]
    if progress is not None:
        def report(st: optuna.Study, _trial) -> None:
            trials = st.get_trials(deepcopy=False, states=_FINISHED)
            times = [t.value for t in trials if t.state == TrialState.COMPLETE]
            progress(len(trials), min(times) if times else None)

        callbacks.append(report)
    with _stop_after_trial_on_interrupt(escalate) as interrupted:
        callbacks.append(lambda st, _trial: st.stop() if interrupted() else None)
        study.optimize(objective, timeout=request.timeout_s, callbacks=callbacks, catch=())
    if interrupted():
        raise KeyboardInterrupt


@contextlib.contextmanager
def _stop_after_trial_on_interrupt(escalate: bool = True):
    """While Optuna runs: a first Ctrl-C or SIGTERM lets the trial in flight finish (milliseconds) and then
    stops the study, so that nothing is left half-written or running in the storage (an interrupt inside
    Optuna's own bookkeeping can leave a trial RUNNING or fail in its clean-up); a second one interrupts at
    once (unless escalate is False: worker processes, which their parent stops). Yields a function telling
    whether an interrupt came."""
    seen: list[int] = []

    def handler(signum, _frame) -> None:
        if seen and escalate:
            raise KeyboardInterrupt
        seen.append(signum)
        note(signum)  # the command ends with this signal's line and status

    if threading.current_thread() is not threading.main_thread():  # signals reach the main thread only
        yield lambda: False
        return
    old = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield lambda: bool(seen)
    finally:
        for sig, previous in old.items():
            signal.signal(sig, previous)


def _worker(request: TuneRequest, space_path: Path, problem: dict[str, Any], key: str, worker: int,
            parent: int) -> None:
    """A worker process of --jobs. It starts with SIGINT ignored (the parent arranges it, so that a Ctrl-C
    during start-up prints no traceback); an interrupt then finishes the trial in flight and ends it quietly
    (the parent reports), and so does the parent's death (SIGKILL of the command leaves no orphans)."""

    def watch_parent() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(30.0)  # still here: the interrupt came before the handler was installed
        os._exit(1)

    threading.Thread(target=watch_parent, daemon=True).start()
    try:
        _optimize(request, load_space(space_path), problem, key, worker, escalate=False)
    except KeyboardInterrupt:
        pass


# ---------------------------------------------------------------------------------------------------------
# Exhaustive evaluation
# ---------------------------------------------------------------------------------------------------------
def _evaluate_chunk(args: tuple) -> list[float | None]:
    return _evaluate_points(*args)


MAX_GRID_POINTS = 1_000_000


def _check_grid_size(space: SearchSpace, option: str) -> None:
    if space.grid_size > MAX_GRID_POINTS:
        raise TuneError(f"{option}: the grid of {space.path} has {space.grid_size:,} points, more than "
                        f"{MAX_GRID_POINTS:,} can be listed; narrow the int ranges or use another sampler")


def _evaluate_points(kernel: str, hardware: str, problem: dict[str, Any], points: list[dict[str, Any]]):
    tunable, hw = get_tunable(kernel), _profile(hardware)
    out = []
    for config in points:
        try:
            out.append(tunable.evaluate(problem, config, hw).time_s)
        except Infeasible:
            out.append(None)
    return out


def evaluate_grid(request: TuneRequest, space: SearchSpace, problem: dict[str, Any],
                  progress: Callable[[int, int], None] | None = None) -> list[tuple[dict[str, Any], float | None]]:
    """Simulated time of every grid point (None where infeasible), on request.jobs processes."""
    _check_grid_size(space, "--exhaustive")
    points = space.grid()
    chunks = [points[i:i + 64] for i in range(0, len(points), 64)]
    times: list[float | None] = []
    if request.jobs > 1 and len(chunks) > 1:
        ctx = multiprocessing.get_context("spawn")
        with _children_ignore_sigint():
            pool = ctx.Pool(request.jobs)
        try:
            args = [(request.kernel, request.hardware, problem, c) for c in chunks]
            for part in pool.imap(_evaluate_chunk, args):
                times.extend(part)
                if progress:
                    progress(len(times), len(points))
            pool.close()
        except BaseException:
            pool.terminate()  # Ctrl-C: stop at once, the grid is not stored anyway
            raise
        finally:
            pool.join()
    else:
        for c in chunks:
            times.extend(_evaluate_points(request.kernel, request.hardware, problem, c))
            if progress:
                progress(len(times), len(points))
    return list(zip(points, times))


def _trials_to_within(history: list[float], optimum: float, fraction: float) -> int | None:
    for i, best in enumerate(history, start=1):
        if best <= optimum * (1 + fraction):
            return i
    return None


# ---------------------------------------------------------------------------------------------------------
# One problem
# ---------------------------------------------------------------------------------------------------------
def tune_problem(request: TuneRequest, problem: dict[str, Any],
                 progress: Callable[[str, int, int, float | None], None] | None = None,
                 storage=None) -> ProblemOutcome:
    """Tune one problem: run the study (resuming it), evaluate the heuristic, and with exhaustive evaluation
    the true optimum of the grid. KeyboardInterrupt propagates after the trials already finished are stored.

    progress(stage, done, total, best_time_s) is called as trials finish. storage: an open storage of
    request.storage, to share one between problems (opening a journal replays it).
    Raises TuneError for user errors (sampler, storage, a study made for another problem or space)."""
    space = load_space(request.space_path)
    key = get_tunable(request.kernel).problem_key(problem)
    storage = storage if storage is not None else open_storage(request.storage)
    study = _open_study(request, space, problem, key, storage)
    if progress:
        progress(key, _finished(study), request.trials, None)
    if request.jobs <= 1:
        _optimize(request, space, problem, key, 0,
                  (lambda done, best: progress(key, done, request.trials, best)) if progress else None,
                  storage=storage)
    else:
        _run_workers(request, problem, key, study, progress)
    grid_progress = (lambda done, total: progress(f"{key}: whole grid", done, total, None)) if progress else None
    return summarise(request, space, problem, key, study, grid_progress)


def _run_workers(request: TuneRequest, problem: dict[str, Any], key: str, study: optuna.Study, progress) -> None:
    """request.jobs worker processes on one study. On Ctrl-C or SIGTERM of this process the workers are sent
    SIGINT (Optuna marks their trial in flight as failed, finished trials stay) and joined."""
    ctx = multiprocessing.get_context("spawn")
    workers = [ctx.Process(target=_worker, args=(request, request.space_path, problem, key, w, os.getpid()),
                           daemon=True) for w in range(request.jobs)]
    with _children_ignore_sigint():
        for proc in workers:
            proc.start()
    try:
        while any(proc.is_alive() for proc in workers):
            time.sleep(0.3)
            if progress:
                trials = study.get_trials(deepcopy=False, states=_FINISHED)
                times = [t.value for t in trials if t.state == TrialState.COMPLETE]
                progress(key, len(trials), request.trials, min(times) if times else None)
    except KeyboardInterrupt:
        for proc in workers:
            if proc.is_alive():
                os.kill(proc.pid, signal.SIGINT)
        for proc in workers:
            proc.join(timeout=30)
            if proc.is_alive():
                proc.terminate()
        _fail_own_running(study, request.run_id)
        raise
    failed = [proc.exitcode for proc in workers if proc.exitcode != 0]
    if failed:
        raise RuntimeError(f"{len(failed)} of {len(workers)} tuning worker processes failed (exit codes {failed}); "
                           "their finished trials are kept in the study")


@contextlib.contextmanager
def _children_ignore_sigint():
    """Processes started inside inherit an ignored SIGINT (a terminal's Ctrl-C reaches the whole process group;
    children are stopped by their parent instead, and install their own handler once started)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _fail_own_running(study: optuna.Study, run_id: str) -> None:
    """Mark this command's trials that its stopped workers left running as failed (they will not finish)."""
    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        if trial.user_attrs.get("run") == run_id:
            try:
                study.tell(trial.number, state=TrialState.FAIL)
            except (ValueError, RuntimeError):  # finished meanwhile
                pass


def summarise(request: TuneRequest, space: SearchSpace, problem: dict[str, Any], key: str,
              study: optuna.Study, grid_progress: Callable[[int, int], None] | None = None) -> ProblemOutcome:
    """The outcome of a study as stored now: best, heuristic with its rank, trial counts, exhaustive check."""
    tunable = get_tunable(request.kernel)
    hw = _profile(request.hardware)
    trials = sorted(study.get_trials(deepcopy=False), key=lambda t: t.number)
    finished = [t for t in trials if t.state in _FINISHED]
    complete = [t for t in finished if t.state == TrialState.COMPLETE]
    counts = {"finished": len(finished), "complete": len(complete),
              "infeasible": sum(1 for t in finished if t.state == TrialState.PRUNED),
              "failed": sum(1 for t in trials if t.state == TrialState.FAIL),
              "running": sum(1 for t in trials if t.state == TrialState.RUNNING),
              "this_run": sum(1 for t in finished if t.user_attrs.get("run") == request.run_id),
              "target": request.trials}
    reasons: dict[str, int] = {}
    for t in finished:
        if t.state == TrialState.PRUNED:
            reason = str(t.user_attrs.get("infeasible", "pruned"))
            reason = reason.split(":")[0] if ":" in reason else reason
            reasons[reason] = reasons.get(reason, 0) + 1
    history: list[float] = []
    best_so_far = math.inf
    for t in finished:
        if t.state == TrialState.COMPLETE:
            best_so_far = min(best_so_far, t.value)
        history.append(best_so_far)

    best = None
    if complete:
        top = min(complete, key=lambda t: (t.value, t.number))
        best = {"config": dict(top.user_attrs["config"]), "time_s": top.value,
                "throughput": top.user_attrs.get("throughput"), "trial": top.number}

    heur_config: dict[str, Any] = {}
    try:
        heur_config = tunable.heuristic(problem, hw)
        ev = tunable.evaluate(problem, heur_config, hw)
        distinct = {json.dumps(t.user_attrs["config"], sort_keys=True): t.value for t in complete}
        rank = 1 + sum(1 for v in distinct.values() if v < ev.time_s * (1 - 1e-9))
        heuristic = {"config": heur_config, "time_s": ev.time_s, "throughput": ev.throughput, "rank": rank,
                     "ranked_among": len(distinct | {json.dumps(heur_config, sort_keys=True): ev.time_s})}
    except (Infeasible, ParamError, BufferCapacityError) as exc:  # the paper's rule may not fit a user's profile
        heuristic = {"config": heur_config, "time_s": None, "throughput": None, "rank": None,
                     "ranked_among": None, "infeasible": getattr(exc, "reason", str(exc))}
    speedup = heuristic["time_s"] / best["time_s"] if best and heuristic["time_s"] else None

    outcome = ProblemOutcome(dict(problem), key, study.study_name, counts, best, heuristic, speedup, reasons,
                             history=history)
    exhaustive = request.exhaustive if request.exhaustive is not None else space.grid_size <= AUTO_EXHAUSTIVE_POINTS
    if exhaustive:
        outcome.exhaustive = exhaustive_report(request, space, problem, history, best, grid_progress)
    return outcome


def exhaustive_report(request: TuneRequest, space: SearchSpace, problem: dict[str, Any], history: list[float],
                      best: dict[str, Any] | None, progress: Callable[[int, int], None] | None = None
                      ) -> dict[str, Any]:
    """The true optimum of the grid and how close the study got: regret = best / optimum - 1, and the number
    of finished trials it took to come within 1% and 5% of the optimum (None: not reached)."""
    grid = evaluate_grid(request, space, problem, progress)
    feasible = [(c, t) for c, t in grid if t is not None]
    if not feasible:
        return {"points": len(grid), "feasible": 0, "optimum": None, "regret": None,
                "trials_to_1pct": None, "trials_to_5pct": None}
    config, opt = min(feasible, key=lambda ct: ct[1])
    tunable = get_tunable(request.kernel)
    throughput = tunable.evaluate(problem, config, _profile(request.hardware)).throughput
    return {"points": len(grid), "feasible": len(feasible),
            "optimum": {"config": config, "time_s": opt, "throughput": throughput},
            "regret": best["time_s"] / opt - 1 if best else None,
            "trials_to_1pct": _trials_to_within(history, opt, 0.01),
            "trials_to_5pct": _trials_to_within(history, opt, 0.05)}
