"""Figures of tuning studies: what a search found and what mattered, in the project's style (plotting.STYLE,
as `reproduce` draws; times in µs, the space's own values).

Per problem (one study): the best-so-far history with the heuristic and the true optimum as reference lines,
the parameters' importance (PED-ANOVA, as the report gives it) and parallel coordinates of the feasible trials;
searched with several seeds, each seed's best so far. Per tuning result with several problems: tuned against
heuristic time per problem (and the true optimum where the ground truth is known). Each plot function appends
what it drew to `record` when given one: {"figure": name, "files": [paths], "data": {...}} (`tune plot --json`).
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any

import optuna

from ascendbench.plotting import DEFAULT_DPI, FORMATS, save_formats, style
from ascendbench.tuning.space import SearchSpace
from ascendbench.tuning.study import is_tool_trial

__all__ = ["FORMATS", "plot_seeds", "plot_study", "plot_workload"]


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.=-]+", "_", text).strip("_")


def plot_study(study: optuna.Study, key: str, space: SearchSpace | None, folder: Path, formats: Sequence[str],
               write: Callable[[Path, Callable[[Path], None]], None], dpi: int = DEFAULT_DPI, *,
               config_names: Collection[str], problem: dict[str, Any] | None = None,
               record: list[dict[str, Any]] | None = None) -> list[Path]:
    """History, importance and parallel coordinates of one study, as <folder>/<key>-<kind>.<format>.
    `space`: the study's search space, whose own values the parallel coordinates show (tile sizes, not the
    indices and base-2 exponents Optuna searched) and whose names label the importance (k0 (log2_k0)); None
    (its file is gone): Optuna's parameters as they are. `dpi` is the resolution of PNGs. `config_names`: the
    parameter names of this tool's configurations (the space's; trials of plain Optuna in the study are left
    out: is_tool_trial). `problem`: the problem's entry of the tuning result, when there is one: the history is
    then drawn in distinct configurations (the unit of --trials) with the heuristic, the true optimum and its
    1% band, and the importance is the result's (over the whole grid where it was known). Returns the paths written; importance and parallel coordinates are
    left out with fewer than 10 feasible trials."""
    import matplotlib

    matplotlib.use("Agg")
    with style():
        return _plot_study(study, key, space, folder, formats, write, dpi, config_names, problem, record)


def _plot_study(study, key, space, folder, formats, write, dpi, config_names, problem, record) -> list[Path]:
    from optuna.visualization import matplotlib as ov

    study = _own_trials(study, frozenset(config_names))
    complete = [t for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
                if not t.user_attrs.get("repeat")]
    names = {p.optuna_name(n): n for n, p in space.parameters.items()} if space else {}
    stem = folder / _slug(key)
    written: list[Path] = []
    with warnings.catch_warnings():  # Optuna's matplotlib plots are marked experimental
        warnings.simplefilter("ignore")
        if not complete:
            return written
        shown = dict(problem or {})
        if not shown.get("history"):  # no result's history: best so far over the study's trials
            best, history = math.inf, []
            for t in sorted(complete, key=lambda t: t.number):
                best = min(best, t.value)
                history.append(best)
            shown["history"] = history
        figure = _history(shown, key)
        written += _save(figure, stem.with_name(stem.name + "-history"), formats, write, dpi, record,
                         _history_data(shown))
        if len(complete) >= 10:
            ranked = (problem or {}).get("importance")
            source = (problem or {}).get("importance_source")
            if not ranked:
                importance = optuna.importance.get_param_importances(
                    study, evaluator=optuna.importance.PedAnovaImportanceEvaluator())
                ranked, source = {_label(n, names): float(v) for n, v in importance.items()}, "trials"
            figure = _importance(ranked, source, key)
            written += _save(figure, stem.with_name(stem.name + "-importance"), formats, write, dpi, record,
                             {"kind": "importance", "method": "PED-ANOVA", "source": source, "importance": ranked})
            if space is not None:
                data: dict[str, Any] = {}
                figure = _parallel(complete, space, key, ranked or {}, (problem or {}).get("heuristic"),
                                   ((problem or {}).get("exhaustive") or {}).get("optimum"), data)
            else:
                ax = ov.plot_parallel_coordinate(study, target_name="simulated time (s)")
                ax.set_title(f"{key}: feasible trials (tile sizes as Optuna searched them)", y=1.03)
                figure = ax.figure
                data = {"kind": "parallel", "parameters": "as Optuna searched them (the space file is gone)",
                        "trials": [{"params": t.params, "time_us": t.value * 1e6} for t in complete]}
            written += _save(figure, stem.with_name(stem.name + "-parallel"), formats, write, dpi, record, data)
    return written


def _save(figure, stem: Path, formats, write, dpi, record, data: dict[str, Any]) -> list[Path]:
    """Save and close `figure`; append what it shows to `record` (when given)."""
    import matplotlib.pyplot as plt

    try:
        paths = save_formats(figure, stem, formats, write, dpi)
    finally:
        plt.close(figure)
    if record is not None:
        record.append({"figure": stem.name, "files": [str(p) for p in paths], "data": data})
    return paths


def _history_data(problem: dict[str, Any]) -> dict[str, Any]:
    exhaustive = problem.get("exhaustive") or {}
    heuristic = (problem.get("heuristic") or {}).get("time_s")
    optimum = (exhaustive.get("optimum") or {}).get("time_s")
    return {"kind": "history", "unit": "µs", "x": list(range(1, len(problem["history"]) + 1)),
            "best_so_far": [t * 1e6 for t in problem["history"]],
            "heuristic": heuristic * 1e6 if heuristic else None, "optimum": optimum * 1e6 if optimum else None,
            "within_1pct_after": exhaustive.get("trials_to_1pct")}


def _truncated_viridis():
    """viridis reversed and without its pale yellow end (fast = green, slow = dark violet): every line shows
    on white."""
    import matplotlib
    import numpy as np
    from matplotlib.colors import ListedColormap

    return ListedColormap(matplotlib.colormaps["viridis"](np.linspace(0.78, 0.0, 256)), name="viridis_r_trunc")


def _parallel(trials: Sequence[optuna.trial.FrozenTrial], space: SearchSpace, key: str,
              importance: dict[str, float], heuristic: dict[str, Any] | None,
              optimum: dict[str, Any] | None = None, data: dict[str, Any] | None = None):
    """Parallel coordinates of the feasible configurations in the space's own values: one axis per parameter
    that varies among them, the most important first (the result's importance), each value of its grid at an
    even step (powers of 2 read as a log axis), then the simulated time (µs); lines coloured by time, the
    fastest configuration drawn over the others in bold, the heuristic's dashed black and the true optimum
    (`optimum`: {"config", "time_s"}, when the grid was known) dotted. `data`, when given, is filled with
    what is drawn."""
    import matplotlib.pyplot as plt
    from matplotlib import cm, colors, ticker

    configs = [(t.user_attrs["config"], t.value * 1e6) for t in trials]
    names = [n for n in space.parameters if len({repr(c[n]) for c, _ in configs}) > 1]
    names.sort(key=lambda n: -importance.get(n, 0.0))
    grids = {n: space.parameters[n].values() for n in names}

    def position(name: str, value: Any) -> float:
        grid = grids[name]
        index = next((i for i, v in enumerate(grid) if v == value and type(v) is type(value)), None)
        return 0.5 if len(grid) < 2 or index is None else index / (len(grid) - 1)

    # the time axis spans the trials and the reference lines, so that each line sits at its own time
    refs = [r["time_s"] * 1e6 for r in (heuristic, optimum) if r and r.get("time_s")]
    times = [t for _, t in configs] + refs
    low, high = min(times), max(times)
    norm = colors.LogNorm(low, high) if high > low else colors.Normalize(low - 1, high + 1)
    cmap = _truncated_viridis()
    xs = list(range(len(names) + 1))

    def ys(config: dict[str, Any], time_us: float) -> list[float]:
        return [position(n, config[n]) for n in names] + [float(norm(time_us))]

    figure, ax = plt.subplots(figsize=(max(7.0, 1.3 * len(xs) + 2), 5))
    for config, time_us in sorted(configs, key=lambda ct: -ct[1]):  # the fastest drawn last, on top
        ax.plot(xs, ys(config, time_us), color=cmap(norm(time_us)), alpha=0.5, linewidth=1)
    best = min(configs, key=lambda ct: ct[1])
    ax.plot(xs, ys(*best), color="crimson", linewidth=3, label=f"fastest found {best[1]:,.1f} µs")
    drawn = {"heuristic": None, "optimum": None}
    for name, ref, look in (("heuristic", heuristic, {"linestyle": "--", "linewidth": 2}),
                            ("true optimum", optimum, {"linestyle": ":", "linewidth": 2.5})):
        if ref and ref.get("time_s") and all(n in (ref.get("config") or {}) for n in names):
            t_us = ref["time_s"] * 1e6
            ax.plot(xs, ys(ref["config"], t_us), color="black", label=f"{name} {t_us:,.1f} µs", **look)
            drawn["heuristic" if name == "heuristic" else "optimum"] = {"config": ref["config"], "time_us": t_us}
    label_box = {"facecolor": "white", "edgecolor": "none", "alpha": 0.85, "pad": 0.4}
    for i, name in enumerate(names):
        ax.axvline(i, color="grey", linewidth=0.8)
        grid = grids[name]
        shown = grid if len(grid) <= 12 else grid[:: max(1, len(grid) // 8)]
        for value in shown:
            ax.text(i + 0.04, position(name, value), str(value), fontsize=8.5, va="center", bbox=label_box,
                    zorder=6)
    ax.axvline(len(names), color="grey", linewidth=0.8)
    for fraction in (0.0, 0.5, 1.0):
        value = norm.inverse(fraction)
        ax.text(len(names) + 0.04, fraction, f"{float(value):,.1f}", fontsize=8.5, va="center", bbox=label_box,
                zorder=6)
    ax.set_xticks(xs, [*names, "time (µs)"])
    ax.set_yticks([])
    ax.grid(False)
    ax.set_ylim(-0.05, 1.05)
    ax.set_xlim(-0.2, len(names) + 0.6)
    over = "by importance" if importance else "in the space's order"
    ax.set_title(f"{key}: {len(configs)} feasible configurations, parameters {over}")
    bar = figure.colorbar(cm.ScalarMappable(norm=norm, cmap=cmap), ax=ax, pad=0.02, fraction=0.04)
    bar.set_label("simulated time (µs), the lines' colour")
    bar.ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _pos=None: f"{v:,.3g}"))
    bar.ax.yaxis.set_minor_formatter(ticker.FuncFormatter(lambda v, _pos=None: f"{v:,.3g}"))
    # below the axes, clear of the time axis' labels and the colour bar
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.08), ncols=3, frameon=False)
    figure.tight_layout()
    if data is not None:
        data.update({"kind": "parallel", "parameters": names, "grids": {n: grids[n] for n in names},
                     "unit": "µs", "configs": [{"config": c, "time_us": t} for c, t in configs],
                     "fastest": {"config": best[0], "time_us": best[1]}, **drawn})
    return figure


def _history(problem: dict[str, Any], key: str):
    """Best simulated time so far (µs, log axis) after each distinct feasible configuration, with the paper's
    heuristic and, where the grid is known, the true optimum and the band within 1% of it."""
    import matplotlib.pyplot as plt

    from matplotlib.ticker import MaxNLocator

    history = [t * 1e6 for t in problem["history"]]
    figure, ax = plt.subplots(figsize=(8, 4.5))
    ax.step(range(1, len(history) + 1), history, where="post", color="C0", label="best so far (search)")
    heuristic = (problem.get("heuristic") or {}).get("time_s")
    if heuristic:
        ax.axhline(heuristic * 1e6, color="black", linestyle="--", label=f"heuristic {heuristic * 1e6:,.1f} µs")
    optimum = ((problem.get("exhaustive") or {}).get("optimum") or {}).get("time_s")
    if optimum:
        ax.axhline(optimum * 1e6, color="C2", label=f"true optimum {optimum * 1e6:,.1f} µs")
        ax.axhspan(optimum * 1e6, optimum * 1.01e6, color="C2", alpha=0.15, label="within 1% of the optimum")
        reached = (problem.get("exhaustive") or {}).get("trials_to_1pct")
        if reached:
            ax.axvline(reached, color="C2", linestyle=":", label=f"within 1% after {reached} configurations")
    ax.set_yscale("log")
    from matplotlib.ticker import ScalarFormatter

    for axis_formatter in (ax.yaxis.set_major_formatter, ax.yaxis.set_minor_formatter):
        axis_formatter(ScalarFormatter())  # plain µs on the log axis (often less than a decade)
    ax.set_xlim(0.5, max(len(history), 1) + 0.5)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # configurations are counted
    ax.set_xlabel("distinct feasible configurations evaluated (what --trials counts)")
    ax.set_ylabel("best simulated time so far (µs)")
    ax.set_title(f"{key}: best so far")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, frameon=False)
    figure.tight_layout()
    return figure


def _importance(importance: dict[str, float], source: str | None, key: str):
    """The result's parameter importance as horizontal bars, largest on top, its source in the title."""
    import matplotlib.pyplot as plt

    ranked = sorted(importance.items(), key=lambda kv: kv[1])
    figure, ax = plt.subplots(figsize=(7, 0.45 * len(ranked) + 1.5))
    ax.barh([name for name, _ in ranked], [value for _, value in ranked], color="C0")
    for i, (_, value) in enumerate(ranked):
        ax.text(value, i, f" {value:.2f}", va="center")
    ax.grid(False, axis="y")
    ax.set_xlim(0, max(1.0, max(v for _, v in ranked) * 1.15))
    ax.set_xlabel("importance for the simulated time (PED-ANOVA, sums to 1)")
    over = "over the whole grid" if source == "grid" else "over the study's trials"
    ax.set_title(f"{key}: what mattered ({over})")
    figure.tight_layout()
    return figure


def plot_seeds(studies: Sequence[tuple[int | None, optuna.Study]], key: str, folder: Path, formats: Sequence[str],
               write: Callable[[Path, Callable[[Path], None]], None], dpi: int = DEFAULT_DPI, *,
               config_names: Collection[str], record: list[dict[str, Any]] | None = None) -> list[Path]:
    """The best-so-far history of each seed's study of one problem (`studies`: (seed, study) pairs) on one
    axis, as <folder>/<key>-seeds.<format>: how far apart independent searches end, and how soon.
    `config_names`: the parameter names of this tool's configurations (other trials are left out)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = frozenset(config_names)
    runs = []
    with style():
        fig, ax = plt.subplots(figsize=(8, 4.5))
        _draw_seeds(ax, studies, names, runs)
        ax.set_xlabel("trial")
        ax.set_ylabel("best simulated time so far (µs)")
        ax.set_title(f"{key}: best so far, {len(studies)} seeds")
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, frameon=False)
        fig.tight_layout()
        return _save(fig, folder / f"{_slug(key)}-seeds", formats, write, dpi, record,
                     {"kind": "seeds", "unit": "µs", "runs": runs})


def _draw_seeds(ax, studies, names: frozenset[str], runs: list[dict[str, Any]]) -> None:
    for seed, study in studies:
        best, xs, ys = None, [], []
        for t in sorted(study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,)),
                        key=lambda t: t.number):
            if not is_tool_trial(t, names):
                continue
            best = t.value if best is None else min(best, t.value)
            xs.append(t.number)
            ys.append(best * 1e6)
        ax.step(xs, ys, where="post", label=f"seed {seed}" if seed is not None else study.study_name)
        runs.append({"seed": seed, "study_name": study.study_name, "trial": xs, "best_so_far": ys})


def _own_trials(study: optuna.Study, names: frozenset[str]) -> optuna.Study:
    """The study, or when it also holds trials this tool did not make (plain Optuna: is_tool_trial) an
    in-memory study of this tool's finished trials only (the figures would show the others' values and
    parameters)."""
    trials = study.get_trials(deepcopy=False)
    if all(is_tool_trial(t, names) for t in trials):
        return study
    own = optuna.create_study(storage=optuna.storages.InMemoryStorage(), direction="minimize",
                              study_name=study.study_name)
    own.add_trials([t for t in trials if t.state.is_finished() and t.state != optuna.trial.TrialState.FAIL
                    and is_tool_trial(t, names)])
    return own


def _in_space_values(trials: Sequence[optuna.trial.FrozenTrial], space: SearchSpace) -> optuna.Study:
    """An in-memory study of `trials` whose parameters are their configurations (user attribute "config") in
    the space's own values: an int range as integers, the others (tile sizes, powers of 2, categoricals,
    bools) as their grid values, one tick each in the grid's order (powers of 2 evenly spaced: a log axis)."""
    distributions: dict[str, optuna.distributions.BaseDistribution] = {}
    for name, p in space.parameters.items():
        if p.type == "int":
            distributions[name] = optuna.distributions.IntDistribution(p.low, p.high, step=p.step)
        else:
            distributions[name] = optuna.distributions.CategoricalDistribution(p.values())
    shown = optuna.create_study(direction="minimize")
    shown.add_trials([optuna.trial.create_trial(params={n: t.user_attrs["config"][n] for n in distributions},
                                                distributions=distributions, value=t.value)
                      for t in trials if is_tool_trial(t, frozenset(distributions))])
    return shown


def _label(optuna_name: str, names: dict[str, str]) -> str:
    name = names.get(optuna_name)
    return optuna_name if name is None or name == optuna_name else f"{name} ({optuna_name})"


def plot_workload(doc: dict[str, Any], folder: Path, formats: Sequence[str],
                  write: Callable[[Path, Callable[[Path], None]], None], dpi: int = DEFAULT_DPI, *,
                  record: list[dict[str, Any]] | None = None) -> list[Path]:
    """Tuned vs heuristic time per problem of a tuning result (bars, µs), with the true optimum where known,
    as <folder>/workload.<format>."""
    import matplotlib

    matplotlib.use("Agg")
    with style():
        return _plot_workload(doc, folder, formats, write, dpi, record)


def _plot_workload(doc, folder, formats, write, dpi, record) -> list[Path]:
    import matplotlib.pyplot as plt

    rows = [p for p in doc["problems"] if p.get("best") and p["heuristic"].get("time_s")]
    if not rows:
        return []
    figure, ax = plt.subplots(figsize=(max(6.0, 1.2 * len(rows) + 2), 4.5))
    x = range(len(rows))
    width = 0.27
    heur = [p["heuristic"]["time_s"] * 1e6 for p in rows]
    best = [p["best"]["time_s"] * 1e6 for p in rows]
    ax.bar([i - width for i in x], heur, width, label="heuristic (paper's selector)")
    ax.bar(list(x), best, width, label="tuned best")
    optimum = [((p.get("exhaustive") or {}).get("optimum") or {}).get("time_s") for p in rows]
    if any(v is not None for v in optimum):
        ax.bar([i + width for i in x], [v * 1e6 if v else 0 for v in optimum], width, label="true optimum")
    ax.set_xticks(list(x), [p["key"] for p in rows], rotation=30, ha="right")
    ax.set_ylabel("simulated time (µs)")
    summary = doc.get("summary") or {}
    speed = summary.get("workload_speedup")
    title = f"tune {doc['kernel']} on {doc['hardware']['name']}"
    ax.set_title(title + (f": whole workload {speed:.3f}x faster tuned" if speed else ""))
    ax.grid(False, axis="x")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, frameon=False)
    figure.tight_layout()
    data = {"kind": "workload", "unit": "µs",
            "problems": [{"key": p["key"], "heuristic": h, "tuned": b, "optimum": o * 1e6 if o else None}
                         for p, h, b, o in zip(rows, heur, best, optimum)]}
    return _save(figure, folder / "workload", formats, write, dpi, record, data)
