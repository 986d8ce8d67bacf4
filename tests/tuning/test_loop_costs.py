"""What the tuning loop and its report avoid paying twice: the grid importance kept with the ground truth, the
user attributes written once per trial, and an automatic whole grid announced with its estimate."""

import json

import optuna

from ascendbench.tuning import study as study_module
from ascendbench.tuning.space import load_space
from ascendbench.tuning.study import ground_truth_path, open_storage, tune_problem

from . import test_study
from .test_study import PROBLEM

small_space = test_study.small_space  # the fixture: a 24-point HGEMM space


def _request(tmp_path, space, **kw):
    return test_study.request(tmp_path, space, **{"trials": 4, "sampler": "random", **kw})


def test_grid_importance_is_kept_with_the_ground_truth_and_read_back(tmp_path, small_space, monkeypatch):
    req = _request(tmp_path, small_space, exhaustive=True)
    first = tune_problem(req, PROBLEM).exhaustive
    space = load_space(small_space)
    path = ground_truth_path(req, space, PROBLEM)
    doc = json.loads(path.read_text())
    feasible = [(c, t) for c, t in doc["grid"] if t is not None]
    assert len(feasible) >= 10  # enough for an importance
    expected = study_module.grid_importance(feasible, space)
    assert expected and first["importance"] == expected
    assert doc["importance"] == {"method": f"PED-ANOVA, Optuna {optuna.__version__}", "values": expected}

    def not_again(*_args):
        raise AssertionError("the kept importance is computed again")

    monkeypatch.setattr(study_module, "grid_importance", not_again)
    again = tune_problem(req, PROBLEM).exhaustive
    assert again["source"] == "store" and again["importance"] == expected and again["kept"] is True
    # a ground truth kept before (no importance in it) or by another Optuna gets it computed and kept
    monkeypatch.undo()
    for old in ({k: v for k, v in doc.items() if k != "importance"},
                {**doc, "importance": {"method": "PED-ANOVA, Optuna 0.1", "values": {"m0": 1.0}}}):
        path.write_text(json.dumps(old))
        third = tune_problem(req, PROBLEM).exhaustive
        assert third["source"] == "store" and third["importance"] == expected
        assert json.loads(path.read_text())["importance"]["values"] == expected


def test_an_automatic_grid_is_announced_with_its_estimate(tmp_path, small_space, monkeypatch):
    # the automatic decision on a large grid (timed sample under a minute): faked on the small space
    monkeypatch.setattr(study_module, "_exhaustive_wanted", lambda *a, **k: (True, None, 12.3))
    monkeypatch.setattr(study_module, "IMPORTANCE_SHOWN_POINTS", 1)
    stages = []
    out = tune_problem(_request(tmp_path, small_space, exhaustive=None), PROBLEM,
                       progress=lambda stage, done, total, best: stages.append((stage, done, total)))
    key, cores = out.key, study_module.grid_processes(_request(tmp_path, small_space))
    stage = f"{key}: whole grid, 24 points, about 12 s if {cores} cores are free"
    grid = [(d, t) for s, d, t in stages if s == stage]
    # first the points the evaluation store held (the search's), then the rest
    assert grid[0] == (out.exhaustive["grid_cost"]["replayed"], 24) and grid[0][0] < 24 and grid[-1] == (24, 24)
    assert stages[-1] == (f"{key}: whole grid: parameter importance", 24, 24)
    assert out.exhaustive["source"] == "evaluated" and out.exhaustive["importance"]


def test_trials_keep_every_user_attribute_in_the_storage(tmp_path, small_space):
    # the in-memory study the sampler reads holds only the configuration (and the repeat mark); the storage's
    # copy of each trial has them all, in the order Optuna kept before: enqueue_trial's first
    req = _request(tmp_path, small_space, exhaustive=False, trials=5, sampler="tpe")
    out = tune_problem(req, PROBLEM)
    trials = optuna.load_study(study_name=out.study_name, storage=open_storage(req.storage)).get_trials()
    names = list(load_space(small_space).parameters)
    assert len(trials) == out.trials["finished"] >= 5
    for t in trials:
        config = t.user_attrs["config"]
        last = ["throughput"] if t.state == optuna.trial.TrialState.COMPLETE else ["infeasible"]
        head = ["heuristic"] if t.number == 0 else []
        assert list(t.user_attrs) == head + names + ["config", "run", "worker"] + last
        assert {n: t.user_attrs[n] for n in names} == config and t.user_attrs["run"] == req.run_id


def test_workers_progress_counts_what_the_study_holds(tmp_path, small_space):
    # the parent of --jobs workers keeps the counts as trials arrive instead of keying every trial each 0.3 s
    req = _request(tmp_path, small_space, exhaustive=False, trials=6, jobs=2)
    shown = []
    out = tune_problem(req, PROBLEM, progress=lambda stage, done, total, best: shown.append((stage, done, best)))
    study = optuna.load_study(study_name=out.study_name, storage=open_storage(req.storage))
    feasible, _ = study_module.distinct_counts(study, load_space(small_space))
    progress = study_module._StudyProgress(study_module._names(load_space(small_space)))
    assert progress.update(study) == feasible == out.trials["evaluated"]
    assert progress.best == min(t.value for t in study.get_trials(states=(optuna.trial.TrialState.COMPLETE,)))
    assert progress.update(study) == feasible  # nothing counted twice
    searched = [(done, best) for stage, done, best in shown if stage == out.key]
    assert all(a[0] <= b[0] for a, b in zip(searched, searched[1:]))  # never goes back
    assert searched[-1][0] <= feasible and all(best is None or best >= progress.best for _, best in searched)
