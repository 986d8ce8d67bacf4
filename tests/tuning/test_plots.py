"""`tune plot`'s figures in the project's style: times in µs, the space's own values, the heuristic and the true
optimum drawn, importance labelled for the time, no offset text or colliding ticks, nothing under 8 pt, and
the data drawn recorded for --json."""

import math

import matplotlib
import optuna
import pytest

from ascendbench.plotting import MIN_FONT_PT
from ascendbench.tuning.space import load_space
from tests.tuning.test_report import SPACE

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

CLOSE = plt.close  # the tests keep figures open while they look at them


@pytest.fixture
def study_and_space(tmp_path):
    """An in-memory study of 16 configurations of the small space (times 10 + i µs, the 6th fastest)."""
    (tmp_path / "small.toml").write_text(SPACE)
    space = load_space(tmp_path / "small.toml")
    configs = space.grid()[:16]
    optuna_grid = space.optuna_grid()
    distributions = {n: optuna.distributions.CategoricalDistribution(v) for n, v in optuna_grid.items()}
    times = [(10 + i) * 1e-6 for i in range(16)]
    times[5] = 8e-6
    study = optuna.create_study(direction="minimize")
    study.add_trials([optuna.trial.create_trial(params=space.to_optuna(c), distributions=distributions, value=t,
                                                user_attrs={"config": c}) for c, t in zip(configs, times)])
    return study, space, configs, times


def _draw(tmp_path, study, space, problem, monkeypatch):
    """plot_study with the figures kept open (for inspection) instead of written; returns (figures, record)."""
    from ascendbench.tuning import plots

    kept = {}

    def keep(figure, stem, formats, write, dpi):
        kept[stem.name.rsplit("-", 1)[1]] = figure
        return [stem.with_suffix(".png")]

    monkeypatch.setattr(plots, "save_formats", keep)
    monkeypatch.setattr(plt, "close", lambda figure=None: None)
    record = []
    plots.plot_study(study, "1024x256x512", space, tmp_path, ["png"], None, config_names=list(space.parameters),
                     problem=problem, record=record)
    return kept, record


def _texts(figure):
    figure.canvas.draw()
    return [t for t in figure.findobj(matplotlib.text.Text) if t.get_visible() and t.get_text().strip()]


def test_without_a_results_history_the_figures_are_still_ours_in_microseconds(tmp_path, study_and_space,
                                                                             monkeypatch):
    study, space, configs, times = study_and_space
    heuristic = {"config": configs[3], "time_s": times[3]}
    optimum = {"config": configs[5], "time_s": 8e-6}
    kept, record = _draw(tmp_path, study, space, {"heuristic": heuristic, "exhaustive": {"optimum": optimum}},
                         monkeypatch)
    try:
        assert set(kept) == {"history", "importance", "parallel"}
        ax = kept["history"].axes[0]
        assert ax.get_ylabel() == "best simulated time so far (µs)"
        best = [min(times[:i + 1]) * 1e6 for i in range(16)]
        assert list(ax.lines[0].get_ydata()) == pytest.approx(best)
        legend = [t.get_text() for t in ax.get_legend().get_texts()]
        assert legend[:3] == ["best so far (search)", "heuristic 13.0 µs", "true optimum 8.0 µs"]
        assert "Best Value" not in legend
        imp = kept["importance"].axes[0]
        assert imp.get_xlabel().startswith("importance for the simulated time") and "time_s" not in imp.get_xlabel()
        par = kept["parallel"].axes[0]
        labels = {line.get_label(): line for line in par.lines}
        assert {"fastest found 8.0 µs", "heuristic 13.0 µs", "true optimum 8.0 µs"} <= set(labels)
        assert par.yaxis.get_offset_text().get_text() == "" and par.get_yticks().size == 0
        # the space's own values on the axes (tile sizes, not indices or exponents), no tick colliding
        values = {t.get_text() for t in par.texts}
        assert {"64", "128", "256"} <= values
        ticks = [t.get_window_extent() for t in par.get_xticklabels()]
        assert all(a.x1 <= b.x0 for a, b in zip(ticks, ticks[1:]))
        for figure in kept.values():
            assert [t.get_text() for t in _texts(figure) if t.get_fontsize() < MIN_FONT_PT] == []
        # what --json prints: the drawn data
        data = {r["figure"].rsplit("-", 1)[1]: r["data"] for r in record}
        assert data["history"]["best_so_far"] == pytest.approx(best) and data["history"]["unit"] == "µs"
        assert data["history"]["heuristic"] == pytest.approx(13.0) and data["history"]["optimum"] == pytest.approx(8.0)
        assert data["parallel"]["fastest"] == {"config": configs[5], "time_us": pytest.approx(8.0)}
        assert [c["config"] for c in data["parallel"]["configs"]] == configs
        assert set(data["importance"]["importance"]) and data["importance"]["method"] == "PED-ANOVA"
    finally:
        for figure in kept.values():
            CLOSE(figure)


def test_parallel_time_axis_spans_the_optimum_so_each_reference_line_sits_at_its_own_time(tmp_path,
                                                                                         study_and_space,
                                                                                         monkeypatch):
    study, space, configs, times = study_and_space
    # an optimum the search did not find (6 µs, below the fastest found 8 µs) and a heuristic among the trials
    unseen = space.grid()[-1]
    assert unseen not in configs
    problem = {"heuristic": {"config": configs[3], "time_s": times[3]},
               "exhaustive": {"optimum": {"config": unseen, "time_s": 6e-6}}}
    kept, record = _draw(tmp_path, study, space, problem, monkeypatch)
    try:
        figure = kept["parallel"]
        par = figure.axes[0]
        lines = {line.get_label(): line for line in par.lines}
        optimum, fastest = lines["true optimum 6.0 µs"], lines["fastest found 8.0 µs"]
        heuristic = lines["heuristic 13.0 µs"]
        y_opt, y_fast, y_heur = (line.get_ydata()[-1] for line in (optimum, fastest, heuristic))
        assert y_opt == pytest.approx(0.0) and y_opt < y_fast < y_heur  # the optimum at the axis' bottom
        # on the log time axis from 6 to 25 µs (the slowest trial)
        assert y_fast == pytest.approx(math.log(8 / 6) / math.log(25 / 6))
        # a colour bar in µs for the lines' colours; no line in a colour too pale to see on white
        (bar,) = [ax for ax in figure.axes if ax is not par]
        assert "µs" in bar.get_ylabel()
        pale = [line.get_label() for line in par.lines
                if sum(w * c for w, c in zip((0.2126, 0.7152, 0.0722), matplotlib.colors.to_rgb(line.get_color())))
                > 0.8]
        assert pale == []
        data = {r["figure"].rsplit("-", 1)[1]: r["data"] for r in record}["parallel"]
        assert data["optimum"]["time_us"] == pytest.approx(6.0) and data["fastest"]["time_us"] == pytest.approx(8.0)
    finally:
        for figure in kept.values():
            CLOSE(figure)
