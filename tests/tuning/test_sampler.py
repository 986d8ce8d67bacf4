"""The tuner's TPE (NewPointTPESampler), the kernels' checks before a trial, and the space's inverse mapping."""

import itertools
import os
import random
import threading

import optuna
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from optuna.trial import TrialState

from ascendbench.hardware import load_profile
from ascendbench.kernels.registry import get_tunable
from ascendbench.kernels.tunable import Infeasible
from ascendbench.tuning import study as study_module
from ascendbench.tuning.space import load_space, space_path
from ascendbench.tuning.study import NewPointTPESampler, TuneRequest, tune_problem

HW = load_profile("atlas-300t-a2")


def _bowl(trial):
    """A 2-D integer bowl on a 12 x 12 grid (144 points), minimum at (3, 8)."""
    x, y = trial.suggest_int("x", 0, 11), trial.suggest_int("y", 0, 11)
    return (x - 3) ** 2 + (y - 8) ** 2 + 0.01 * x


def _points(study):
    return [(t.params["x"], t.params["y"]) for t in sorted(study.trials, key=lambda t: t.number)]


def _run(sampler, trials):
    study = optuna.create_study(sampler=sampler)
    study.optimize(_bowl, n_trials=trials)
    return study


def test_tpe_proposes_no_point_the_study_holds_while_it_finds_new_ones():
    plain = _points(_run(optuna.samplers.TPESampler(seed=3, n_startup_trials=5, multivariate=True), 80))
    assert len(set(plain)) < 80  # plain TPE repeats itself on a small grid: the test can fail
    for seed in range(3):
        points = _points(_run(NewPointTPESampler(seed=seed, n_startup_trials=5, multivariate=True), 80))
        assert len(set(points)) == 80
        assert (3, 8) in points  # it still finds the minimum


def test_tpe_skips_what_the_kernel_refuses_before_a_trial_is_made():
    refused = []

    def rejects(params):
        refused.append(params)
        return params["x"] + params["y"] > 12

    sampler = NewPointTPESampler(seed=0, n_startup_trials=5, multivariate=True, rejects=rejects)
    points = _points(_run(sampler, 60))
    assert refused and all(set(p) == {"x", "y"} for p in refused)  # Optuna's params of the candidates
    assert all(x + y <= 12 for x, y in points[5:])  # after the 5 random startup trials, none refused
    assert len(set(points)) == 60


def test_a_fit_serves_several_proposals_once_the_study_is_large(monkeypatch):
    fits = []
    original = optuna.samplers.TPESampler._sample

    def counting(self, study, trial, search_space):
        fits.append(trial.number)
        return original(self, study, trial, search_space)

    monkeypatch.setattr(optuna.samplers.TPESampler, "_sample", counting)
    monkeypatch.setattr(NewPointTPESampler, "REFIT_GROWTH", 0.1)
    points = _points(_run(NewPointTPESampler(seed=1, n_startup_trials=5, multivariate=True), 120))
    assert len(set(points)) == 120
    early = [n for n in fits if n < 20]
    assert early == list(range(5, 20))  # below 1 / REFIT_GROWTH trials: a fit per proposal
    late = [n for n in fits if n >= 60]
    assert len(late) < 60 / 2  # from 60 trials on, a fit serves int(0.1 * trials) >= 6 proposals at most
    assert all(b - a <= int(0.1 * a) for a, b in itertools.pairwise(late))


@pytest.mark.parametrize("kernel", ["hgemm", "scan", "batched-scan", "sort", "topk"])
def test_the_kernels_check_refuses_what_evaluate_refuses_for_the_same_reason(kernel):
    """check() is evaluate()'s first step: a configuration it refuses is refused by evaluate with the same
    reason (and for HGEMM, whose check covers every buffer, one it accepts is accepted)."""
    tunable, space = get_tunable(kernel), load_space(space_path(kernel))
    problems = {"hgemm": [{"m": 2048, "n": 128, "k": 2048, "batch": 1}, {"m": 16, "n": 4096, "k": 4096, "batch": 1}],
                "scan": [{"n": 10**5, "dtype": "fp16"}, {"n": 10**5, "dtype": "int8"}],
                "batched-scan": [{"batch": 64, "length": 1024, "dtype": "fp16"},
                                 {"batch": 8, "length": 4096, "dtype": "int8"}]}
    grid = space.grid()
    points = random.Random(0).sample(grid, min(len(grid), 24 if kernel == "scan" else 120))  # scans simulate slowly
    refused = 0
    for problem in problems.get(kernel) or _registry_problems(space)[:2]:
        for config in points:
            try:
                tunable.check(problem, config, HW)
                said = None
            except Infeasible as exc:
                said, refused = exc.reason, refused + 1
            try:
                tunable.evaluate(problem, config, HW)
                found = None
            except Infeasible as exc:
                found = exc.reason
            if said is not None or kernel == "hgemm":
                assert said == found, (problem, config)
    if kernel in ("hgemm", "scan"):
        assert refused > 0  # the sample has refused points: the comparison means something


def _registry_problems(space):
    return [dict(p) for problems in space.problem_sets.values() for p in problems.params] or [{}]


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_from_optuna_inverts_to_optuna_on_every_shipped_space(data):
    kernel = data.draw(st.sampled_from(["hgemm", "scan", "batched-scan", "sort", "topk", "topp", "sample"]))
    space = load_space(space_path(kernel))
    config = {name: data.draw(st.sampled_from(p.values()) if p.type != "int"
                              else st.integers(p.low, p.high).map(lambda v, p=p: v - (v - p.low) % p.step))
              for name, p in space.parameters.items()}
    assert space.from_optuna(space.to_optuna(config)) == config


def test_a_200_configuration_hgemm_study_spends_trials_only_on_new_feasible_points(tmp_path):
    req = TuneRequest("hgemm", space_path("hgemm"), "atlas-300t-a2", "tpe", 0, 200, exhaustive=False,
                      storage=str(tmp_path / "s.journal"))
    out = tune_problem(req, {"m": 2048, "n": 128, "k": 2048, "batch": 1})
    assert out.trials["evaluated"] == 200
    # the 5 random startup trials may not fit; TPE's own proposals are checked by the kernel first
    assert out.trials["infeasible"] <= 5 and out.trials["repeats"] <= 2
    assert out.trials["finished"] == out.trials["evaluated"] + out.trials["infeasible"] + out.trials["repeats"]


def test_each_trial_reaches_the_journal_as_it_finishes_and_its_fsyncs_are_grouped(tmp_path, monkeypatch):
    monkeypatch.setattr(study_module, "FSYNC_SECONDS", 3600.0)
    grouped_fsyncs = []
    original = study_module.JournalFile._fsync
    monkeypatch.setattr(study_module.JournalFile, "_fsync", lambda self, fh: (grouped_fsyncs.append(1), original(self, fh)))
    req = TuneRequest("hgemm", space_path("hgemm"), "atlas-300t-a2", "tpe", 0, 30, exhaustive=False,
                      storage=str(tmp_path / "s.journal"))
    stored = []

    def progress(stage, done, total, best):  # after each trial: what another process reading the journal sees
        reader = optuna.load_study(study_name=f"hgemm/atlas-300t-a2/{stage}", storage=study_module.open_storage(req.storage))
        stored.append(len(reader.get_trials(states=(TrialState.COMPLETE, TrialState.PRUNED))))

    out = tune_problem(req, {"m": 1024, "n": 1024, "k": 1024, "batch": 1}, progress=progress)
    # progress runs once before the first trial, then after every trial: each trial is in the file at once
    assert stored == list(range(out.trials["finished"] + 1)) and out.trials["finished"] >= 30
    # the new study's six records: one fsync at the first and one at the end of their group (six before, one a
    # record); the loop: one when it ends (its first append came within FSYNC_SECONDS of the last fsync)
    assert len(grouped_fsyncs) == 2 + 1


def test_journal_appends_outside_a_group_are_fsynced_each_as_optuna_does(tmp_path, monkeypatch):
    calls = []
    fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append(fd), fsync(fd))[1])
    storage = study_module.open_storage(str(tmp_path / "s.journal"))
    study = optuna.create_study(storage=storage, study_name="x")
    before = len(calls)
    study.set_user_attr("a", 1)
    assert len(calls) == before + 1
    with storage.file.grouped():
        for i in range(5):
            study.set_user_attr(f"b{i}", i)
        assert len(calls) == before + 2  # the first append of the group only (FSYNC_SECONDS is 1 s)
    assert len(calls) == before + 3  # and the group's end
    assert optuna.load_study(study_name="x", storage=study_module.open_storage(str(tmp_path / "s.journal"))).user_attrs == {
        "a": 1, **{f"b{i}": i for i in range(5)}}


def test_a_worker_pulls_another_workers_trial_and_writes_its_own_at_once(tmp_path):
    storage = study_module.open_storage(str(tmp_path / "s.journal"))
    shared = optuna.create_study(storage=storage, study_name="x")
    mirror = study_module._Mirror(shared, optuna.samplers.RandomSampler(seed=0), "run-a", frozenset({"a"}))
    other = optuna.create_study()
    for number in range(3):  # this worker's trials
        trial = mirror.local.ask()
        trial.suggest_int("a", 0, 9)
        trial.set_user_attr("config", {"a": number})
        trial.set_user_attr("run", "run-a")
        trial.set_user_attr("worker", study_module._WORKER)
        mirror.local.tell(trial, 1.0)
        mirror.finished(mirror.local.get_trials(deepcopy=False)[-1])
        pulled = mirror.flush()
        assert len(shared.trials) == number + 1 + (number > 0)  # its own trial at once
        assert [t.user_attrs["config"] for t in pulled] == ([{"a": 99}] if number == 1 else [])
        if number == 0:
            stranger = other.ask()
            stranger.suggest_int("a", 0, 9)
            stranger.set_user_attr("config", {"a": 99})
            stranger.set_user_attr("run", "run-b")
            other.tell(stranger, 2.0)
            shared.add_trials(other.get_trials())  # another worker's trial arrives
    assert {"a": 99} in [t.user_attrs["config"] for t in mirror.local.get_trials()]  # and is pulled here
    assert len(mirror.local.get_trials()) == 4 and mirror.feasible == {'{"a": 0}', '{"a": 1}', '{"a": 2}', '{"a": 99}'}


NEW_STUDY_RECORDS = 6  # a new study's journal records: the study, its four attributes, its metric name


def _stored_after_a_storage_error(tmp_path, message):
    """Tune 1024^3 (20 configurations) on a journal until the storage error the test arranged, which must reach
    the caller; the study as stored."""
    req = TuneRequest("hgemm", space_path("hgemm"), "atlas-300t-a2", "tpe", 0, 20, exhaustive=False,
                      storage=str(tmp_path / "s.journal"))
    with pytest.raises(OSError, match=message):
        tune_problem(req, {"m": 1024, "n": 1024, "k": 1024, "batch": 1})
    return optuna.load_study(study_name="hgemm/atlas-300t-a2/1024x1024x1024",
                             storage=study_module.open_storage(req.storage))


def test_a_storage_error_while_adding_a_trial_reaches_the_caller(tmp_path, monkeypatch):
    original = optuna.Study.add_trial
    calls = []

    def failing(self, trial):
        if isinstance(self._storage, optuna.storages.JournalStorage):
            calls.append(trial.number)
            if len(calls) > 3:
                raise OSError("No space left on device")
        return original(self, trial)

    monkeypatch.setattr(optuna.Study, "add_trial", failing)
    stored = _stored_after_a_storage_error(tmp_path, "No space left")
    assert len(stored.trials) == 3 and len(calls) == 4  # the trials added before the error are kept, none retried


def test_a_failed_fsync_does_not_store_a_trial_twice(tmp_path, monkeypatch):
    """The append is in the file when its fsync fails: the worker must not add the trial again as it stops."""
    monkeypatch.setattr(study_module, "FSYNC_SECONDS", 0.0)  # every append fsync'd
    synced = []
    original = study_module.JournalFile._fsync

    def failing(self, fh):
        synced.append(1)
        if len(synced) == NEW_STUDY_RECORDS + 6:  # the sixth trial's (the new study's records come first)
            raise OSError(5, "Input/output error")
        original(self, fh)

    monkeypatch.setattr(study_module.JournalFile, "_fsync", failing)
    stored = _stored_after_a_storage_error(tmp_path, "Input/output error")
    keys = [(t.user_attrs["config"], t.datetime_complete) for t in stored.trials]
    assert len(stored.trials) == 6 and all(keys.count(k) == 1 for k in keys)


def test_a_trial_another_process_finishes_after_it_was_seen_running_is_pulled(tmp_path):
    storage = study_module.open_storage(str(tmp_path / "s.journal"))
    shared = optuna.create_study(storage=storage, study_name="x")
    mirror = study_module._Mirror(shared, optuna.samplers.RandomSampler(seed=0), "run-a", frozenset({"a"}),
                                  storage.file)
    plain = optuna.load_study(study_name="x", storage=study_module.open_storage(str(tmp_path / "s.journal")))
    running = plain.ask()  # a plain Optuna process: its trial is RUNNING first
    running.suggest_int("a", 0, 9)
    running.set_user_attr("config", {"a": 7})
    assert mirror.pull() == []
    plain.tell(running, 3.0)
    assert [t.user_attrs["config"] for t in mirror.pull()] == [{"a": 7}]
    assert mirror.feasible == {'{"a": 7}'}


def test_tpe_tunes_around_parameters_with_one_value(tmp_path):
    """Optuna's TPE leaves one-value parameters out of its search space: the kernel's check still gets whole
    configurations (a KeyError at the first TPE proposal before)."""
    text = space_path("hgemm").read_text()
    text = text.replace('[parameters.double_buffer]\ntype = "bool"', '[parameters.double_buffer]\ntype = "categorical"\nchoices = [true]')
    text = text.replace('[parameters.split_k]\ntype = "log-int"\nlow = 1\nhigh = 8', '[parameters.split_k]\ntype = "log-int"\nlow = 1\nhigh = 1')
    (tmp_path / "fixed.toml").write_text(text)
    space = load_space(tmp_path / "fixed.toml")
    assert space.parameters["double_buffer"].count() == space.parameters["split_k"].count() == 1
    assert space.from_optuna({"m0_index": 0, "n0_index": 1, "log2_k0": 4, "shuffle_k": True, "padding": False}) == {
        "m0": 16, "n0": 32, "k0": 16, "split_k": 1, "shuffle_k": True, "padding": False, "double_buffer": True}
    req = TuneRequest("hgemm", tmp_path / "fixed.toml", "atlas-300t-a2", "tpe", 0, 30, exhaustive=False,
                      storage=str(tmp_path / "s.journal"))
    out = tune_problem(req, {"m": 1024, "n": 1024, "k": 1024, "batch": 1})
    assert out.trials["evaluated"] == 30 and out.trials["failed"] == 0


def test_workers_with_the_same_seed_on_one_study_do_not_propose_the_same_points(tmp_path):
    """Two commands run with the same --seed on one study (README's recipe for several machines) start with
    the same sampler seed: once one sees the other's trials, each must draw its own points. The workers run
    in lock-step here (each waits for the other after every trial), where equal seeds propose equal points."""
    space = load_space(space_path("hgemm"))
    problem = {"m": 2048, "n": 512, "k": 1024, "batch": 1}
    key = get_tunable("hgemm").problem_key(problem)
    requests = [TuneRequest("hgemm", space.path, "atlas-300t-a2", "tpe", 0, 60, exhaustive=False,
                            storage=str(tmp_path / "s.journal"), study_name="same") for _ in range(2)]
    barrier, errors = threading.Barrier(2), []

    def lock_step(done, best):
        try:
            barrier.wait(timeout=10)
        except threading.BrokenBarrierError:  # the other worker has stopped
            pass

    def work(request):
        try:
            study_module._optimize(request, space, problem, key, 0, lock_step)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            barrier.abort()

    threads = [threading.Thread(target=work, args=(r,)) for r in requests]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    study = optuna.load_study(study_name=f"same/{key}", storage=study_module.open_storage(requests[0].storage))
    runs: dict[str, set[str]] = {}
    for t in study.get_trials(states=(TrialState.COMPLETE, TrialState.PRUNED)):
        if not t.user_attrs.get("repeat") and not t.user_attrs.get("heuristic"):
            runs.setdefault(study_module.config_key(t.user_attrs["config"]), set()).add(t.user_attrs["run"])
    assert {r.run_id for r in requests} <= set().union(*runs.values())  # both worked
    # configurations evaluated by both, before they saw each other's trials or by chance: 0-2 in 12 runs
    # (4-19 in 8 runs when both kept the seed)
    assert sum(len(v) > 1 for v in runs.values()) <= 3
