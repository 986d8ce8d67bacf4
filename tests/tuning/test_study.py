"""Optuna studies over the timing model: resume, determinism, infeasible trials, exhaustive optimum, workers."""

import json

import optuna
import pytest

from ascendbench.hardware import load_profile
from ascendbench.kernels.registry import get_tunable
from ascendbench.kernels.tunable import Infeasible
from ascendbench.tuning import study as study_module
from ascendbench.tuning.space import load_space, space_path
from ascendbench.tuning.study import (
    TuneError,
    TuneRequest,
    describe_storage,
    open_storage,
    study_name_for,
    summarise,
    tune_problem,
)

PROBLEM = {"m": 1024, "n": 256, "k": 512, "batch": 1}
SMALL_SPACE = """kernel = "hgemm"
[parameters.m0]
type = "categorical"
choices = [64, 128, 256]
default = "heuristic"
[parameters.n0]
type = "categorical"
choices = [64, 128]
default = "heuristic"
[parameters.k0]
type = "log-int"
low = 64
high = 512
default = "heuristic"
[parameters.split_k]
type = "categorical"
choices = [1]
default = 1
[parameters.shuffle_k]
type = "categorical"
choices = [true]
default = true
[parameters.padding]
type = "categorical"
choices = [true]
default = true
[parameters.double_buffer]
type = "categorical"
choices = [true]
default = true
"""


@pytest.fixture
def small_space(tmp_path):
    path = tmp_path / "hgemm-small.toml"
    path.write_text(SMALL_SPACE)
    return path


def request(tmp_path, space, **kw):
    base = {"kernel": "hgemm", "space_path": space, "hardware": "atlas-300t-a2", "trials": 10,
                "storage": str(tmp_path / "s.journal")}
    return TuneRequest(**{**base, **kw})


def stored(req, key):
    return optuna.load_study(study_name=study_name_for(req, key), storage=open_storage(req.storage))


def configs(study):
    return [t.user_attrs["config"] for t in sorted(study.trials, key=lambda t: t.number)]


def test_resume_keeps_finished_trials_and_runs_only_the_missing_ones(tmp_path):
    space = space_path("hgemm")
    first = tune_problem(request(tmp_path, space, trials=8, exhaustive=False), PROBLEM)
    before = configs(stored(request(tmp_path, space), first.key))
    again = tune_problem(request(tmp_path, space, trials=8, exhaustive=False), PROBLEM)
    assert again.trials == first.trials | {"this_run": 0}  # nothing to do: the study already holds 8
    assert first.trials["evaluated"] == 8
    more = tune_problem(request(tmp_path, space, trials=20, exhaustive=False), PROBLEM)
    after = configs(stored(request(tmp_path, space), first.key))
    assert more.trials["evaluated"] == 20 and after[:len(before)] == before


def test_trials_count_distinct_feasible_configurations_and_trial_0_is_the_heuristic(tmp_path):
    req = request(tmp_path, space_path("hgemm"), trials=30, sampler="random", exhaustive=False)
    out = tune_problem(req, {"m": 4096, "n": 4096, "k": 4096, "batch": 1})
    study = stored(req, out.key)
    trials = sorted(study.trials, key=lambda t: t.number)
    assert trials[0].user_attrs["heuristic"] and trials[0].user_attrs["config"] == out.heuristic["config"]
    complete = [t for t in trials if t.state == optuna.trial.TrialState.COMPLETE]
    keys = {str(sorted(t.user_attrs["config"].items())) for t in complete}
    assert out.trials["evaluated"] == len(keys) == 30
    pruned = [t for t in trials if t.state == optuna.trial.TrialState.PRUNED]
    assert out.trials["infeasible"] == len({str(sorted(t.user_attrs["config"].items())) for t in pruned}) > 0
    assert out.trials["finished"] == len(complete) + len(pruned)
    assert out.trials["evaluated"] + out.trials["infeasible"] + out.trials["repeats"] == out.trials["finished"]
    repeats = [t for t in trials if t.user_attrs.get("repeat")]
    assert out.trials["repeats"] == len(repeats)
    assert out.heuristic["trial"] == 0
    for t in repeats:  # answered from the study: the same outcome as the first evaluation
        first = next(f for f in trials if f.user_attrs["config"] == t.user_attrs["config"])
        assert first.number < t.number and first.value == t.value and first.state == t.state
    assert out.best["time_s"] <= out.heuristic["time_s"] and out.speedup >= 1


def test_fifteen_trials_never_report_a_best_slower_than_the_heuristic(tmp_path):
    for seed in range(3):
        req = request(tmp_path / str(seed), space_path("hgemm"), trials=15, seed=seed, exhaustive=False)
        (tmp_path / str(seed)).mkdir()
        for shape in ({"m": 1024, "n": 1024, "k": 1024, "batch": 1}, {"m": 2048, "n": 128, "k": 2048, "batch": 1}):
            out = tune_problem(req, shape)
            assert out.speedup >= 1 and out.heuristic["rank"] >= 1


def test_a_heuristic_outside_the_space_still_bounds_the_reported_best(tmp_path, small_space):
    # the small space has no K0 of 1024 or M0 of 16 ...; whatever the selector picks, the best is never slower
    out = tune_problem(request(tmp_path, small_space, trials=2, sampler="random"), {"m": 64, "n": 64, "k": 4096,
                                                                                   "batch": 1})
    assert out.best["time_s"] <= out.heuristic["time_s"]
    assert out.heuristic["in_space"] == (out.heuristic["config"]["m0"] in (64, 128, 256)
                                         and out.heuristic["config"]["n0"] in (64, 128)
                                         and 64 <= out.heuristic["config"]["k0"] <= 512)


def test_same_seed_sampler_and_space_give_the_same_trials(tmp_path):
    space = space_path("hgemm")
    runs = []
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        req = request(tmp_path / folder, space, trials=15, seed=7, exhaustive=False)
        tune_problem(req, PROBLEM)
        runs.append(configs(stored(req, "1024x256x512")))
    assert runs[0] == runs[1]
    other = request(tmp_path / "c", space, trials=15, seed=8, exhaustive=False)
    (tmp_path / "c").mkdir()
    tune_problem(other, PROBLEM)
    assert configs(stored(other, "1024x256x512")) != runs[0]


def test_infeasible_points_are_pruned_with_the_kernels_reason(tmp_path):
    req = request(tmp_path, space_path("hgemm"), trials=40, sampler="random", exhaustive=False)
    out = tune_problem(req, {"m": 4096, "n": 4096, "k": 4096, "batch": 1})
    study = stored(req, out.key)
    pruned = [t for t in study.trials if t.state == optuna.trial.TrialState.PRUNED]
    distinct_pruned = {str(sorted(t.user_attrs["config"].items())) for t in pruned}
    assert pruned and out.trials["infeasible"] == len(distinct_pruned)
    hw = load_profile("atlas-300t-a2")
    for t in pruned:  # the reason is the kernel's own, and the point really cannot run
        with pytest.raises(Infeasible) as err:
            get_tunable("hgemm").evaluate(out.problem, t.user_attrs["config"], hw)
        assert t.user_attrs["infeasible"] == err.value.reason
        assert t.user_attrs["infeasible"].split(":")[0] in ("L0A", "L0B", "L0C", "L1", "UB")
    assert sum(out.infeasible_reasons.values()) == len(distinct_pruned)
    assert all(t.value is None for t in pruned)  # never scored


def test_small_space_is_evaluated_whole_and_regret_is_measured(tmp_path, small_space):
    req = request(tmp_path, small_space, trials=6, sampler="random")
    out = tune_problem(req, PROBLEM)
    ex = out.exhaustive
    assert ex is not None and ex["points"] == 3 * 2 * 4  # grid of 24 <= 512: automatic
    space = load_space(small_space)
    hw = load_profile("atlas-300t-a2")
    times = []
    for config in space.grid():
        try:
            times.append((get_tunable("hgemm").evaluate(PROBLEM, config, hw).time_s, config))
        except Infeasible:
            pass
    best_time, best_config = min(times, key=lambda tc: tc[0])
    assert ex["feasible"] == len(times) and ex["optimum"]["time_s"] == best_time
    assert ex["optimum"]["config"] == best_config
    assert ex["regret"] == pytest.approx(out.best["time_s"] / best_time - 1) and ex["regret"] >= 0
    hits = [i for i, t in enumerate(out.history, 1) if t <= best_time * 1.01]
    assert ex["trials_to_1pct"] == (hits[0] if hits else None)
    ordered = sorted(t for t, _ in times)
    assert ex["best_rank"] == 1 + sum(t < out.best["time_s"] * (1 - 1e-9) for t in ordered)
    assert ex["heuristic_rank"] == 1 + sum(t < out.heuristic["time_s"] * (1 - 1e-9) for t in ordered)
    # the grid is kept and reused: a second report reads it instead of evaluating it again
    again = tune_problem(req, PROBLEM)
    assert again.exhaustive["stored"] and again.exhaustive["optimum"] == ex["optimum"]


def test_grid_sampler_covers_the_grid_and_finds_the_optimum(tmp_path, small_space):
    req = request(tmp_path, small_space, trials=100, sampler="grid")
    out = tune_problem(req, PROBLEM)
    assert out.trials["distinct"] == 24  # stops when every point is done
    assert out.trials["evaluated"] == out.exhaustive["feasible"]
    assert out.exhaustive["regret"] == 0
    assert out.heuristic["rank"] >= 1 and out.heuristic["ranked_among"] <= 24


def test_heuristic_rank_and_speedup(tmp_path, small_space):
    out = tune_problem(request(tmp_path, small_space, trials=24, sampler="grid"), PROBLEM)
    assert out.speedup == pytest.approx(out.heuristic["time_s"] / out.best["time_s"])
    assert out.speedup >= 1  # the grid holds the selector's tiling (128 x 128 x 256), so tuned >= heuristic
    exhaustive_faster = out.heuristic["rank"] - 1
    assert exhaustive_faster == sum(1 for t in stored(request(tmp_path, small_space), out.key).trials
                                    if t.value is not None and t.value < out.heuristic["time_s"] * (1 - 1e-9))


def test_two_worker_processes_share_the_journal_without_losing_trials(tmp_path):
    req = request(tmp_path, space_path("hgemm"), trials=24, jobs=2, exhaustive=False)
    out = tune_problem(req, PROBLEM)
    study = stored(req, out.key)
    numbers = [t.number for t in study.trials]
    assert len(numbers) == len(set(numbers))
    assert out.trials["failed"] == 0 and out.trials["running"] == 0
    assert 24 <= out.trials["evaluated"] <= 25  # each worker stops once the study holds 24


def test_study_made_for_another_problem_or_space_is_refused(tmp_path, small_space):
    req = request(tmp_path, space_path("hgemm"), trials=2, exhaustive=False, study_name="mine")
    tune_problem(req, PROBLEM)
    with pytest.raises(TuneError, match="--study-name: study 'mine/1024x256x512' was made with another space"):
        tune_problem(request(tmp_path, small_space, trials=2, study_name="mine"), PROBLEM)


def test_storage_errors_and_descriptions(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(TuneError, match="is not a folder"):
        open_storage(str(blocker / "sub" / "s.journal"))
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    with pytest.raises(TuneError, match="is not an Optuna journal file"):
        open_storage(str(notes))
    assert notes.read_text() == "my notes\n"  # nothing appended to a file that is not a journal
    for url, message in (("foo://bar", "unknown URL scheme 'foo'"), ("sqlite://", "needs a file"),
                         ("/dev/null", "not a regular file")):
        with pytest.raises(TuneError, match=message):
            open_storage(url)
    assert not (tmp_path / "foo:").exists()
    assert describe_storage("postgresql://user:secret@host/db") == "postgresql://user:***@host/db"
    assert describe_storage(None) == "results/tuning/studies.journal"


def test_a_new_study_tries_the_warm_start_configurations_right_after_the_heuristic(tmp_path):
    first = tune_problem(request(tmp_path, space_path("hgemm"), trials=10, exhaustive=False), PROBLEM)
    other = {"m": 2048, "n": 256, "k": 512, "batch": 1}
    req = request(tmp_path, space_path("hgemm"), trials=10, exhaustive=False)
    out = tune_problem(req, other, warm_start=[first.best["config"]])
    trials = sorted(stored(req, out.key).trials, key=lambda t: t.number)
    assert trials[0].user_attrs.get("heuristic") and trials[0].user_attrs["config"] == out.heuristic["config"]
    assert trials[1].user_attrs.get("warm_start") and trials[1].user_attrs["config"] == first.best["config"]


def test_a_study_that_covers_the_grid_is_its_own_ground_truth(tmp_path, small_space):
    # workers sharing one study with the grid sampler spread the whole grid; the report then reads it
    req = request(tmp_path, small_space, trials=100, sampler="grid", exhaustive=None)
    out = tune_problem(req, PROBLEM)
    assert out.exhaustive["source"] == "study" and out.exhaustive["points"] == 24
    hw = load_profile("atlas-300t-a2")
    feasible = []
    for config in load_space(small_space).grid():
        try:
            feasible.append(get_tunable("hgemm").evaluate(PROBLEM, config, hw).time_s)
        except Infeasible:
            pass
    assert out.exhaustive["feasible"] == len(feasible) and out.exhaustive["optimum"]["time_s"] == min(feasible)
    assert tune_problem(req, PROBLEM).exhaustive["source"] == "store"  # kept for later reports


def test_ground_truth_that_cannot_be_kept_or_is_wrong_is_evaluated_again(tmp_path, small_space):
    req = request(tmp_path, small_space, trials=3, sampler="random", exhaustive=True)
    from ascendbench.tuning.study import ground_truth_path

    path = ground_truth_path(req, load_space(small_space), PROBLEM)
    path.parent.parent.mkdir(parents=True)
    path.parent.write_text("a file in the way")  # the kernel's folder cannot be made
    out = tune_problem(req, PROBLEM)
    assert out.exhaustive["kept"] is False and out.exhaustive["source"] == "evaluated"
    path.parent.unlink()
    path.parent.mkdir()
    path.write_text(json.dumps({"grid": [[{"m0": 16}, 1e-9]]}))  # valid JSON, not this space's grid
    again = tune_problem(req, PROBLEM)
    assert again.exhaustive["source"] == "evaluated" and again.exhaustive["kept"] is True
    assert again.exhaustive["optimum"] == out.exhaustive["optimum"] and again.exhaustive["points"] == 24


def test_grid_workers_share_one_shuffle_of_the_grid_and_cover_it(tmp_path):
    # every worker shuffles the grid with the same seed (grid ids in the study name the same points) and no
    # neighbour trial without a grid id is queued: before, two workers stopped short of the grid with a hundred
    # repeats, and half the seeds crashed in Optuna's grid sampler (KeyError: 'grid_id')
    space = tmp_path / "bools.toml"
    space.write_text(SMALL_SPACE.replace('type = "categorical"\nchoices = [true]', 'type = "bool"')
                     .replace('type = "categorical"\nchoices = [1]', 'type = "log-int"\nlow = 1\nhigh = 2'))
    assert load_space(space).grid_size == 384
    req = request(tmp_path, space, trials=500, sampler="grid", jobs=2, seed=3, exhaustive=False)
    out = tune_problem(req, PROBLEM)
    hw = load_profile("atlas-300t-a2")
    feasible = 0
    for config in load_space(space).grid():
        try:
            get_tunable("hgemm").evaluate(PROBLEM, config, hw)
            feasible += 1
        except Infeasible:
            pass
    assert out.trials["evaluated"] == feasible and out.trials["distinct"] == 384
    assert out.trials["failed"] == out.trials["running"] == 0


def test_a_search_short_of_its_target_says_why_it_stopped(tmp_path, small_space, monkeypatch):
    out = tune_problem(request(tmp_path, space_path("hgemm"), trials=3, exhaustive=False), PROBLEM)
    assert out.trials["evaluated"] == 3 and out.trials["stopped"] == "target"
    out = tune_problem(request(tmp_path, space_path("hgemm"), trials=10**6, exhaustive=False, timeout_s=0.3,
                               study_name="t"), PROBLEM)
    assert out.trials["evaluated"] < 10**6 and out.trials["stopped"] == "timeout"
    grid = tune_problem(request(tmp_path, small_space, trials=10**6, sampler="grid", study_name="g"), PROBLEM)
    assert grid.trials["distinct"] == load_space(small_space).grid_size and grid.trials["stopped"] == "grid"
    # the random sampler meets a tile that does not fit within a few trials: one such trial is "idle" here
    monkeypatch.setattr(study_module, "MAX_IDLE_TRIALS", 1)
    idle = tune_problem(request(tmp_path, space_path("hgemm"), trials=10**6, exhaustive=False, sampler="random",
                                study_name="i"), PROBLEM)
    assert idle.trials["infeasible"] >= 1 and idle.trials["stopped"] == "idle"
    # worker processes report nothing back: the counts tell (no --timeout: idle)
    assert summarise(request(tmp_path, space_path("hgemm"), trials=10**6, exhaustive=False, study_name="i"),
                     load_space(space_path("hgemm")), PROBLEM, idle.key,
                     stored(request(tmp_path, space_path("hgemm"), study_name="i"), idle.key)).trials["stopped"] == "idle"


def test_parallel_coordinates_show_the_spaces_own_values(tmp_path):
    from ascendbench.tuning.plots import _in_space_values

    req = request(tmp_path, space_path("hgemm"), trials=12, exhaustive=False)
    out = tune_problem(req, PROBLEM)
    study = stored(req, out.key)
    feasible = [t for t in study.get_trials(states=(optuna.trial.TrialState.COMPLETE,)) if not t.user_attrs.get("repeat")]
    shown = _in_space_values(feasible, load_space(space_path("hgemm")))
    # tile sizes and SplitK as the kernel takes them, not Optuna's m0_index or log2_k0
    assert [t.params for t in shown.trials] == [t.user_attrs["config"] for t in feasible]
    assert [t.value for t in shown.trials] == [t.value for t in feasible]
    assert all(t.params["k0"] in (8, 16, 32, 64, 128, 256, 512, 1024, 2048) for t in shown.trials)


@pytest.mark.parametrize(("kernel", "problem", "encoded"), [
    ("hgemm", PROBLEM, {"m0_index", "n0_index", "log2_k0", "log2_split_k"}),
    ("scan", {"n": 10**5, "dtype": "fp16", "exclusive": False}, {"log2_s", "chunk"}),
])
def test_each_trial_carries_each_parameters_real_value_as_a_user_attribute(tmp_path, kernel, problem, encoded):
    """optuna-dashboard shows and sorts user attributes: each parameter's real value is one, numeric where the
    parameter is (m0=128, not m0_index=5), beside the encoding the sampler sees and the "config" this tool
    reads."""
    space = load_space(space_path(kernel)).on(load_profile("atlas-300t-a2"))
    req = request(tmp_path, space_path(kernel), kernel=kernel, trials=6, sampler="random", exhaustive=False)
    out = tune_problem(req, problem)
    trials = [t for t in stored(req, out.key).trials if t.state.is_finished()]
    assert len(trials) >= 6  # pruned (infeasible) trials carry them too
    for t in trials:
        config = space.from_optuna(t.params)  # the real values decoded from what the sampler saw
        assert encoded <= set(t.params) and t.user_attrs["config"] == config
        assert {name: t.user_attrs[name] for name in space.parameters} == config
        for name, p in space.parameters.items():
            value = t.user_attrs[name]
            if p.type in ("ordered", "int") or (p.type == "log-int" and value != "off"):
                assert type(value) is int, (name, value)  # a number the dashboard sorts, not "128"
            elif p.type == "bool":
                assert type(value) is bool, (name, value)


def test_no_tunable_kernel_has_a_parameter_named_as_a_trials_own_attribute():
    from ascendbench.kernels.registry import tunables

    for name, tunable in tunables().items():
        assert not set(tunable.check_values()) & study_module.TRIAL_ATTRS, name
