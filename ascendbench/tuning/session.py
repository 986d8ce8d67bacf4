"""One tuning run, for `ascendbench tune <kernel>` and the Python API (`ascendbench.tune`): check the request,
make the problems, search each one (tuning/study.py), and build the result document (store/schema.py's
TuningResult). The command adds only its options, the progress display, the files and the printing.

Errors are ParamError naming the option (`--trials: ...` for the CLI; `trials: ...` after in_python_names()).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ascendbench import __version__
from ascendbench.hardware import HardwareError, HardwareProfile, load_profile
from ascendbench.kernels.base import ParamError, suggest
from ascendbench.kernels.hgemm import MAX_DIM
from ascendbench.kernels.registry import get_spec, get_tunable, spec_for_space
from ascendbench.processes import jobs_error
from ascendbench.tuning.space import SearchSpace, SpaceError, load_space, space_path
from ascendbench.tuning.study import (
    MAX_GRID_POINTS,
    ProblemOutcome,
    TuneError,
    TuneRequest,
    WorkerError,
    combine_seeds,
    describe_storage,
    make_sampler,
    open_storage,
    summarise,
    tune_problem,
)
from ascendbench.workloads import WorkloadError, load_workload

if TYPE_CHECKING:
    from ascendbench.kernels.contract import KernelSpec

__all__ = ["MAX_TRIALS", "Searched", "Setup", "document", "load_search_space", "prepare", "problem_options",
           "problem_set_entry", "problems_of", "search", "tune"]

MAX_TRIALS = 10**9
_HEURISTIC_WITHIN = 0.05  # "the heuristic is within 5% of the tuned best" (issue text; claim G-6's tolerance)
_BEAT = 1e-6  # a search beat the heuristic when the heuristic is this much slower than its best (not a tie)

# report(stage, done, total, best time in s): a search's progress; report(None, 0, 0, None): a new search begins
Report = Callable[[str | None, int, int, float | None], None]


# ---------------------------------------------------------------------------------------------------------
def load_search_space(kernel: str, path: Path | str | None = None) -> SearchSpace:
    """The search space of tunable kernel `kernel` (its space name: "hgemm", "scan", "sort", ...): the file at
    `path`, default tuning_spaces/<kernel>.toml. Raises ParamError (option "space")."""
    spec = spec_for_space(kernel)
    try:
        loaded = load_space(path or (spec.space_file() if spec is not None else space_path(kernel)))
    except SpaceError as exc:
        raise ParamError("space", str(exc)) from None
    if loaded.kernel != kernel:
        raise ParamError("space", f"{loaded.path} is a space for {loaded.kernel!r}, not {kernel!r}")
    try:
        loaded.check(get_tunable(kernel).check_values())
    except SpaceError as exc:
        raise ParamError("space", str(exc)) from None
    return loaded


def problem_set_entry(space: SearchSpace, name: str | None):
    """The problem set `name` (default "default") of a space file. Raises ParamError (option "problems")."""
    name = name or "default"
    if name not in space.problem_sets:
        raise ParamError("problems", f"{space.path} has no problem set {name!r}; choose from "
                                     f"{', '.join(space.problem_sets) or '(none)'}")
    return space.problem_sets[name]


def _hgemm_set(space: SearchSpace, name: str | None) -> list[tuple[int, int, int, int]]:
    entry = problem_set_entry(space, name)
    shapes: list[tuple[int, int, int, int]] = []
    for wl in entry.workloads:
        try:
            shapes.extend(load_workload(wl).shapes)
        except WorkloadError as exc:
            raise ParamError("problems", f"{space.path}: problems.{name or 'default'}.workloads: {exc}") from None
    for s in entry.shapes:
        if len(s) not in (3, 4):
            raise ParamError("problems", f"{space.path}: problems.{name or 'default'}.shapes: each shape is "
                                         f"[M, N, K] or [M, N, K, batch], got {s}")
        shapes.append((s[0], s[1], s[2], s[3] if len(s) == 4 else 1))
    if not shapes:
        raise ParamError("problems", f"set {name or 'default'!r} of {space.path} lists no hgemm shapes")
    return shapes


def _count(name: str, value: Any) -> None:
    """Refuse a count that is not an int (the CLI's parser gives ints; the Python API takes what it is given)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ParamError(name, f"must be an integer, got {value!r}")


def _hgemm_problems(space: SearchSpace, problems: str | None, given: Mapping[str, Any]
                    ) -> tuple[list[dict[str, Any]], list[tuple[int, int, int, int]]]:
    m, n, k, workload = (given.get(name) for name in ("m", "n", "k", "workload"))
    batch, every_core = given.get("batch", 1), given.get("every_core", False)
    for name, value in (("m", m), ("n", n), ("k", k), ("batch", batch)):
        if value is not None:
            _count(name, value)
    if not isinstance(every_core, bool):
        raise ParamError("every-core", f"must be True or False, got {every_core!r}")
    shape_given = [v is not None for v in (m, n, k)]
    if any(shape_given) and not all(shape_given):
        raise ParamError("m", "give --m, --n and --k together (or --workload / --problems)")
    for name, value in (("m", m), ("n", n), ("k", k)):
        if value is not None and not 1 <= value <= MAX_DIM:
            raise ParamError(name, f"must be a positive integer up to 2**40, got {value}")
    if not 1 <= batch <= MAX_DIM:
        raise ParamError("batch", f"must be from 1 to 2**40, got {batch}")
    if sum([all(shape_given), workload is not None, problems is not None]) > 1:
        raise ParamError("workload", "give one of --m/--n/--k, --workload or --problems")
    if all(shape_given):
        shapes = [(m, n, k, batch)]
    elif workload is not None:
        try:
            shapes = list(load_workload(workload).shapes)
        except WorkloadError as exc:
            raise ParamError.from_message(str(exc), "workload") from None
    else:
        shapes = _hgemm_set(space, problems)
    return ([{"m": s[0], "n": s[1], "k": s[2], "batch": s[3]} | ({"every_core": True} if every_core else {})
             for s in shapes], shapes)


def _scan_problems(space: SearchSpace, problems: str | None, given: Mapping[str, Any]) -> list[dict[str, Any]]:
    n, dtype, exclusive = given.get("n"), given.get("dtype", "fp16"), given.get("exclusive", False)
    if n is not None and problems is not None:
        raise ParamError("n", "give --n or --problems, not both")
    if n is None and (dtype != "fp16" or exclusive):
        raise ParamError("n", "is required with --dtype / --exclusive (a problem set gives its own)")
    if n is not None:
        _count("n", n)
        if n < 1:
            raise ParamError("n", f"must be at least 1, got {n}")
        get_spec("scan").params(n=n, dtype=dtype, exclusive=exclusive)  # the dtype's choices, a bool
        return [{"n": n, "dtype": dtype, "exclusive": exclusive}]
    chosen = problem_set_entry(space, problems)
    problem_list = [{"n": size, "dtype": chosen.dtype, "exclusive": chosen.exclusive} for size in chosen.n]
    if not problem_list:
        raise ParamError("problems", f"set {problems or 'default'!r} of {space.path} lists no n")
    return problem_list


def _batched_problems(space: SearchSpace, problems: str | None, given: Mapping[str, Any]) -> list[dict[str, Any]]:
    batch, length = given.get("batch"), given.get("length")
    dtype, exclusive = given.get("dtype", "fp16"), given.get("exclusive", False)
    if (batch is None) != (length is None):
        raise ParamError("batch", "give --batch and --length together (or --problems)")
    for name, value in (("batch", batch), ("length", length)):
        if value is not None:
            _count(name, value)
            if value < 1:
                raise ParamError(name, f"must be a positive integer, got {value}")
    if batch is not None and problems is not None:
        raise ParamError("batch", "give --batch/--length or --problems, not both")
    if batch is None and (dtype != "fp16" or exclusive):
        raise ParamError("batch", "is required with --dtype / --exclusive (a problem set gives its own)")
    if batch is not None:
        get_spec("batched-scan").params(batch=batch, length=length, dtype=dtype, exclusive=exclusive)
        rows = [(batch, length)]
    else:
        entry = problem_set_entry(space, problems)
        rows = [tuple(shape) for shape in entry.shapes]
        if not rows or any(len(r) != 2 for r in rows):
            raise ParamError("problems", f"set {problems or 'default'!r} of {space.path}: shapes must be "
                                         "[batch, length] pairs")
        dtype, exclusive = entry.dtype, entry.exclusive
    return [{"batch": b, "length": n, "dtype": dtype, "exclusive": exclusive} for b, n in rows]


def _registry_problems(kernel: str, space: SearchSpace, problems: str | None, given: Mapping[str, Any]
                       ) -> list[dict[str, Any]]:
    spec = spec_for_space(kernel)
    size = spec.size_field
    if given and problems is not None:
        raise ParamError(size, "give the problem's options or --problems, not both")
    if given:
        if size not in given:
            raise ParamError(size, "is required with the other problem options (or give --problems)")
        listed, where = [dict(given)], None
    else:
        name = problems or "default"
        entry = problem_set_entry(space, problems)
        listed, where = [dict(p) for p in entry.params], f"{space.path}: problems.{name}.params"
        if not listed:
            raise ParamError("problems", f"set {name!r} of {space.path} lists no problems (`params`)")
    tuned = set(spec.tuned())
    checked = []
    for index, values in enumerate(listed):
        extra = sorted(set(values) & tuned)
        if extra:
            message = f"{extra[0]} is a tuned parameter of {spec.name}, not part of a problem"
            raise (ParamError("problems", f"{where}[{index}]: {message}") if where
                   else ParamError(extra[0], message, named=False))
        try:
            params = spec.params(values)
            if spec.size(params) < 1:
                raise ParamError(size, f"must be at least 1 to tune, got {spec.size(params)}")
            spec.check_functional(params)
        except ParamError as exc:
            if where is None:
                raise
            # a problem set's entry: the file's field names (a suggestion too), after where the entry is
            text = str(exc.in_python_names()) if exc.suggestion else str(exc).removeprefix("--")
            raise ParamError("problems", f"{where}[{index}]: {text}") from None
        checked.append(spec.problem_of(params))
    return checked


def problem_options(kernel: str | KernelSpec) -> tuple[str, ...]:
    """The problem's keyword arguments of tunable kernel `kernel` (its search space's name, or its KernelSpec):
    its sizes and fixed parameters, what a problem is made of (the search space's parameters are not among them).
    As its KernelSpec.tune_command declares them: the fields not tuned nor omitted, then the extras; in its order
    when it gives one. The one list of the problem options of `tune <kernel>` (commands/generic.py) and of
    `ascendbench.tune`."""
    spec = spec_for_space(kernel) if isinstance(kernel, str) else kernel
    cmd = spec.tune_command
    tuned = set(spec.tuned())
    names = [name for name in spec.Params.model_fields if name not in tuned and name not in cmd.omit]
    names += [extra.name for extra in cmd.extras]
    if cmd.order:
        missing = set(names) ^ set(cmd.order)
        assert not missing, f"{spec.name}: TuneCommand.order must name every own option once: {sorted(missing)}"
        names.sort(key=cmd.order.index)
    return tuple(names)


def problems_of(kernel: str, space: SearchSpace, problems: str | None, given: Mapping[str, Any]
                ) -> tuple[list[dict[str, Any]], list[tuple[int, int, int, int]] | None]:
    """The problems to tune: one from `given` (the problem's options the user gave, by field name; None values
    are left out), else the problem set `problems` of the space file (default: its "default" set). Returns them
    as JSON-ready dicts and, for HGEMM, their shapes (M, N, K, batch) for the claim G-6. Raises ParamError."""
    given = {k: v for k, v in given.items() if v is not None}
    if problems is not None and not problems.strip():  # not the default set: the user named none
        raise ParamError("problems", f"must name a problem set of {space.path}, got {problems!r}; choose from "
                                     f"{', '.join(space.problem_sets) or '(none)'}")
    if kernel == "hgemm":
        return _hgemm_problems(space, problems, given)
    if kernel == "scan":
        return _scan_problems(space, problems, given), None
    if kernel == "batched-scan":
        return _batched_problems(space, problems, given), None
    return _registry_problems(kernel, space, problems, given), None


# ---------------------------------------------------------------------------------------------------------
@dataclass
class Setup:
    """A checked tuning request, its storage opened (tune_problem's arguments for every problem)."""

    request: TuneRequest
    space: SearchSpace  # on the hardware profile (block counts end at its cores)
    hw: HardwareProfile
    storage: Any  # the opened Optuna storage
    seeds: int
    wall0: float = field(default_factory=time.perf_counter)


def prepare(kernel: str, space: SearchSpace, *, hardware: str, trials: int = 200, timeout: float | None = None,
            sampler: str = "tpe", seed: int = 0, seeds: int = 1, storage: str | None = None,
            study_name: str | None = None, jobs: int = 1, exhaustive: bool | None = None, replay: bool = True
            ) -> Setup:
    """Check the options of a tuning run (the CLI's ranges) and open its storage (a journal file is created
    there). Raises ParamError naming the option."""
    wall0 = time.perf_counter()
    for name, value in (("trials", trials), ("seed", seed), ("seeds", seeds), ("jobs", jobs)):
        _count(name, value)
    for name, value in (("replay", replay), ("exhaustive", exhaustive)):
        if value is not None and not isinstance(value, bool):
            raise ParamError(name, f"must be True or False, got {value!r}")
    if trials < 1:
        raise ParamError("trials", f"must be at least 1, got {trials}")
    if trials > MAX_TRIALS:
        raise ParamError("trials", f"must be at most {MAX_TRIALS:,}, got {trials}")
    if timeout is not None and not (isinstance(timeout, (int, float)) and not isinstance(timeout, bool)
                                    and timeout > 0 and math.isfinite(timeout)):
        raise ParamError("timeout", f"must be a positive number of seconds, got {timeout}")
    if not 0 <= seed < 2**32:
        raise ParamError("seed", f"must be an integer from 0 to 2**32 - 1, got {seed}")
    if not 1 <= seeds <= 100:
        raise ParamError("seeds", f"must be from 1 to 100, got {seeds}")
    if seed + seeds > 2**32:
        raise ParamError("seeds", f"seeds {seed} to {seed + seeds - 1} go past 2**32 - 1")
    if message := jobs_error(jobs):
        raise ParamError("jobs", message)
    if study_name is not None and not study_name.strip():
        raise ParamError("study-name", "must not be empty")
    if study_name is not None:
        try:
            study_name.encode("utf-8")
        except UnicodeEncodeError:
            raise ParamError("study-name", "must be valid text (it holds bytes that are not UTF-8)") from None
    try:
        hw = load_profile(hardware)
    except HardwareError as exc:
        raise ParamError.from_message(str(exc), "hardware") from None
    space = space.on(hw)
    if exhaustive and space.grid_size > MAX_GRID_POINTS:  # before the storage is opened (which creates it)
        raise ParamError("exhaustive", f"the grid of {space.path} has {space.grid_size:,} points, more than "
                                       f"{MAX_GRID_POINTS:,} can be evaluated; narrow the int ranges")
    try:
        make_sampler(sampler, seed, space)
        opened = open_storage(storage)  # once: every problem's study lives in it
    except TuneError as exc:
        raise ParamError.from_message(str(exc), "storage") from None
    request = TuneRequest(kernel, space.path, hardware, sampler, seed, trials, timeout, storage, study_name, jobs,
                          exhaustive, replay=replay)
    return Setup(request, space, hw, opened, seeds, wall0)


@dataclass
class Searched:
    """What the searches found: one outcome per problem searched (in order), and whether they were cut short:
    `interrupted` (Ctrl-C) or `worker_failed` (how a --jobs worker process died)."""

    outcomes: list[ProblemOutcome]
    interrupted: bool = False
    worker_failed: str | None = None


def search(setup: Setup, problems: Sequence[dict[str, Any]], watch: Callable[[str], Report] | None = None
           ) -> Searched:
    """Tune each problem in turn (with several seeds, one study per seed), each warm-started from the best of the
    problems before it. watch(key): the progress callback of a problem's searches (None: none). A Ctrl-C or a
    worker that dies ends the searches: the outcome holds what the studies hold. Raises ParamError (a request the
    storage refuses), OSError (the storage failed; the finished trials are kept)."""
    from ascendbench.redact import redact

    request, seeds = setup.request, setup.seeds
    tunable = get_tunable(request.kernel)
    searched = Searched([])
    for problem in problems:
        key = tunable.problem_key(problem)
        report = watch(key) if watch is not None else None
        warm = [o.best["config"] for o in searched.outcomes if o.best and o.best.get("source") == "study"]
        replicas: list[ProblemOutcome] = []
        try:
            for replica in range(seeds):
                if report is not None:
                    report(None, 0, 0, None)
                req = request if seeds == 1 else dataclasses.replace(request, seed=request.seed + replica,
                                                                     replica=request.seed + replica)
                replicas.append(tune_problem(req, problem, report, setup.storage, warm_start=warm))
        except TuneError as exc:
            raise ParamError.from_message(str(exc), "storage") from None
        except (KeyboardInterrupt, WorkerError) as exc:  # report what the study holds, then say why
            if isinstance(exc, WorkerError):
                searched.worker_failed = redact(str(exc))
            else:
                searched.interrupted = True
            replica = request.seed + len(replicas)
            req = request if seeds == 1 else dataclasses.replace(request, seed=replica, replica=replica)
            stored = _stored_outcome(req, setup.space, problem, setup.storage,
                                     "worker_failed" if searched.worker_failed else "interrupted",
                                     getattr(exc, "search_cost", None))
            if stored is not None:
                replicas.append(stored)
        if replicas:
            searched.outcomes.append(combine_seeds(replicas) if seeds > 1 else replicas[0])
        if searched.interrupted or searched.worker_failed:
            break
    return searched


def document(setup: Setup, searched: Searched, command: list[str],
             claims_for: list[tuple[int, int, int, int]] | None = None) -> dict[str, Any]:
    """The result document (store/schema.py TuningResult, as JSON-ready dict) of the searches; claims_for: the
    HGEMM shapes asked for (claim G-6 is checked when they hold the fig6 shapes)."""
    from ascendbench.store.schema import TuningResult

    request, outcomes = setup.request, searched.outcomes
    claims = _g6_claim(outcomes) if request.kernel == "hgemm" and claims_for else []
    doc = {
        "schema_version": 1, "kind": "tuning", "tool_version": __version__,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"), "command": command,
        "hardware": setup.hw.to_dict(), "kernel": request.kernel, "unit": get_tunable(request.kernel).unit,
        "sampler": request.sampler, "seed": request.seed, "storage": describe_storage(request.storage),
        "space": {"path": str(setup.space.path), "fingerprint": setup.space.fingerprint()},
        "interrupted": searched.interrupted, "problems": [_problem_doc(o) for o in outcomes],
        "summary": _summary(outcomes), "claims": claims, "host": {"wall_time_s": time.perf_counter() - setup.wall0},
    }
    return TuningResult.model_validate(doc).model_dump(mode="json")


def _stored_outcome(request: TuneRequest, space: SearchSpace, problem: dict[str, Any], storage,
                    stopped: str = "interrupted", cost=None) -> ProblemOutcome | None:
    """The outcome of a problem whose search was cut short (stopped: "interrupted", or "worker_failed") from
    what its study holds (no exhaustive evaluation), with what the search cost until then (a SearchCost, or
    None); None when that came before its study was made."""
    import optuna

    from ascendbench.tuning.study import study_name_for

    key = get_tunable(request.kernel).problem_key(problem)
    try:
        study = optuna.load_study(study_name=study_name_for(request, key), storage=storage)
    except KeyError:
        return None
    quick = TuneRequest(**{**request.__dict__, "exhaustive": False})
    return summarise(quick, space, problem, key, study, stopped=stopped, cost=cost)


def _problem_doc(o: ProblemOutcome) -> dict[str, Any]:
    return {"problem": o.problem, "key": o.key, "study_name": o.study_name, "trials": o.trials, "best": o.best,
            "heuristic": o.heuristic, "speedup": o.speedup, "infeasible_reasons": o.infeasible_reasons,
            "exhaustive": o.exhaustive, "importance": o.importance, "history": o.history, "seeds": o.seeds,
            "exhaustive_skipped": o.exhaustive_skipped, "importance_source": o.importance_source, "cost": o.cost,
            "deploy": o.deploy}


def _summary(outcomes: list[ProblemOutcome]) -> dict[str, int | float | None]:
    speedups = [o.speedup for o in outcomes if o.speedup is not None]
    within = [s <= 1 + _HEURISTIC_WITHIN for s in speedups]
    timed = [o for o in outcomes if o.best and o.heuristic.get("time_s")]
    tuned_s = sum(o.best["time_s"] for o in timed)
    heuristic_s = sum(o.heuristic["time_s"] for o in timed)
    regrets = [o.exhaustive["regret"] for o in outcomes if o.exhaustive and o.exhaustive.get("regret") is not None]
    # every search (a problem, or each of its --seeds): did it find a configuration faster than the heuristic?
    searched = [r["speedup"] for o in outcomes for r in ((o.seeds or {}).get("runs") or [{"speedup": o.speedup}])
                if r["speedup"] is not None]  # (the seed runs carry their speed-ups; a single study its own)
    gains = [x for x in searched if x > 1 + _BEAT]
    costs = [o.cost for o in outcomes if o.cost]
    return {"problems": len(outcomes),
            "searches": len(searched),
            "searches_beat_heuristic": len(gains),
            "beat_rate": len(gains) / len(searched) if searched else None,
            "median_gain_when_beaten": statistics.median(gains) if gains else None,
            "max_gain": max(gains) if gains else None,
            "evaluations_replayed": sum(c["replayed"] for c in costs) if costs else None,
            "evaluations_simulated": sum(c["simulated"] for c in costs) if costs else None,
            "search_wall_s": sum(c["wall_s"] for c in costs) if costs else None,
            "model_s": sum(c["model_s"] for c in costs) if costs else None,
            # every search of every problem (with --seeds, each seed's study)
            "trials_finished": sum(r["finished"] for o in outcomes for r in _searches(o)),
            "trials_evaluated": sum(r["evaluated"] for o in outcomes for r in _searches(o)),
            "workload_time_tuned_s": tuned_s if timed else None,
            "workload_time_heuristic_s": heuristic_s if timed else None,
            "workload_speedup": heuristic_s / tuned_s if timed and tuned_s > 0 else None,
            "max_regret": max(regrets) if regrets else None,
            "fraction_heuristic_within_5pct": sum(within) / len(within) if within else None,
            "mean_speedup": sum(speedups) / len(speedups) if speedups else None,
            "max_speedup": max(speedups) if speedups else None,
            "min_speedup": min(speedups) if speedups else None}


def _searches(o: ProblemOutcome) -> list[dict[str, Any]]:
    """The searches of a problem: each --seeds run (combine_seeds), or the one study's counts."""
    runs = (o.seeds or {}).get("runs") or []
    return runs if runs and all("finished" in r for r in runs) else [o.trials]


def _g6_claim(outcomes: list[ProblemOutcome]) -> list[dict[str, Any]]:
    """Claim G-6 on the fig6 shapes: the selector's tiling is within 5% of the best the tuner found (a wider
    search than the paper's candidates, so a miss here says the selector leaves speed on the table)."""
    fig6 = {(m, n, k, b) for m, n, k, b in load_workload("fig6").shapes}
    rows = [o for o in outcomes if (o.problem["m"], o.problem["n"], o.problem["k"], o.problem["batch"]) in fig6]
    if len(rows) != len(fig6) or any(o.speedup is None for o in rows):
        return []
    ratios = {o.key: 1 / o.speedup for o in rows}
    return [{"id": "G-6", "statement": "fig6 shapes: the selector's tiling is within 5% of the best tuned one",
             "paper": "selector best of the candidates", "simulated": ratios,
             "holds": all(r >= 1 - _HEURISTIC_WITHIN for r in ratios.values()),
             "tolerance": "heuristic throughput >= 0.95 x tuned best"}]


# ---------------------------------------------------------------------------------------------------------
def tune(kernel: str, *, problems: str | None = None, trials: int = 200, timeout: float | None = None,
         sampler: str = "tpe", seed: int = 0, seeds: int = 1, storage: str | Path | None = None,
         study_name: str | None = None, jobs: int = 1, exhaustive: bool | None = None, replay: bool = True,
         space: str | Path | None = None, hardware: str | Path | None = None, **problem: Any) -> dict[str, Any]:
    """Tune kernel `kernel` with Optuna on the timing model and compare the best configuration with the paper's
    heuristic: what `ascendbench tune <kernel> ... --json` prints, without its printing and files.

    Args:
        kernel: a registry kernel with a search space: "scan", "batched-scan", "sort", "topk", "topp", "sample",
            "hgemm".
        problems: a named problem set of the search space file (default: its "default" set, when no problem is
            given in `problem`).
        trials: distinct feasible configurations each problem's study should hold (1 to 10**9; a resumed study
            runs only the missing ones).
        timeout: stop each problem's search after this many seconds (None: no limit).
        sampler: Optuna sampler, one of "tpe", "random", "gp", "grid".
        seed: sampler seed (0 to 2**32 - 1); seeds: independent searches per problem (1 to 100), seeds `seed` to
            `seed + seeds - 1`, each in its own study.
        storage: where the studies live: an RDB URL (postgresql://..., sqlite:///...) or a journal file path
            (default results/tuning/studies.journal, relative to the working folder; created when missing).
        study_name: study name (default kernel/hardware); each problem's study is <name>/<problem>.
        jobs: worker processes sharing each study.
        exhaustive: also evaluate the whole grid (True/False; None: when kept already or cheap).
        replay: answer configurations simulated before from the evaluation store beside the storage.
        space: a search space TOML (default tuning_spaces/<kernel>.toml).
        hardware: hardware profile name or TOML path (default: the kernel's paper's chip, as the CLI's).
        problem: the problem's sizes and fixed parameters, as the command's options in Python names: hgemm
            m, n, k (together), batch, workload (a named workload), every_core; scan n, dtype, exclusive;
            batched-scan batch, length, dtype, exclusive; the other kernels their parameter model's fields
            that the space does not tune (`ascendbench.kernels.get(kernel).Params`), e.g. sort n, dtype,
            descending.

    Returns:
        The tuning result document (store/schema.py TuningResult as a JSON-ready dict; the same keys as `tune
        --json`): per problem `best` and `heuristic` (config, time_s in seconds, throughput in `unit`: GB/s, or
        TFLOPS for hgemm), `speedup` (heuristic time / best time), trial counts, and `summary` over the problems.
        `command` is ["python-api", "tune", kernel]; no result file is written (the studies are stored).

    Raises:
        ParamError: a bad argument, named in Python's spelling with a suggestion when misspelt ("trails: is not
            an argument of tune; did you mean trials?"), a search space or storage that cannot be used.
        KeyboardInterrupt: Ctrl-C (the finished trials are kept in the storage; the same call resumes).
        WorkerError: a `jobs` worker process died (the finished trials are kept).
        OSError: the storage failed while searching.
    """
    try:
        space_name, given = _api_kernel(kernel, problem)
        hardware = get_spec(kernel).default_hardware if hardware is None else hardware
        if not isinstance(hardware, (str, Path)):
            raise ParamError("hardware", f"must be a profile name or a TOML path, got {hardware!r}")
        for name, value in (("storage", storage), ("study-name", study_name), ("problems", problems),
                            ("sampler", sampler)):
            if value is not None and not isinstance(value, (str, Path) if name == "storage" else str):
                raise ParamError(name, f"must be text, got {value!r}")
        loaded = load_search_space(space_name, space)
        problem_list, claims_for = problems_of(space_name, loaded, problems, given)
        setup = prepare(space_name, loaded, hardware=str(hardware), trials=trials, timeout=timeout, sampler=sampler,
                        seed=seed, seeds=seeds, storage=None if storage is None else str(storage),
                        study_name=study_name, jobs=jobs, exhaustive=exhaustive, replay=replay)
        searched = search(setup, problem_list)
    except ParamError as exc:
        raise exc.in_python_names()
    if searched.interrupted:
        raise KeyboardInterrupt
    if searched.worker_failed:
        raise WorkerError(f"{searched.worker_failed}; the finished trials are kept in "
                          f"{describe_storage(setup.request.storage)}")
    return document(setup, searched, ["python-api", "tune", kernel], claims_for)


_API_ARGUMENTS = ("kernel", "problems", "trials", "timeout", "sampler", "seed", "seeds", "storage", "study_name",
                  "jobs", "exhaustive", "replay", "space", "hardware")


def _api_kernel(kernel: str, problem: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """The search space name of a tunable kernel and the problem's options, checked. Raises ParamError."""
    from ascendbench.kernels.base import did_you_mean
    from ascendbench.kernels.registry import REGISTRY

    tunable = [spec.name for spec in REGISTRY.values() if spec.space is not None]
    if kernel not in tunable:
        what = (f"{kernel} has no search space" if kernel in REGISTRY
                else f"unknown tunable kernel {kernel!r}{did_you_mean(str(kernel), tunable)}")
        raise ParamError("kernel", f"{what}; choose from {', '.join(tunable)}")
    space_name = get_spec(kernel).space
    allowed = problem_options(space_name)
    for name in problem:
        if name not in allowed:
            raise ParamError(name, f"is not an argument of tune({kernel!r})",
                             suggestion=suggest(name, (*allowed, *_API_ARGUMENTS)))
    return space_name, dict(problem)
