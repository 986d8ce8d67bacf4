"""`ascendbench tune`: search configurations with Optuna, compare with the papers' heuristics. `tune <kernel>` is
made for every registry kernel with a search space by commands/generic.py (from its Params model and its
TuneCommand) with the shared options declared here; this module runs the search and reports it, and has `tune
plot`."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from ascendbench.commands.common import (
    HardwareOption,
    JsonOption,
    NoSaveOption,
    Outputs,
    check_target,
    choice_option,
    command_line,
    count_option,
    default_result_path,
    dump_json,
    err_console,
    fail,
    format_time,
    new_progress,
    out_console,
    resume_hint,
    show_progress,
    whole_keys,
)
from ascendbench.kernels.base import ParamError
from ascendbench.plotting import DEFAULT_DPI, FORMATS
from ascendbench.redact import redact
from ascendbench.tuning import session
from ascendbench.tuning.space import SearchSpace, SpaceError, load_space
from ascendbench.tuning.study import (
    EMPTY_STORAGE,
    MAX_IDLE_TRIALS,
    SAMPLERS,
    TuneError,
    describe_storage,
    open_result_storage,
)

app = typer.Typer(help="Search kernel configurations with Optuna on the timing model and compare the best with "
                       "the papers' heuristics. Studies are stored, so a second run resumes the first.",
                  no_args_is_help=True)

TrialsOption = Annotated[int, count_option("--trials", help="Distinct feasible configurations each problem's "
                                           "study should hold (infeasible points and repeats do not count; a "
                                           "resumed study runs only the missing ones).")]
TimeoutOption = Annotated[float | None, typer.Option("--timeout", help="Stop each problem's search after this "
                                                     "many seconds.")]
SamplerOption = Annotated[str, choice_option("--sampler", choices=SAMPLERS,
                                             help="Optuna sampler: " + ", ".join(SAMPLERS) + ".")]
SeedOption = Annotated[int, count_option("--seed", help="Sampler seed (same seed, sampler and space with one job: "
                                         "the same trials).")]
SeedsOption = Annotated[int, count_option("--seeds", help="Independent searches per problem, seeds SEED to "
                                          "SEED+N-1, each in its own study (<study>/seed-S): the report gives the "
                                          "spread over them.")]
StorageOption = Annotated[str | None, typer.Option("--storage", help="Where studies live: an RDB URL "
                                                   "(postgresql://..., sqlite:///...) or a journal file path "
                                                   "(default: results/tuning/studies.journal).")]
StudyOption = Annotated[str | None, typer.Option("--study-name", help="Study name (default: kernel/hardware); "
                                                 "each problem's study is <name>/<problem>.")]
JobsOption = Annotated[int, count_option("--jobs", help="Worker processes sharing each study.")]
ExhaustiveOption = Annotated[bool | None, typer.Option("--exhaustive/--no-exhaustive", help="Also evaluate the "
                                                       "whole grid for the true optimum, ranks and regret, and "
                                                       "keep it in results/tuning/ground-truth (default: when it "
                                                       "is kept already, or estimated to take under a minute).")]
ReplayOption = Annotated[bool, typer.Option("--replay/--no-replay", help="Answer configurations simulated before "
                                            "(same problem, profile constants and timing model; any seed or "
                                            "sampler) from the evaluation store beside the storage "
                                            "(evaluations.sqlite) instead of simulating them again.")]
SpaceOption = Annotated[Path | None, typer.Option("--space", help="Search space TOML (default: "
                                                  "tuning_spaces/<kernel>.toml).")]


def problems_option(space: str):
    """--problems of `tune <space>`: shell completion offers the problem sets of its space file (the shipped one;
    a broken file offers none), any text is parsed (session.problems_of names the sets a bad one may choose)."""
    def sets() -> tuple[str, ...]:
        try:
            return tuple(session.load_search_space(space).problem_sets)
        except ParamError:
            return ()

    return Annotated[str | None, choice_option("--problems", choices=sets, closed=False, help="A named problem set "
                                               "of the space file (default: its 'default' set when no problem is "
                                               "given).")]
OutOption = Annotated[Path | None, typer.Option("--out", help="Result JSON path (default: "
                                                "results/tuning/<kernel>/<time>-<id>.json).")]


def common_options(spec) -> dict[str, tuple[Any, Any]]:
    """The options every `tune <kernel>` command has, as (Annotated option type, default) by parameter name, for
    the commands made from the registry (commands/generic.py)."""
    return {
        "problems": (problems_option(spec.space), None), "trials": (TrialsOption, 200), "timeout": (TimeoutOption, None),
        "sampler": (SamplerOption, "tpe"), "seed": (SeedOption, 0), "seeds": (SeedsOption, 1),
        "storage": (StorageOption, None), "study_name": (StudyOption, None), "jobs": (JobsOption, 1),
        "exhaustive": (ExhaustiveOption, None), "replay": (ReplayOption, True), "space": (SpaceOption, None),
        "hardware": (HardwareOption, spec.default_hardware),
        "out": (OutOption, None), "no_save": (NoSaveOption, False), "json_out": (JsonOption, False),
    }


def run_tune(kernel: str, problems: list[dict[str, Any]], space: SearchSpace, options: dict[str, Any],
             claims_for: list[tuple[int, int, int, int]] | None = None) -> None:
    """Tune `problems` of a registry kernel with the options of common_options; claims_for: HGEMM's shapes (M, N,
    K, batch), for the claim G-6 (tuning/session.problems_of gives them)."""
    o = options
    _tune(kernel, problems, space, o["hardware"], o["trials"], o["timeout"], o["sampler"], o["seed"], o["storage"],
          o["study_name"], o["jobs"], o["exhaustive"], o["out"], o["no_save"], o["json_out"], claims_for=claims_for,
          seeds=o["seeds"], replay=o["replay"])


def _problems(kernel: str, space: SearchSpace, problems: str | None, **given: Any):
    """session.problems_of, a bad problem a one-line error."""
    try:
        return session.problems_of(kernel, space, problems, given)
    except ParamError as exc:
        fail(str(exc))


@app.command("plot")
def plot(
    result: Annotated[Path, typer.Argument(help="A tuning result JSON (results/tuning/<kernel>/...).")],
    out_dir: Annotated[Path | None, typer.Option("--out-dir", help="Folder of the figures (default: "
                                                 "results/tuning/plots/<result name>).")] = None,
    formats: Annotated[list[str] | None, choice_option("--format", choices=FORMATS, help="png, svg or pdf; repeat "
                                                       "for several (default: png and svg).")] = None,
    dpi: Annotated[int, count_option("--dpi", help="Resolution of PNG figures, dots per inch (50 to 600).")
                   ] = DEFAULT_DPI,
    storage: StorageOption = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the plotted data (times in µs, the space's own "
                                           "values) and the files written as JSON on stdout.")] = False,
) -> None:
    """Draw what a tuning run found: per problem the best-so-far history (µs, with the heuristic and the true
    optimum), the parameters' importance and parallel coordinates of its study (the fastest seed's) in the
    space's own values, and with several seeds each seed's best so far; for several problems, tuned against
    heuristic time per problem."""
    from ascendbench.plotting import check_dpi, check_formats
    from ascendbench.store.schema import TuningResult
    from ascendbench.tuning.plots import plot_seeds, plot_study, plot_workload

    if storage is not None and not storage.strip():
        fail(EMPTY_STORAGE)
    try:
        formats = check_formats(formats, ("png", "svg"))
        check_dpi(dpi)
    except ValueError as exc:
        fail(str(exc))
    try:
        doc = TuningResult.model_validate_json(result.read_text(encoding="utf-8")).model_dump(mode="json")
    except OSError as exc:
        fail(f"RESULT: cannot read {str(result)!r}: {exc.strerror or exc}")
    except ValueError:
        fail(f"RESULT: {str(result)!r} is not a tuning result (ascendbench/store/tuning_result.schema.json)")
    target = storage or doc["storage"]
    import optuna

    try:
        opened = open_result_storage(target)  # a plot only reads the studies
    except TuneError as exc:
        fail(str(exc))
    def load(name: str) -> optuna.Study:
        try:
            return optuna.load_study(study_name=name, storage=opened)
        except KeyError:
            fail(f"--storage: {describe_storage(target)} holds no study {name!r}")

    space = None
    with contextlib.suppress(SpaceError, KeyError):
        space = load_space(doc["space"]["path"])
    studies, seeds = [], []
    for problem in doc["problems"]:
        # the parameter names of this tool's configurations: which trials of a study are its own (the others,
        # of plain Optuna, are left out of the figures); the space's, else those of the problem's configurations
        names = (list(space.parameters) if space else
                 list((problem.get("best") or {}).get("config") or problem["heuristic"].get("config") or {}))
        studies.append((load(problem["study_name"]), problem["key"], names, problem))
        runs = (problem.get("seeds") or {}).get("runs") or []
        if len(runs) > 1:
            seeds.append(([(r["seed"], load(r["study_name"])) for r in runs], problem["key"], names))
    folder = out_dir or Path("results") / "tuning" / "plots" / result.stem
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        fail(f"--out-dir: cannot make {str(folder)!r}: {exc.strerror or exc}")
    written: list[Path] = []
    skipped: list[str] = []
    record: list[dict[str, Any]] = []
    with Outputs() as outputs:
        for study, key, names, problem in studies:
            drawn = plot_study(study, key, space, folder, formats, outputs.write_figure, dpi, config_names=names,
                               problem=problem, record=record)
            if not any("-importance." in p.name for p in drawn):
                skipped.append(key)
            written += drawn
        for runs, key, names in seeds:
            written += plot_seeds(runs, key, folder, formats, outputs.write_figure, dpi, config_names=names,
                                  record=record)
        if len(doc["problems"]) > 1:
            written += plot_workload(doc, folder, formats, outputs.write_figure, dpi, record=record)
    if json_out:
        out_console.file.write(dump_json({"result": str(result), "figures": record,
                                          "left_out": [{"key": k, "figures": ["importance", "parallel"],
                                                        "reason": "fewer than 10 distinct feasible configurations"}
                                                       for k in skipped]}) + "\n")
        return
    for path in written:
        out_console.print(f"wrote {path}", highlight=False)
    for key in skipped:
        out_console.print(f"{key}: importance and parallel coordinates left out (fewer than 10 distinct feasible "
                          "configurations)", highlight=False)


# ---------------------------------------------------------------------------------------------------------
def _space(kernel: str, path: Path | None) -> SearchSpace:
    try:
        return session.load_search_space(kernel, path)
    except ParamError as exc:
        fail(str(exc))


def _tune(kernel: str, problems: list[dict[str, Any]], space: SearchSpace, hardware: str, trials: int,
          timeout: float | None, sampler: str, seed: int, storage: str | None, study_name: str | None, jobs: int,
          exhaustive: bool | None, out: Path | None, no_save: bool, json_out: bool,
          claims_for: list[tuple[int, int, int, int]] | None = None, seeds: int = 1, replay: bool = True) -> None:
    """The search (tuning/session.py) with a progress display, then the result file and the report."""
    if out is not None and no_save:
        fail("--out: cannot be combined with --no-save")
    taken: dict[Path, str] = {}
    if storage is not None and "://" not in storage:
        taken[Path(storage).resolve()] = "the --storage journal"
    check_target(out, "out", ".json", taken)
    try:
        setup = session.prepare(kernel, space, hardware=hardware, trials=trials, timeout=timeout, sampler=sampler,
                                seed=seed, seeds=seeds, storage=storage, study_name=study_name, jobs=jobs,
                                exhaustive=exhaustive, replay=replay)
    except ParamError as exc:
        fail(str(exc))

    from rich.progress import MofNCompleteColumn, TextColumn

    progress = new_progress(MofNCompleteColumn(), TextColumn("{task.fields[best]}"), json_out=json_out)
    tasks: list = []

    def watch(key: str) -> session.Report:
        if tasks:  # the problem before is done
            progress.update(tasks[-1], visible=False)
        task = progress.add_task(key, total=trials, best="")
        tasks.append(task)
        last = [None]  # the stage last shown for this seed: the search (the problem's key), then the grid

        def report(stage: str | None, done: int, total: int, best: float | None) -> None:
            if stage is None:  # a new seed's search
                last[0] = None
                return
            if stage != last[0] and stage.startswith(f"{key}: whole grid, ") and done < total and not json_out:
                # an automatic ground truth (its estimate in the stage): said before the wait, and kept in the log
                progress.console.print(f"{stage}: {_GRID_NOTE}", style="dim", highlight=False)
            # each seed's search and the grid after it are timed apart; --timeout bounds the search only
            show_progress(progress, task, stage, min(done, total), total, new_stretch=stage != last[0],
                          limit_s=timeout if stage == key else None,
                          best=f"best {best * 1e6:,.1f} µs" if best is not None else "")
            last[0] = stage
        return report

    with progress:
        try:
            searched = session.search(setup, problems, watch)
        except ParamError as exc:
            fail(str(exc))
        except OSError as exc:  # a full disk, a storage gone read-only
            what = redact(f"the storage or a result file failed: {exc}")
            err_console.print(f"tune: {what}; the finished trials are kept in {describe_storage(storage)}; "
                              + resume_hint(), highlight=False, soft_wrap=True)
            raise typer.Exit(1) from None
        if tasks and not (searched.interrupted or searched.worker_failed):
            progress.update(tasks[-1], visible=False)

    doc = session.document(setup, searched, command_line(), claims_for)
    saved_to = None if no_save else (out or default_result_path("tuning", kernel))
    if saved_to is not None:
        with Outputs() as outputs:
            outputs.write_json("out", saved_to, doc)
    if json_out:
        out_console.file.write(dump_json(doc) + "\n")
    else:
        _print(doc, saved_to)
    if searched.interrupted:
        err_console.print(f"the finished trials are kept in {describe_storage(storage)}; {resume_hint()}",
                          highlight=False, soft_wrap=True)
        raise typer.Exit(130)
    if searched.worker_failed:
        err_console.print(f"tune: {searched.worker_failed}; the finished trials are kept in "
                          f"{describe_storage(storage)}; " + resume_hint(), highlight=False, soft_wrap=True)
        raise typer.Exit(1)


# ---------------------------------------------------------------------------------------------------------
def _config_text(kernel: str, config: dict[str, Any] | None) -> str:
    if not config:
        return "-"
    if kernel == "batched-scan":
        return f"{config['algorithm']} s={config['s']}"
    if kernel == "hgemm":
        text = f"{config['m0']}x{config['n0']}x{config['k0']}"
        if config.get("split_k", 1) != 1:
            text += f" SplitK {config['split_k']}"
        off = [name for name in ("shuffle_k", "padding", "double_buffer") if not config.get(name, True)]
        return text + ("" if not off else " no " + "/".join(off))
    if kernel == "scan":
        chunk = config.get("chunk")
        chunk_text = "off" if chunk == "off" else f"{chunk:,}" if isinstance(chunk, int) else str(chunk)
        return f"{config['algorithm']} s={config['s']} blocks={config['blocks']} chunk={chunk_text}"
    return " ".join(f"{k}={v}" if k != "variant" else str(v) for k, v in config.items())


def _top_text(kernel: str, exhaustive: dict[str, Any]) -> str:
    """The grid's top configurations by rank, ties together: 'rank 1 (16.9 µs): A, B; rank 3 (17.1 µs): C'."""
    groups: dict[int, list[dict[str, Any]]] = {}
    for row in exhaustive["top"]:
        groups.setdefault(row["rank"], []).append(row)
    more = exhaustive.get("top_left_out") or 0
    parts = []
    for i, (rank, rows) in enumerate(groups.items()):
        tied = len(rows) + (more if i == len(groups) - 1 else 0)  # the ones left out tie with the last rank
        shown = ", ".join(_config_text(kernel, r["config"]) for r in rows[:_TIES_SHOWN])
        extra = f" and {tied - _TIES_SHOWN} more" if tied > _TIES_SHOWN else ""
        count = f"{tied} configurations: " if tied > _TIES_SHOWN else ""
        parts.append(f"rank {rank} ({format_time(rows[0]['time_s'])}): {count}{shown}{extra}")
    return "; ".join(parts)


_TIES_SHOWN = 3  # _top_text: configurations named per rank (the JSON has them all, up to MAX_TOP_SHOWN)


def _cost_text(cost: dict[str, Any]) -> str:
    """'2.1 s: model 1.5 s (300 configurations, infeasible ones included), replay 0.0 s (12 replayed), ...'."""
    over = f" over {cost['processes']} processes" if cost.get("processes", 1) > 1 else ""
    text = (f"{cost['wall_s']:.2f} s{over}: model {cost['model_s']:.2f} s ({cost['simulated']} configurations, "
            f"infeasible ones included), replay "
            f"{cost['replay_s']:.2f} s ({cost['replayed']} replayed), sampler {cost['sampler_s']:.2f} s, kernel "
            f"checks {cost['check_s']:.2f} s, storage {cost['storage_s']:.2f} s, other {cost['other_s']:.2f} s")
    if cost.get("store_error"):
        text += f" (evaluation store not used: {cost['store_error']})"
    return text


def _rank(rank: int | None) -> str:
    return "-" if rank is None else str(rank)


def _percent(fraction: float | None) -> str:
    return "-" if fraction is None else f"{fraction * 100:.2f}%"


# said when an automatic whole grid begins (tune_problem's stage "<key>: whole grid, N points, about S s here")
_GRID_NOTE = ("the ground truth of the report (regret, grid ranks, top configurations, importance), evaluated once "
              "and kept for later runs; --no-exhaustive skips it")

# under the result table: its rank is not the exhaustive check's grid rank
_RANK_LEGEND = ("rank in study: the heuristic's place among the distinct feasible configurations the study "
                "evaluated, the heuristic included (1 = fastest); the exhaustive check's grid ranks are among "
                "every feasible point of the grid")

# why a search ended short of --trials (TrialCounts.stopped)
_STOPPED = {"timeout": "stopped by --timeout (run the same command again to go on)",
            "interrupted": "interrupted (run the same command again to go on)",
            "worker_failed": "a --jobs worker process died (run the same command again to go on)",
            "idle": f"stopped after {MAX_IDLE_TRIALS} trials in a row found no new feasible configuration (the "
                    "space may hold fewer feasible ones than --trials)",
            "grid": "every point of the grid has been seen ({distinct} points, {infeasible} of them do not fit)"}


def _print(doc: dict[str, Any], saved_to: Path | None) -> None:
    c = out_console
    kernel, unit = doc["kernel"], doc["unit"]
    count = len(doc["problems"])
    c.rule(f"[bold]tune {kernel}: {count} problem{'s' if count != 1 else ''} on {doc['hardware']['name']}, "
           f"{doc['sampler']} sampler")
    table = Table()
    for col in ("problem", "trials", "best (tuned)", "time", unit, "heuristic", "time", "rank in study",
                "speed-up"):
        table.add_column(col, justify="left" if col in ("problem", "best (tuned)", "heuristic") else "right")
    for p in doc["problems"]:
        best, heur, t = p["best"] or {}, p["heuristic"], p["trials"]
        extra = [f"{t['infeasible']} infeasible" if t["infeasible"] else "",
                 f"{t['repeats']} repeat{'s' if t['repeats'] != 1 else ''}" if t["repeats"] else ""]
        trials = f"{t['evaluated']}" + (f" (+{', '.join(e for e in extra if e)})" if any(extra) else "")
        rank = f"{heur['rank']} of {heur['ranked_among']}" if heur.get("rank") else "-"
        speed = f"{p['speedup']:.3f}x" if p["speedup"] is not None else "-"
        tp = f"{best['throughput']:.1f}" if best.get("throughput") is not None else "-"
        table.add_row(p["key"], trials, _config_text(kernel, best.get("config")), format_time(best.get("time_s")), tp,
                      _config_text(kernel, heur["config"]), format_time(heur["time_s"]), rank, speed)
    c.print(whole_keys(table, "problem"))
    c.print(_RANK_LEGEND, style="dim", highlight=False)
    for p in doc["problems"]:
        t = p["trials"]
        runs = (p.get("seeds") or {}).get("runs") or [{"seed": None, **t}]  # with --seeds: each seed's search
        for r in runs:
            if r["evaluated"] < t["target"] and r.get("stopped") in _STOPPED:
                who = p["key"] if r["seed"] is None else f"{p['key']} seed {r['seed']}"
                reason = _STOPPED[r["stopped"]].format(distinct=r.get("distinct", t["distinct"]),
                                                       infeasible=r.get("infeasible", t["infeasible"]))
                c.print(f"{who}: {r['evaluated']} of {t['target']} configurations: {reason}", style="yellow",
                        highlight=False)
        if t.get("foreign"):  # trials of plain Optuna in the study (summarise leaves them out)
            n = t["foreign"]
            c.print(f"{p['key']}: left out {n} trial{'s' if n != 1 else ''} of its study that ascendbench "
                    "did not make (no configuration of its space in their 'config' user attribute: plain Optuna, "
                    "optuna-dashboard)",
                    style="yellow", highlight=False)
    exhaustive = [p for p in doc["problems"] if p["exhaustive"]]
    if exhaustive:
        ex = Table(title="exhaustive check (whole grid on the timing model)", title_justify="left")
        for col in ("problem", "feasible", "optimum", "time", "within 1%", "best's grid rank", "regret",
                    "heuristic's grid rank", "its regret", "to 1%", "to 5%"):
            ex.add_column(col, justify="left" if col in ("problem", "optimum") else "right")
        for p in exhaustive:
            e = p["exhaustive"]
            opt = e["optimum"] or {}
            within = e.get("within_1pct")
            ex.add_row(p["key"], f"{e['feasible']} of {e['points']}", _config_text(kernel, opt.get("config")),
                       format_time(opt.get("time_s")), "-" if within is None else str(within), _rank(e.get("best_rank")),
                       _percent(e["regret"]), _rank(e.get("heuristic_rank")), _percent(e.get("heuristic_regret")),
                       str(e["trials_to_1pct"] or "not reached"), str(e["trials_to_5pct"] or "not reached"))
        c.print(whole_keys(ex, "problem"))
        c.print("grid ranks and regrets are against every feasible point of the whole grid; 'within 1%': configurations of the grid within 1% "
                "of the optimum; 'to 1%': distinct configurations evaluated until the best was within 1% of the "
                "optimum", style="dim", highlight=False)
        for p in exhaustive:
            if p["exhaustive"].get("top"):
                c.print(f"top of the grid for {p['key']}: {_top_text(kernel, p['exhaustive'])}", highlight=False)
    for p in doc["problems"]:
        spread = (p.get("seeds") or {}).get("spread") or {}
        if spread:
            parts = [f"{len(p['seeds']['runs'])} seeds"]
            for name, label, fmt in (("speedup", "speed-up over the heuristic", "{:.3f}x"),
                                     ("regret", "regret", "{:.2%}"), ("trials_to_1pct", "configurations to 1%",
                                                                      "{:g}")):
                if spread.get(name):
                    s3 = spread[name]
                    parts.append(f"{label} min {fmt.format(s3['min'])} / median {fmt.format(s3['median'])} / "
                                 f"max {fmt.format(s3['max'])}")
            c.print(f"spread over seeds for {p['key']}: " + "; ".join(parts) + " (the table shows the fastest "
                    "seed)", highlight=False)
        if p.get("importance"):
            parts = ", ".join(f"{name} {value:.2f}" for name, value in
                              sorted(p["importance"].items(), key=lambda kv: -kv[1]))
            over = ("over the whole grid" if p.get("importance_source") == "grid"
                    else "over the study's trials, where the sampler looked")
            c.print(f"what mattered for {p['key']} (parameter importance, PED-ANOVA {over}): {parts}",
                    highlight=False)
        else:
            c.print(f"what mattered for {p['key']}: not measured (parameter importance needs at least 10 distinct "
                    "feasible configurations)", highlight=False)
        if p.get("exhaustive_skipped") and p["exhaustive_skipped"] != "--no-exhaustive":
            c.print(f"no ground truth for {p['key']}: {p['exhaustive_skipped']}", style="dim", highlight=False)
        if p.get("cost"):
            c.print(f"search cost for {p['key']}: {_cost_text(p['cost'])}", style="dim", highlight=False)
        if p.get("deploy"):  # the command on a line of its own, not wrapped, to copy
            c.print(f"run the best for {p['key']} (the JSON result's `deploy` has it as a fragment too):",
                    highlight=False)
            c.print(f"  [bold]{escape(p['deploy']['shell'])}[/]", highlight=False, soft_wrap=True)
            if p["deploy"].get("note"):
                c.print(f"  note: {p['deploy']['note']}", style="yellow", highlight=False)
    s = doc["summary"]
    if s.get("searches"):
        beat = (f"by {s['median_gain_when_beaten']:.3f}x (median; max {s['max_gain']:.3f}x)"
                if s["searches_beat_heuristic"] else "(the heuristic was as fast as the best found)")
        c.print(f"the search beat the paper's heuristic in {s['searches_beat_heuristic']} of {s['searches']} "
                f"search{'es' if s['searches'] != 1 else ''} {beat}", highlight=False)
    if count > 1 and s["mean_speedup"] is not None:
        c.print(f"heuristic within 5% of the tuned best on {s['fraction_heuristic_within_5pct'] * 100:.0f}% of "
                f"problems; speed-up of tuned over heuristic: mean {s['mean_speedup']:.3f}x, max "
                f"{s['max_speedup']:.3f}x; whole workload (time-weighted) {s['workload_speedup']:.3f}x",
                highlight=False)
    for claim in doc["claims"]:
        verdict = "[green]holds[/]" if claim["holds"] else "[yellow]miss[/]"
        ratios = ", ".join(f"{k} {v:.3f}" for k, v in claim["simulated"].items())
        c.print(f"{claim['id']} ({claim['statement']}): heuristic / tuned best throughput {ratios}: {verdict}")
    c.print(f"studies in {doc['storage']} (run the same command again to resume or extend with --trials)",
            highlight=False)
    if saved_to is not None:
        c.print(f"result written to {saved_to}")
