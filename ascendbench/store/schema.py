"""The versioned result document every run writes (pydantic models; JSON Schema generated from them)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "HGEMM_SCHEMA_PATH",
    "SCHEMA_PATH",
    "SCHEMA_VERSION",
    "TUNING_SCHEMA_PATH",
    "GemmProblem",
    "HgemmRunResult",
    "HgemmShapeResult",
    "Host",
    "Problem",
    "RunResult",
    "TuningResult",
    "Verification",
    "json_schema",
]

SCHEMA_VERSION = 1
SCHEMA_PATH = Path(__file__).with_name("run_result.schema.json")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)


class Problem(_Model):
    """What was computed: size, dtypes, and where the data came from."""

    n: int = Field(ge=0, description="number of elements (any size; a Python int, no 32-bit wrap)")
    dtype: Literal["fp16", "int8"]
    out_dtype: Literal["fp32", "fp16", "int32"]
    exclusive: bool
    seed: int | None = Field(None, description="seed of the generated input; null for --input or --model-only")
    input_file: str | None = None
    input_sha256: str | None = Field(None, description="SHA-256 of the input file's bytes")
    data: Literal["generated", "file", "none"] = Field(description="'none' for --model-only runs")
    generator: Literal["random", "constant", "counting"] | None = Field(
        None, description="how generated input was produced (block by block, seeded): random, constant (ones) or "
                          "counting; null for --input, arrays passed in, and --model-only")
    offset_type: Literal["int32", "int64"] | None = Field(
        None, description="type of the problem's global offsets by CUB's rule: int32 while n <= 2**31 - 1, else "
                          "int64 (offsets inside one streaming partition always fit int32)")
    partition_limit: int | None = Field(None, ge=1, description="items per streaming partition (2**31 - 1 unless "
                                                               "--partition-limit)")
    partitions: int | None = Field(None, ge=0, description="streaming partitions: ceil(n / partition_limit)")
    output: Literal["memory", "file", "discarded", "none"] | None = Field(
        None, description="where the functional output went: kept in memory, written to --output-file (a memory "
                          "map), or verified on the fly and discarded (default for large n); 'none' for --model-only")


class Verification(_Model):
    """Check of the functional result against the NumPy reference (null fields for --model-only)."""

    performed: bool
    passed: bool | None = None
    max_abs_error: float | None = None
    max_rel_error: float | None = Field(None, description="relative to the running sum of |x|")
    tolerance: str | None = None


class Host(_Model):
    wall_time_s: float = Field(description="host wall time of the whole command, seconds")
    functional_time_s: float | None = None
    model_time_s: float = Field(description="host time spent in the timing model, seconds")
    verify_time_s: float | None = None
    machine: str
    python: str
    numpy: str


class RunResult(_Model):
    """One `ascendbench run` result. Metric keys carry their unit: *_s seconds, *_gbps GB/s (1e9 B/s),
    fraction_* in [0, 1] (may exceed 1 only for L2-resident data), *_bytes bytes."""

    schema_version: Literal[1] = SCHEMA_VERSION
    tool_version: str
    created_at: str = Field(description="UTC time, ISO 8601")
    command: list[str]
    hardware: dict[str, Any] = Field(description="the full hardware profile: constants with their sources")
    kernel: str
    params: dict[str, Any]
    problem: Problem
    metrics: dict[str, float | None]
    phases_s: dict[str, float]
    utilisation: dict[str, dict[str, float]] = Field(description="busy fraction per unit kind and pipe")
    counters: dict[str, float]
    verification: Verification
    host: Host
    model: dict[str, Any] = Field(description="how the timing was obtained (extrapolation, warm L2, ...)")


def json_schema() -> dict[str, Any]:
    return RunResult.model_json_schema()


def write_schema(path: Path = SCHEMA_PATH) -> None:
    """Regenerate the shipped JSON Schema file (tests check it is up to date)."""
    path.write_text(json.dumps(json_schema(), indent=2, sort_keys=True) + "\n")


class GemmProblem(_Model):
    """An HGEMM problem: C = alpha * A @ B + beta * C, fp16, `batch` problems of one shape."""

    m: int = Field(ge=0)
    n: int = Field(ge=0)
    k: int = Field(ge=0)
    batch: int = Field(ge=1)
    alpha: float
    beta: float
    data: Literal["generated", "file", "none"]
    seed: int | None = None
    files: dict[str, str] = Field(default_factory=dict, description="--a/--b/--c paths")
    sha256: dict[str, str] = Field(default_factory=dict, description="SHA-256 of each input file")


class HgemmShapeResult(_Model):
    """One shape of an HGEMM run: its tiling, simulated time and throughput, and its check."""

    m: int
    n: int
    k: int
    batch: int
    tiling: dict[str, Any]
    time_s: float
    tflops: float = Field(description="2 M N K batch / time / 1e12")
    fraction_of_peak: float
    phases_s: dict[str, float]
    verification: Verification


class HgemmRunResult(_Model):
    """One `ascendbench run hgemm` result: a single shape (`problem`) or a named workload (`workload`), with
    one entry per shape in `shapes` and, for workloads, a `summary` of TFLOPS (avg, max, percentiles)."""

    schema_version: Literal[1] = SCHEMA_VERSION
    tool_version: str
    created_at: str
    command: list[str]
    hardware: dict[str, Any]
    kernel: Literal["hgemm"] = "hgemm"
    params: dict[str, Any]
    problem: GemmProblem | None = None
    workload: str | None = None
    shapes: list[HgemmShapeResult]
    summary: dict[str, float]
    metrics: dict[str, float | None]
    utilisation: dict[str, dict[str, float]]
    counters: dict[str, float]
    host: Host
    model: dict[str, Any]


HGEMM_SCHEMA_PATH = Path(__file__).with_name("hgemm_result.schema.json")


class TrialCounts(_Model):
    """Trials of a study as stored after the run: finished = complete + infeasible (pruned with a reason);
    `evaluated` (what --trials counts) = distinct feasible configurations."""

    evaluated: int = Field(description="distinct feasible configurations the study holds (what --trials asks for)")
    finished: int
    complete: int
    infeasible: int = Field(description="distinct configurations that cannot run (pruned with the kernel's "
                                        "reason)")
    repeats: int = Field(description="trials that proposed a configuration the study already held (answered "
                                     "from it, not counted); evaluated + infeasible + repeats = finished")
    distinct: int = Field(description="distinct configurations proposed, feasible or not")
    failed: int = Field(description="trials interrupted while running (Ctrl-C, a killed worker)")
    running: int = Field(description="trials still marked running (another worker, or a worker killed with "
                                     "SIGKILL on storage without heartbeats)")
    target: int = Field(description="--trials: distinct feasible configurations the study should hold")
    this_run: int = Field(description="finished trials this command ran (the rest were there already, or ran "
                                      "on other workers sharing the study)")
    stopped: Literal["target", "grid", "idle", "timeout", "interrupted", "worker_failed"] | None = Field(
        None, description="why the search ended: target (it holds --trials), grid (every point seen), idle (200 "
                          "trials in a row found no new feasible configuration: fewer may exist than --trials), "
                          "timeout (--timeout), interrupted (Ctrl-C, SIGTERM), worker_failed (a --jobs worker "
                          "process died: the others stopped after their trial in flight); absent in results "
                          "written before it was recorded")
    replayed: int = Field(0, description="trials of this command answered from the evaluation store "
                                         "(results/tuning/evaluations.sqlite: configurations simulated by an "
                                         "earlier run, seed or sampler on the same problem, profile and model) "
                                         "instead of simulated; 0 in results written before")
    foreign: int = Field(0, description="finished trials of the study that this tool did not make (no "
                                        "configuration of its space in their 'config' user attribute: plain "
                                        "Optuna, optuna-dashboard): left out "
                                        "of every other count, the best and the importance; 0 in results "
                                        "written before")


class Configuration(_Model):
    """A configuration with its simulated time (seconds) and throughput (the result's `unit`)."""

    config: dict[str, Any]
    time_s: float | None
    throughput: float | None
    trial: int | None = Field(None, description="number of the trial that found it")
    rank: int | None = Field(None, description="1 + number of distinct evaluated configurations that are faster")
    ranked_among: int | None = Field(None, description="distinct configurations evaluated, this one included")
    infeasible: str | None = Field(None, description="why the kernel cannot run it (the heuristic on this "
                                                     "hardware)")
    source: Literal["study", "heuristic"] | None = Field(None, description="best: a trial of the study, or the "
                                                         "heuristic when it is faster (it lies outside the space)")
    in_space: bool | None = Field(None, description="heuristic: a point of the search space (then trial 0)")


class ExhaustiveCheck(_Model):
    """The whole grid evaluated with the timing model: the true optimum and how close the study got."""

    points: int
    feasible: int
    optimum: Configuration | None
    regret: float | None = Field(description="best found / optimum - 1")
    best_rank: int | None = Field(None, description="true rank of the best found among the feasible points")
    heuristic_rank: int | None = Field(None, description="true rank of the heuristic among the feasible points")
    heuristic_regret: float | None = Field(None, description="heuristic / optimum - 1")
    trials_to_1pct: int | None = Field(description="distinct feasible configurations evaluated until the best "
                                                   "was within 1% of the optimum")
    trials_to_5pct: int | None
    stored: bool = Field(False, description="read from the ground-truth store (results/tuning/ground-truth)")
    kept: bool | None = Field(None, description="the grid is in the ground-truth store (False: its folder "
                                                "could not be written)")
    source: Literal["store", "study", "evaluated"] | None = Field(None, description="where the grid came "
                                                                  "from: the store, the study (it covers the "
                                                                  "grid), or evaluated by this command")
    within_1pct: int | None = Field(None, description="feasible configurations within 1% of the optimum "
                                                      "(the optimum included)")
    top: list[RankedConfiguration] = Field(default_factory=list, description="the configurations ranked 1 to "
                                           "5 on the grid, ties included (at most 50; see top_left_out)")
    top_left_out: int = Field(0, description="configurations ranked 1 to 5 beyond the 50 listed in `top`")
    importance: dict[str, float] | None = Field(None, description="parameter importance (Optuna's PED-ANOVA) "
                                                "over every feasible grid point")
    grid_cost: GridCost | None = Field(None, description="the grid's evaluation by this command (None: read "
                                       "from the ground-truth store or the study)")


class RankedConfiguration(_Model):
    """A grid point among the fastest: its rank (1 + points strictly faster, so ties share a rank)."""

    rank: int
    config: dict[str, Any]
    time_s: float


class GridCost(_Model):
    """What evaluating the whole grid cost this command."""

    seconds: float = Field(description="wall time of the grid's evaluation")
    simulated: int = Field(description="points simulated")
    replayed: int = Field(description="points read from the evaluation store")
    processes: int = Field(description="processes that simulated")
    store_error: str | None = Field(None, description="why the evaluation store could not be used")


class SearchCost(_Model):
    """Where this command's search time went (seconds, summed over --jobs workers); the parts add up to wall_s."""

    wall_s: float = Field(description="the search's time, summed over its processes (--jobs workers)")
    model_s: float = Field(description="the timing model (configurations simulated)")
    check_s: float = Field(description="the kernel's checks of the sampler's candidates")
    sampler_s: float = Field(description="the sampler, its checks excluded")
    replay_s: float = Field(description="answers read from the evaluation store")
    storage_s: float = Field(description="the shared storage: adding this command's trials, reading the others'")
    other_s: float = Field(description="the rest: Optuna's in-memory study and this tool's bookkeeping")
    simulated: int = Field(description="configurations the timing model simulated")
    replayed: int = Field(description="configurations replayed from the evaluation store")
    processes: int = Field(1, description="the searching processes whose times are summed (--jobs workers)")
    store_error: str | None = Field(None, description="why the evaluation store could not be used")


class Deployment(_Model):
    """The best configuration, ready to use."""

    command: list[str] = Field(description="the `ascendbench run` command that runs it, as arguments")
    shell: str = Field(description="that command quoted for a POSIX shell")
    fragment: dict[str, Any] = Field(description="{kernel, hardware, problem, config}")
    note: str | None = Field(None, description="why that run's simulated time may differ from the tuned one (a "
                                               "kernel whose work depends on its input's values)")


class TunedProblem(_Model):
    """One problem's study: best configuration, the paper's heuristic, and the speed-up between them."""

    problem: dict[str, Any]
    key: str
    study_name: str
    trials: TrialCounts
    best: Configuration | None
    heuristic: Configuration
    speedup: float | None = Field(description="heuristic time / best time (> 1: tuning found a faster one)")
    infeasible_reasons: dict[str, int] = Field(description="infeasible trials per reason (the buffer or option)")
    exhaustive: ExhaustiveCheck | None = None
    importance: dict[str, float] | None = Field(None, description="parameter importance (Optuna PED-ANOVA) "
                                                "over the grid's feasible points when the grid is known, else over "
                                                "the study's feasible trials (importance_source)")
    importance_source: Literal["grid", "study"] | None = Field(None, description="what `importance` was "
                                                               "computed over")
    cost: SearchCost | None = Field(None, description="where this command's search time went (None: the "
                                    "search was cut short)")
    deploy: Deployment | None = Field(None, description="the best configuration as a run command and a JSON "
                                      "fragment")
    history: list[float] = Field(default_factory=list, description="best time so far (s) after each new "
                                                                   "feasible configuration")
    exhaustive_skipped: str | None = Field(None, description="why the whole grid was not evaluated")
    seeds: dict[str, Any] | None = Field(None, description="--seeds: per search (seed) its best time, speed-up, "
                                         "regret and trials to 1%, and their spread (min, median, max); the "
                                         "rest of the problem is the fastest seed's")


class TuningResult(_Model):
    """One `ascendbench tune` result (results/tuning/<kernel>/...): per problem the best configuration found,
    the heuristic's, and in `summary` the workload view (fraction of problems where the heuristic is within 5%
    of the best, mean and max speed-up)."""

    schema_version: Literal[1] = SCHEMA_VERSION
    kind: Literal["tuning"] = "tuning"
    tool_version: str
    created_at: str
    command: list[str]
    hardware: dict[str, Any]
    kernel: str
    unit: str = Field(description="throughput unit: TFLOPS (HGEMM) or GB/s (scans)")
    sampler: str
    seed: int
    storage: str = Field(description="where the studies are kept (URL passwords hidden)")
    space: dict[str, Any] = Field(description="search space file and its fingerprint")
    interrupted: bool
    problems: list[TunedProblem]
    summary: dict[str, int | float | None] = Field(description="counts (problems, trials_finished, "
                                                               "trials_evaluated) as integers, the rest numbers")
    claims: list[dict[str, Any]] = Field(default_factory=list, description="paper claims checked on the way "
                                                                            "(G-6 on the fig6 shapes)")
    host: dict[str, float]


TUNING_SCHEMA_PATH = Path(__file__).with_name("tuning_result.schema.json")
