"""What a tuning report tells a kernel engineer, checked on a small space whose whole grid is evaluated here
independently: configurations within 1% of the optimum, the top ranks with ties, the grid-based importance,
the deployable command (run and timed again), the cost split, and the evaluation store's replays."""

import json
import os
import sqlite3

import pytest
from typer.testing import CliRunner

from ascendbench.cli import app
from ascendbench.hardware import load_profile
from ascendbench.kernels.registry import get_tunable
from ascendbench.kernels.tunable import Evaluation, Infeasible
from ascendbench.tuning.evaluations import EvaluationStore, problem_digest
from ascendbench.tuning.space import load_space
from ascendbench.tuning.study import (
    TOP_RANKS,
    config_key,
    evaluate_grid,
    open_evaluation_store,
    tune_problem,
)
from tests.tuning.test_study import SMALL_SPACE
from tests.tuning.test_study import request as study_request

HW = "atlas-300t-a2"
PROBLEM = {"m": 1024, "n": 256, "k": 512, "batch": 1}
# test_study's small space with SplitK 1 or 2 and padding on or off: 3 x 2 x 4 x 2 x 2 = 96 points, small
# enough to be evaluated whole (automatically) and here again
SPACE = SMALL_SPACE.replace("choices = [1]\ndefault = 1", "choices = [1, 2]\ndefault = 1").replace(
    "[parameters.padding]\ntype = \"categorical\"\nchoices = [true]",
    "[parameters.padding]\ntype = \"categorical\"\nchoices = [true, false]")
assert SPACE.count("[1, 2]") == 1 and SPACE.count("[true, false]") == 1


@pytest.fixture
def space_file(tmp_path):
    (tmp_path / "small.toml").write_text(SPACE)
    return tmp_path / "small.toml"


def request(tmp_path, space_file, **kw):
    return study_request(tmp_path, space_file, **{"trials": 12, **kw})


def brute_force(space_file):
    """Every grid point's time (None: infeasible), evaluated directly with the kernel's tunable."""
    space, tunable, hw = load_space(space_file), get_tunable("hgemm"), load_profile(HW)
    out = []
    for config in space.grid():
        try:
            out.append((config, tunable.evaluate(PROBLEM, config, hw).time_s))
        except Infeasible:
            out.append((config, None))
    return out


def test_within_1pct_and_the_top_ranks_with_ties_match_the_grid(tmp_path, space_file):
    out = tune_problem(request(tmp_path, space_file), PROBLEM)
    grid = brute_force(space_file)
    times = sorted(t for _, t in grid if t is not None)
    ex = out.exhaustive
    assert ex["points"] == 96 and ex["feasible"] == len(times)
    assert ex["within_1pct"] == sum(1 for t in times if t <= times[0] * 1.01)
    # the rank of a time: 1 + the points strictly faster, so that equal times share a rank
    expected = sorted(((1 + sum(1 for u in times if u < t * (1 - 1e-9)), config_key(c)) for c, t in grid
                       if t is not None), key=lambda rc: rc[0])
    expected = [rc for rc in expected if rc[0] <= TOP_RANKS]
    got = [(row["rank"], config_key(row["config"])) for row in ex["top"]]
    assert sorted(got) == sorted(expected) and ex["top_left_out"] == 0
    # padding on / off gives equal times on this aligned shape: every rank of the top is shared by two
    ranks = [r for r, _ in got]
    assert all(ranks.count(r) >= 2 for r in set(ranks))
    assert [row["time_s"] for row in ex["top"]] == sorted(row["time_s"] for row in ex["top"])


def test_importance_is_computed_over_the_grid_when_the_grid_is_known(tmp_path, space_file):
    out = tune_problem(request(tmp_path, space_file), PROBLEM)
    assert out.importance_source == "grid" and out.importance == out.exhaustive["importance"]
    assert set(out.importance) == {"m0", "n0", "k0", "split_k", "shuffle_k", "padding", "double_buffer"}
    assert sum(out.importance.values()) == pytest.approx(1.0)
    # one value (shuffle_k, double_buffer) or no effect on the time (padding, on this aligned shape): nothing
    assert all(out.importance[name] < 1e-6 for name in ("shuffle_k", "double_buffer", "padding"))
    without = tune_problem(request(tmp_path / "b", space_file, exhaustive=False, storage=str(tmp_path / "b.j")),
                           PROBLEM)
    assert without.exhaustive is None and without.importance_source == "study"


def test_the_cost_split_adds_up_and_counts_every_evaluation(tmp_path, space_file):
    out = tune_problem(request(tmp_path, space_file), PROBLEM)
    cost = out.cost
    parts = ("model_s", "check_s", "sampler_s", "replay_s", "storage_s", "other_s")
    assert all(cost[p] >= 0 for p in parts)
    assert sum(cost[p] for p in parts) == pytest.approx(cost["wall_s"], rel=1e-9)
    assert cost["model_s"] > 0 and cost["sampler_s"] > 0 and cost["storage_s"] > 0
    # a new store: every distinct configuration of this run was simulated once, none replayed
    assert cost["replayed"] == 0 and out.trials["replayed"] == 0
    assert cost["simulated"] == out.trials["distinct"]


def test_a_second_search_replays_what_the_first_simulated(tmp_path, space_file):
    first = tune_problem(request(tmp_path, space_file, exhaustive=False), PROBLEM)
    second = tune_problem(request(tmp_path, space_file, exhaustive=False, study_name="again", seed=7), PROBLEM)
    # the first run's configurations are in the store: the second simulates only what the first did not see
    store = open_evaluation_store(request(tmp_path, space_file), PROBLEM)
    try:
        assert len(store.rows) == first.cost["simulated"] + second.cost["simulated"]
    finally:
        store.close()
    assert second.cost["replayed"] == second.trials["replayed"] > 0
    assert second.cost["replayed"] + second.cost["simulated"] == second.trials["distinct"]
    # replayed values are the simulated ones
    hw, tunable = load_profile(HW), get_tunable("hgemm")
    assert second.best["time_s"] == tunable.evaluate(PROBLEM, second.best["config"], hw).time_s
    off = tune_problem(request(tmp_path, space_file, exhaustive=False, study_name="fresh", replay=False), PROBLEM)
    assert off.cost["replayed"] == 0 and off.cost["simulated"] == off.trials["distinct"]


def test_the_whole_grid_is_replayed_from_the_store(tmp_path, space_file):
    req = request(tmp_path, space_file)
    space = load_space(space_file).on(load_profile(HW))
    first, again = {}, {}
    grid = evaluate_grid(req, space, PROBLEM, stats=first)
    assert grid == evaluate_grid(req, space, PROBLEM, stats=again)
    assert first["simulated"] == 96 and first["replayed"] == 0
    assert again["simulated"] == 0 and again["replayed"] == 96
    assert [t for _, t in grid] == [t for _, t in brute_force(space_file)]


def test_the_store_keys_problems_by_profile_constants(tmp_path):
    hw = load_profile(HW)
    assert problem_digest("hgemm", PROBLEM, hw) != problem_digest("hgemm", PROBLEM, hw.replace(hbm_bandwidth_gbps=hw.hbm_bandwidth_gbps * 1.01))
    assert problem_digest("hgemm", PROBLEM, hw) != problem_digest("hgemm", {**PROBLEM, "k": 1024}, hw)
    path = tmp_path / "e.sqlite"
    store = EvaluationStore(path, "p", "TFLOPS")
    store.put_many([("a", Evaluation(1e-5, 2.0, "TFLOPS")), ("b", "L0A overflows")])
    store.close()
    again = EvaluationStore(path, "p", "TFLOPS")
    assert again.get("a") == Evaluation(1e-5, 2.0, "TFLOPS") and again.get("b") == "L0A overflows"
    assert EvaluationStore(path, "other problem", "TFLOPS").rows == {}
    again.close()


def test_a_store_that_cannot_be_made_is_skipped_and_said(tmp_path, space_file, monkeypatch):
    # an RDB storage keeps its evaluations under results/tuning: here `results` is a file, so no folder
    work = tmp_path / "work"
    work.mkdir()
    (work / "results").write_text("in the way")
    monkeypatch.chdir(work)
    out = tune_problem(request(tmp_path, space_file, exhaustive=False,
                               storage=f"sqlite:///{tmp_path / 'db.sqlite'}"), PROBLEM)
    assert out.trials["evaluated"] == 12 and out.cost["simulated"] == out.trials["distinct"]
    assert "evaluations.sqlite" in out.cost["store_error"]
    assert (work / "results").read_text() == "in the way"


def test_a_file_that_is_no_database_is_skipped_and_said(tmp_path, space_file):
    (tmp_path / "evaluations.sqlite").write_bytes(b"not a database, " * 100)
    out = tune_problem(request(tmp_path, space_file, exhaustive=False), PROBLEM)
    assert out.trials["evaluated"] == 12 and out.cost["simulated"] == out.trials["distinct"]
    assert "evaluations.sqlite" in out.cost["store_error"]
    with pytest.raises(sqlite3.DatabaseError):  # left as it was: not ours to delete
        sqlite3.connect(tmp_path / "evaluations.sqlite").execute("SELECT * FROM evaluations")


def _simulated_time(doc):
    if "shapes" in doc:  # run hgemm
        return doc["shapes"][0]["time_s"]
    return doc["simulated"]["time_s"] if "simulated" in doc else doc["metrics"]["time_s"]


def test_the_deployable_command_runs_the_best_configuration(tmp_path, space_file):
    doc = _cli(tmp_path, ["tune", "hgemm", "--m", "1024", "--n", "256", "--k", "512", "--space", str(space_file),
                          "--trials", "12", "--storage", "s.journal", "--json", "--no-save"])
    problem = doc["problems"][0]
    deploy = problem["deploy"]
    assert deploy["command"][0] == "ascendbench" and deploy["fragment"]["config"] == problem["best"]["config"]
    ran = _cli(tmp_path, [*deploy["command"][1:], "--no-save", "--json"])
    assert _simulated_time(ran) == pytest.approx(problem["best"]["time_s"], rel=1e-12)


@pytest.mark.parametrize("kernel, problem, config", [
    ("scan", {"n": 300_000, "dtype": "fp16", "exclusive": True},
     {"algorithm": "mcscan", "s": 64, "blocks": 8, "chunk": "off"}),
    ("batched-scan", {"batch": 4, "length": 5000, "dtype": "fp16", "exclusive": False},
     {"algorithm": "scanul1", "s": 64}),
    ("topp", {"vocab": 50_000, "batch": 2, "p": 0.9}, None),
    ("sort", {"n": 100_000, "descending": True}, None),
    ("sort", {"n": 100_000, "descending": False}, None),
])
def test_every_tunable_kernel_gives_a_command_that_reproduces_its_time(tmp_path, kernel, problem, config):
    tunable, hw = get_tunable(kernel), load_profile()
    if config is None:  # a registry kernel: the heuristic configuration
        config = tunable.heuristic(problem, hw)
    expected = tunable.evaluate(problem, config, hw).time_s
    doc = _cli(tmp_path, [*tunable.run_command(problem, config), "--hardware", hw.name, "--no-save", "--json"])
    assert _simulated_time(doc) == pytest.approx(expected, rel=1e-12)


def test_a_data_dependent_kernel_runs_with_the_tuned_options(tmp_path):
    # top-k's bisection rounds depend on the keys: the tuner times the data-free model (simulate without the
    # run's active sizes), so the run's time may differ; its options must still be the tuned ones
    tunable, hw = get_tunable("topk"), load_profile()
    problem = {"n": 100_000, "k": 100, "largest": False, "warm_l2": True}
    doc = _cli(tmp_path, [*tunable.run_command(problem, {"variant": "vector"}), "--hardware", hw.name, "--no-save",
                          "--json"])
    assert doc["problem"]["params"] == {"k": 100, "largest": False, "warm_l2": True}
    assert doc["simulated"]["variant"] == "vector"


def _cli(folder, argv):
    """The JSON document a command prints (run in `folder`), after checking it succeeded."""
    old = os.getcwd()
    os.chdir(folder)
    try:
        ran = CliRunner().invoke(app, argv)
    finally:
        os.chdir(old)
    assert ran.exit_code == 0, (argv, ran.output)
    return json.loads(ran.stdout)


def test_the_summary_says_how_often_the_search_beat_the_heuristic(tmp_path, space_file):
    doc = _cli(tmp_path, ["tune", "hgemm", "--m", "1024", "--n", "256", "--k", "512", "--space", str(space_file),
                          "--trials", "12", "--seeds", "2", "--storage", "s.journal", "--json", "--no-save"])
    summary, runs = doc["summary"], doc["problems"][0]["seeds"]["runs"]
    assert summary["searches"] == 2
    beat = [r["speedup"] for r in runs if r["speedup"] > 1 + 1e-6]
    assert summary["searches_beat_heuristic"] == len(beat) and summary["beat_rate"] == len(beat) / 2
    # the second seed replays the first seed's configurations
    assert summary["evaluations_replayed"] > 0
    cost = doc["problems"][0]["cost"]  # both seeds' searches
    assert cost["replayed"] == summary["evaluations_replayed"]
    assert cost["replayed"] + cost["simulated"] == sum(r["distinct"] for r in runs)
    # the counts of the summary are over both searches too
    assert summary["trials_finished"] == sum(r["finished"] for r in runs)
    assert summary["trials_evaluated"] == sum(r["evaluated"] for r in runs) == 24


def test_points_the_store_holds_cost_nothing_in_the_grid_estimate(tmp_path, space_file):
    from ascendbench.tuning.study import estimate_grid_seconds

    req = request(tmp_path, space_file)
    space = load_space(space_file).on(load_profile(HW))
    assert estimate_grid_seconds(req, space, PROBLEM) > 0
    evaluate_grid(req, space, PROBLEM)  # every point into the store
    assert estimate_grid_seconds(req, space, PROBLEM) == 0.0
    assert estimate_grid_seconds(request(tmp_path, space_file, replay=False), space, PROBLEM) > 0


def test_an_evaluation_another_process_added_is_found_in_the_file(tmp_path):
    path = tmp_path / "e.sqlite"
    reader = EvaluationStore(path, "p", "TFLOPS")
    writer = EvaluationStore(path, "p", "TFLOPS")  # another --jobs worker, opened at the same time
    writer.put("a", Evaluation(2e-5, 1.0, "TFLOPS"))
    assert "a" not in reader.rows and reader.get("a") == Evaluation(2e-5, 1.0, "TFLOPS")
    assert reader.get("b") is None
    reader.close()
    writer.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.sqlite"]  # no -wal or -shm left


def test_the_history_figure_counts_configurations_and_marks_the_heuristic_and_the_optimum(tmp_path, space_file):
    import matplotlib

    matplotlib.use("Agg")
    from ascendbench.tuning.plots import _history

    out = tune_problem(request(tmp_path, space_file), PROBLEM)
    problem = {"history": out.history, "heuristic": out.heuristic, "exhaustive": out.exhaustive}
    figure = _history(problem, out.key)
    ax = figure.axes[0]
    assert ax.get_yscale() == "log" and "configurations" in ax.get_xlabel() and "µs" in ax.get_ylabel()
    step = ax.lines[0]
    assert list(step.get_xdata()) == list(range(1, len(out.history) + 1))
    assert list(step.get_ydata()) == pytest.approx([t * 1e6 for t in out.history])
    levels = {round(line.get_ydata()[0], 6) for line in ax.lines[1:3]}
    assert levels == {round(out.heuristic["time_s"] * 1e6, 6), round(out.exhaustive["optimum"]["time_s"] * 1e6, 6)}
    band = ax.patches[0]  # the 1% band: optimum to 1.01 x optimum
    # axhspan draws a Polygon before matplotlib 3.9 and a Rectangle since: its corners in data coordinates
    corners = band.get_patch_transform().transform(band.get_path().vertices)
    low, high = corners[:, 1].min(), corners[:, 1].max()
    assert (low, high) == pytest.approx((out.exhaustive["optimum"]["time_s"] * 1e6,
                                         out.exhaustive["optimum"]["time_s"] * 1.01e6))


def test_a_write_that_fails_later_is_said_and_a_read_only_store_only_replays(tmp_path, monkeypatch):
    path = tmp_path / "e.sqlite"
    store = EvaluationStore(path, "p", "TFLOPS")
    store.put("a", Evaluation(1e-5, 1.0, "TFLOPS"))
    store._db.close()
    store._db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)  # as if made read-only since
    store.put("b", Evaluation(2e-5, 1.0, "TFLOPS"))
    assert not store.available and "e.sqlite" in store.error and store.get("b") is None
    import ascendbench.tuning.evaluations as evaluations

    folder = tmp_path / "ro"
    folder.mkdir()
    kept = EvaluationStore(folder / "e.sqlite", "p", "TFLOPS")
    kept.put("a", Evaluation(1e-5, 1.0, "TFLOPS"))
    kept.close()
    monkeypatch.setattr(evaluations.os, "access", lambda *_: False)  # a file this user may not write
    read_only = EvaluationStore(folder / "e.sqlite", "p", "TFLOPS")
    assert read_only.get("a") == Evaluation(1e-5, 1.0, "TFLOPS") and "not writable" in read_only.error
    read_only.put("c", Evaluation(3e-5, 1.0, "TFLOPS"))
    assert read_only.get("c") is None
    read_only.close()
    assert sorted(p.name for p in folder.iterdir()) == ["e.sqlite"]  # no -wal or -shm made beside it


def test_a_renamed_profile_is_kept_apart_and_a_data_dependent_kernel_says_so(tmp_path):
    hw = load_profile(HW)
    assert problem_digest("hgemm", PROBLEM, hw) != problem_digest("hgemm", PROBLEM, hw.replace(name="my-chip"))
    from ascendbench.tuning.study import deployment

    assert deployment("topk", {"n": 10**6, "k": 64}, {"variant": "bisection"}, "ascend-910b4")["note"]
    assert deployment("topk", {"n": 10**6, "k": 64}, {"variant": "vector"}, "ascend-910b4")["note"] is None
    assert deployment("hgemm", PROBLEM, get_tunable("hgemm").heuristic(PROBLEM, hw), HW)["note"] is None


def test_the_parallel_coordinates_list_parameters_by_importance_and_draw_the_fastest_in_bold(space_file):
    import matplotlib
    import optuna

    matplotlib.use("Agg")
    from ascendbench.tuning.plots import _parallel

    space = load_space(space_file)
    configs = [dict(c, m0=m0, k0=k0) for c in space.grid()[:1] for m0 in (64, 128, 256) for k0 in (64, 128, 256, 512)]
    trials = [optuna.trial.create_trial(value=(1 + i) * 1e-6, params={}, distributions={},
                                        user_attrs={"config": c}) for i, c in enumerate(configs)]
    figure = _parallel(trials, space, "key", {"m0": 0.2, "k0": 0.7}, None)
    ax = figure.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["k0", "m0", "time (µs)"]  # only what varies
    bold = max(ax.lines, key=lambda line: line.get_linewidth())
    assert "fastest found 1.0 µs" in bold.get_label()
    # the fastest (m0 64, k0 64): the bottom of both grids, and the bottom of the time axis
    assert list(bold.get_ydata()) == [0.0, 0.0, 0.0]


def test_many_ties_are_counted_not_listed_in_the_text():
    from ascendbench.commands.tune import _top_text

    config = {"m0": 128, "n0": 64, "k0": 32, "split_k": 1, "shuffle_k": True, "padding": True, "double_buffer": True}
    top = [{"rank": 1, "config": dict(config, k0=8 * (i + 1)), "time_s": 1e-5} for i in range(50)]
    text = _top_text("hgemm", {"top": top, "top_left_out": 7})
    assert text == "rank 1 (10.00 µs): 57 configurations: 128x64x8, 128x64x16, 128x64x24 and 54 more"
    two = _top_text("hgemm", {"top": top[:2] + [{"rank": 3, "config": config, "time_s": 2e-5}], "top_left_out": 0})
    assert two == "rank 1 (10.00 µs): 128x64x8, 128x64x16; rank 3 (20.00 µs): 128x64x32"


def test_the_grid_stores_the_kernels_reason_for_the_points_its_check_refuses(tmp_path, space_file):
    # the feasible set is enumerated once with the kernel's check; what it refuses is kept with the reason
    # that evaluating the point gives
    req = request(tmp_path, space_file)
    space = load_space(space_file).on(load_profile(HW))
    grid = evaluate_grid(req, space, PROBLEM)
    tunable, hw = get_tunable("hgemm"), load_profile(HW)
    refused = [c for c, t in grid if t is None]
    assert 0 < len(refused) < len(grid)
    store = open_evaluation_store(req, PROBLEM)
    try:
        for config in refused:
            with pytest.raises(Infeasible) as info:
                tunable.evaluate(PROBLEM, config, hw)
            assert store.rows[config_key(config)] == info.value.reason
    finally:
        store.close()
