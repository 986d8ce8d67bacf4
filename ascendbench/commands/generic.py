"""The one command builder: `run <kernel>` for every registry kernel and `tune <kernel>` for every kernel with a
search space. The options are made from the kernel's Params model (one option per field, its description as
help, spelled alike in both) and what its KernelSpec.run_command / tune_command add (help texts, the kernel's own
options as ExtraOption data: scan's --generator, HGEMM's --workload in both; `run`'s --model-only and output
file's suffix; the fields a command leaves out, the --help order), so a kernel added to the registry appears in
both without further edits. Every `run` takes the same
steps (add_run_commands); what a kernel does of its own before and after the pipeline (checks, its output array,
its report) is in its command steps module (RunCommand.steps: run_operators, run_scan, run_batched,
run_segmented, run_hgemm).

Counts (int fields) take the forms of `--n` (1e6, 2**20, 1_000_000); booleans are --flag/--no-flag, or the
kernel's own False spelling (KernelSpec.flag: --largest/--smallest); a field with choices (a Literal) is a
choice_option: --help lists the values, shell completion offers them, a bad one fails at parse time. Other values
are checked by the kernel's model (one-line errors, exit 2).
"""

from __future__ import annotations

import inspect
import time
import types
import typing
from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from pydantic.fields import FieldInfo

from ascendbench.commands.common import choice_option, count_option, fail, parse_count
from ascendbench.kernels.contract import FROM_INPUT, ExtraOption, KernelSpec

__all__ = ["add_registry_commands", "add_run_commands", "add_tune_commands", "registry_app", "run_parameters",
           "tune_parameters"]


def _base(annotation: Any) -> tuple[Any, bool]:
    """(the annotation without None, whether None is allowed)."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return (args[0] if len(args) == 1 else str), True
    return annotation, False


def _parameter(name: str, kind: Any, option: Any, default: Any) -> inspect.Parameter:
    """A keyword-only parameter `name: Annotated[kind, option] = default` (no default: a required option)."""
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=Annotated[kind, option],
                             default=inspect.Parameter.empty if default is ... else default)


def _option(spec: KernelSpec, name: str, field: FieldInfo, help_text: str | None = None,
            from_input: bool = False, no_input: bool = False) -> inspect.Parameter:
    """A typer option for one field of spec's Params model (int fields with the count parser, count_option;
    bool fields spelled by spec.flag). help_text: `run`'s own help of the field (RunCommand.help), shown with
    typer's [default: ...]; else the field's description with its default. from_input: the option has no default
    and is optional (the input array, or the kernel's default, sets the field when it is not given). no_input: the
    command takes no input arrays (`tune`), so a size's description drops its FROM_INPUT remark."""
    annotation, optional = _base(field.annotation)
    flag, *aliases = spec.options(name)
    required = field.is_required() and not from_input
    default = None if required or optional or from_input else field.default
    kind: Any = annotation
    choices = typing.get_args(annotation) if typing.get_origin(annotation) is Literal else ()
    if choices:
        kind = int if all(isinstance(c, int) for c in choices) else str
    shown: dict[str, Any] = {}
    if help_text is None:
        help_text = (field.description or "").rstrip(".")
        if no_input:
            help_text = help_text.removesuffix(FROM_INPUT)
        if choices:
            listed = ", ".join(map(str, choices))
            help_text = f"{help_text}: {listed}" if help_text else listed
        if default is not None and annotation is not bool:
            help_text += f" (default: {default})"
        help_text = help_text[:1].upper() + help_text[1:] + "."
        shown = {"show_default": False}
    if choices:
        option = choice_option(flag, *aliases, choices=choices, help=help_text, **shown)
    elif annotation is int:
        option = count_option(flag, *aliases, help=help_text, **shown)
    else:
        option = typer.Option(flag, *aliases, help=help_text, **shown)
    if not (required or annotation is bool or default is not None):
        kind = kind | None
    return _parameter(name, kind, option, ... if required else default)


_KINDS = {"count": int, "float": float, "path": Path, "bool": bool, "text": str}


def _extra(extra: ExtraOption) -> inspect.Parameter:
    """The typer option of a kernel's ExtraOption."""
    kind: Any = _KINDS[extra.kind]
    shown = {} if extra.metavar is None else {"metavar": extra.metavar}
    help_text = extra.help
    if extra.choices is not None:
        if callable(extra.choices):
            help_text = help_text.replace("{choices}", ", ".join(map(str, extra.choices())))
        option = choice_option(*extra.decls, choices=extra.choices, closed=extra.closed, help=help_text, **shown)
    elif extra.kind == "count":
        option = count_option(*extra.decls, help=help_text, **shown)
    else:
        option = typer.Option(*extra.decls, help=help_text, **shown)
    if extra.default is None and kind is not bool:
        kind = kind | None
    return _parameter(extra.name, kind, option, extra.default)


def _values(spec: KernelSpec, names: list[str], given: dict[str, Any]) -> dict[str, Any]:
    """The options the user gave, as the kernel's model takes them (counts parsed, choices typed)."""
    out: dict[str, Any] = {}
    for name in names:
        value = given.get(name)
        if value is None:
            continue
        field = spec.Params.model_fields[name]
        annotation, _ = _base(field.annotation)
        if annotation is int:
            try:
                value = parse_count(value, name.replace("_", "-"))
            except ValueError as exc:
                fail(str(exc))
        elif typing.get_origin(annotation) is Literal:
            choices = typing.get_args(annotation)
            value = next((c for c in choices if str(c) == value), value)  # 16 for "16"
        out[name] = value
    return out


_LAST_FIELDS = ("warm_l2",)  # fields every kernel shares: listed after the shared options, before --hardware


def _switches(spec: KernelSpec) -> dict[str, KernelSpec]:
    """Option -> registry kernel of the kernels run as `run <spec.name> --no-<option>` (split-values: `run split
    --no-indices`)."""
    from ascendbench.kernels.registry import REGISTRY

    prefix = f"{spec.name} --no-"
    return {other.command.removeprefix(prefix): other for other in REGISTRY.values()
            if other.command and other.command.startswith(prefix) and " " not in other.command.removeprefix(prefix)}


def run_parameters(spec: KernelSpec) -> tuple[list[inspect.Parameter], dict[str, KernelSpec]]:
    """The options of `run <spec.name>`: the kernel's fields (those RunCommand.help lists first, in its order;
    an ExtraOption of a field's name in its place), then the shared options, a --<option>/--no-<option> switch
    to another kernel (_switches), --model-only, the kernel's other extras, warm_l2, --hardware, --trace, --out,
    --no-save, --json; without those RunCommand.omit names, in RunCommand.order when it gives one. Returns them
    and the switches."""
    from ascendbench.commands.common import HardwareOption, JsonOption, NoSaveOption, TraceOption

    cmd = spec.run_command
    helps = cmd.help
    fields = spec.Params.model_fields
    extras = {extra.name: extra for extra in cmd.extras}
    from_input = {spec.size_field, "dtype", *cmd.from_input}
    order = [n for n in helps if n in fields] + [n for n in fields if n not in helps]
    first = [n for n in order if n not in _LAST_FIELDS]
    last = [n for n in order if n in _LAST_FIELDS]

    def field(name: str) -> inspect.Parameter:
        if name in extras:
            return _extra(extras[name])
        return _option(spec, name, fields[name], helps.get(name), from_input=name in from_input)

    def shared(name: str, kind: Any, default: Any) -> inspect.Parameter:
        return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=kind, default=default)

    inputs = ", ".join(repr(i.name) for i in spec.inputs)
    params = [field(n) for n in first] + [
        shared("seed", Annotated[int, count_option("--seed", help=helps.get("seed", "Seed of the generated "
                                                                                   "inputs."))], 0),
        shared("input_file", Annotated[Path | None, typer.Option("--input", help=helps.get(
            "input_file", f"Inputs: a 1-D .npy (the first input) or a .npz with arrays {inputs}."))], None),
        shared("output_file", Annotated[Path | None, typer.Option("--output-file", help=helps.get(
            "output_file", "Save the outputs as .npz."))], None),
        shared("verify", Annotated[bool, typer.Option("--verify/--no-verify", help=helps.get(
            "verify", "Compare with the NumPy reference."))], True)]
    switches = _switches(spec)
    for option, other in switches.items():
        params.append(shared(option.replace("-", "_"), Annotated[bool, typer.Option(
            f"--{option}/--no-{option}", help=helps.get(option, f"--no-{option}: {other.title}."))], True))
    if cmd.model_only:
        params.append(shared("model_only", Annotated[bool, typer.Option("--model-only", help=helps.get(
            "model_only", "Timings and counters only, no data."))], False))
    params += [_extra(extra) for name, extra in extras.items() if name not in fields]
    params += [field(n) for n in last] + [
        shared("hardware", HardwareOption, spec.default_hardware),
        shared("trace", Annotated[Path | None, typer.Option("--trace", help=helps["trace"])] if "trace" in helps
               else TraceOption, None),
        shared("out", Annotated[Path | None, typer.Option("--out", help=helps.get(
            "out", f"Result JSON path (default: results/runs/{spec.name}/<time>-<id>.json)."))], None),
        shared("no_save", NoSaveOption, False), shared("json_out", JsonOption, False)]
    params = [p for p in params if p.name not in cmd.omit]
    if cmd.order:
        missing = {p.name for p in params} ^ set(cmd.order)
        assert not missing, f"{spec.name}: RunCommand.order must name every option once: {sorted(missing)}"
        params.sort(key=lambda p: cmd.order.index(p.name))
    return params, switches


def add_run_commands(app: typer.Typer, specs: list[KernelSpec]) -> None:
    """A `run <name>` command for each kernel in specs, made from its Params model and its run_command: the
    options of run_parameters. The run takes the same steps for every kernel: the kernel's command steps
    (RunCommand.steps: a module under ascendbench.commands) check the options and the files before any work and
    give the pipeline's arguments (`prepare(spec, options, values)`), the pipeline runs it (under a progress bar
    for a streaming kernel), then the outputs are written all or nothing (the steps' `output(run, options)`:
    the --output-file writer, the result JSON, the trace), and the steps' `report(run, saved_to, output_file,
    trace)` prints it (or --json the document); exit status 1 when verification failed."""
    for spec in specs:
        params, switches = run_parameters(spec)
        fields = [n for n in spec.Params.model_fields if n not in {e.name for e in spec.run_command.extras}]

        def command(_spec: KernelSpec = spec, _fields: list[str] = fields,
                    _switches: dict[str, KernelSpec] = switches, **options: Any) -> None:
            name = next((other.name for option, other in _switches.items()
                         if not options[option.replace("-", "_")]), _spec.name)
            _run(_spec, name, options, _values(_spec, _fields, options))

        _register(app, spec, command, params, spec.run_command.doc or f"{spec.title} ({spec.source}).")


def _run(spec: KernelSpec, name: str, options: dict[str, Any], values: dict[str, Any]) -> None:
    """One `run <kernel>` (add_run_commands says the steps); `name`: the registry kernel that runs."""
    import contextlib
    import importlib

    from ascendbench.commands.common import (Outputs, command_line, default_result_path, dump_json, out_console,
                                             progress_bar)
    from ascendbench.hardware import HardwareError
    from ascendbench.kernels.base import BufferCapacityError, InputError, ParamError
    from ascendbench.pipeline import run as run_kernel
    from ascendbench.sim.trace import write_chrome_trace

    wall0 = time.perf_counter()
    steps = importlib.import_module(f"ascendbench.commands.{spec.run_command.steps}")
    arguments = {"seed": options["seed"], "hardware": options["hardware"], "verify": options.get("verify", True),
                 "model_only": options.get("model_only", False)}
    arguments |= steps.prepare(spec, options, values)
    partial: Path | None = arguments.get("output_path")  # a file the run writes itself, moved into place after
    progress = contextlib.nullcontext()
    if spec.streaming:  # a bar of the streaming stages (off with --json or when stderr is no terminal)
        progress, arguments["progress"] = progress_bar(options["json_out"])
    try:
        with progress:
            run = run_kernel(name, command=command_line(), **arguments)
    except (ParamError, InputError, HardwareError, BufferCapacityError) as exc:
        _drop(partial)
        fail(str(exc))
    except getattr(steps, "ERRORS", ()) as exc:  # the kernel's own (HGEMM's workloads, its tile selector's checks)
        _drop(partial)
        fail(steps.error_message(exc))
    except MemoryError:
        _drop(partial)
        if not hasattr(steps, "MEMORY_OPTION"):
            raise
        fail(f"--{steps.MEMORY_OPTION}: not enough memory for the functional run at this size; use --model-only")
    except OSError as exc:
        _drop(partial)
        if partial is None or exc.filename != str(partial):
            raise
        # a full disk or a file-size limit met while reserving the output (partition.npy_memmap)
        fail(f"--output-file: cannot write {options['output_file']}: {exc.strerror}", code=1)
    except BaseException:
        _drop(partial)
        raise

    result = run.result
    result.host.wall_time_s = time.perf_counter() - wall0
    doc = result.model_dump(mode="json")
    kernel = getattr(result, "kernel", None) or name  # a scan's folder is its algorithm's
    output_file, trace = options["output_file"], options["trace"]
    saved_to = None if options["no_save"] else (options["out"] or default_result_path("runs", kernel))
    with Outputs() as outputs:
        write = None
        if output_file is not None:
            write = _move(run, partial) if partial is not None else steps.output(run, options)
        if write is not None:
            outputs.write("output-file", output_file, write)
        if trace is not None:
            outputs.write("trace", trace, lambda path: write_chrome_trace(run.trace[0], path, name=kernel))
        if saved_to is not None:
            outputs.write_json("out", saved_to, doc)
    if options["json_out"]:
        out_console.file.write(dump_json(doc) + "\n")
    else:
        steps.report(run, saved_to, output_file, trace)
    if run.verification.performed and not run.verification.passed:
        raise typer.Exit(1)


def _move(run, partial: Path):
    """The --output-file writer of an output the run wrote itself (partial): the file moved into place (None: the
    run wrote none)."""
    import os

    if not partial.exists():
        return None
    run.arrays = None  # close the memory map before moving its file into place
    return lambda path: os.replace(partial, path)


def _drop(path: Path | None) -> None:
    if path is not None:
        try:
            path.unlink()
        except OSError:
            pass


def tune_parameters(spec: KernelSpec) -> list[inspect.Parameter]:
    """The options of `tune <spec.space>`: the problem's (tuning/session.problem_options: every field the search
    space does not tune, without TuneCommand.omit, then the kernel's extras; in TuneCommand.order when it gives
    one), each optional (a problem set of the space file may give the problem), then the options every `tune` has
    (tune.common_options)."""
    from ascendbench.commands import tune as tune_module
    from ascendbench.tuning.session import problem_options

    cmd = spec.tune_command
    fields = spec.Params.model_fields
    extras = {extra.name: extra for extra in cmd.extras}
    own = [_extra(extras[name]) if name in extras
           else _optional(_option(spec, name, fields[name], cmd.help.get(name), no_input=True))
           for name in problem_options(spec)]
    return own + [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=kind, default=default)
                  for name, (kind, default) in tune_module.common_options(spec).items()]


def add_tune_commands(app: typer.Typer, specs: list[KernelSpec]) -> None:
    """A `tune <space>` command for each kernel in specs with a search space, made from its Params model and its
    tune_command (the options of tune_parameters): one problem from the options, or a problem set of the space
    file (--problems); the problems are tuning/session.py's, the search and its report commands/tune.py's."""
    from ascendbench.commands import tune as tune_module
    from ascendbench.tuning.session import problem_options

    for spec in specs:
        extras = [extra.name for extra in spec.tune_command.extras]
        fields = [name for name in problem_options(spec) if name not in extras]

        def command(_spec: KernelSpec = spec, _fields: list[str] = fields, _extras: list[str] = extras,
                    **options: Any) -> None:
            space = tune_module._space(_spec.space, options["space"])
            given = _values(_spec, _fields, options) | {name: options[name] for name in _extras}
            problems, shapes = tune_module._problems(_spec.space, space, options["problems"], **given)
            tune_module.run_tune(_spec.space, problems, space, options, claims_for=shapes)

        tuned = ", ".join(sorted(spec.tuned()))
        doc = spec.tune_command.doc or (f"Tune {spec.title} ({tuned}) on the timing model and compare with the "
                                        "paper's choice.")
        _register(app, spec, command, tune_parameters(spec), doc, spec.space)


def _optional(parameter: inspect.Parameter) -> inspect.Parameter:
    """The option with None as its default (a required option made optional)."""
    kind, option = typing.get_args(parameter.annotation)
    return parameter.replace(annotation=Annotated[kind | None, option], default=None)


def _register(app: typer.Typer, spec: KernelSpec, command, params: list[inspect.Parameter], doc: str,
              name: str | None = None) -> None:
    def entry(**options: Any) -> None:
        command(**options)

    entry.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    entry.__annotations__ = {p.name: p.annotation for p in params} | {"return": None}
    entry.__doc__ = doc
    entry.__name__ = (name or spec.name).replace("-", "_")
    app.command(name or spec.name)(entry)


def add_registry_commands(app: typer.Typer, group: str) -> None:
    """Add to the `run` (group "run") or `tune` (group "tune") app a command for every registry kernel that has
    none there yet (run: every kernel without a `command` of its own; tune: every kernel with a search space).
    Adding again adds nothing."""
    from ascendbench.kernels.registry import REGISTRY

    have = {c.name or c.callback.__name__ for c in app.registered_commands}
    if group == "run":
        add_run_commands(app, [s for s in REGISTRY.values() if s.name not in have and s.command is None])
    else:
        add_tune_commands(app, [s for s in REGISTRY.values() if s.space is not None and s.space not in have])


def run_commands(name: str) -> list:
    """The command info (typer's) of `run <name>` made for registry kernel `name` ([] when the registry has no
    such kernel or it runs as another command, `command`)."""
    from ascendbench.kernels.registry import REGISTRY

    spec = REGISTRY.get(name)
    if spec is None or spec.command is not None:
        return []
    app = typer.Typer()
    add_run_commands(app, [spec])
    return app.registered_commands


def registry_app(group: str) -> typer.Typer:
    """The `run` or `tune` app as the registry stands now: one command made by this module for every registry
    kernel (`run`: `run scan` first, then the others by name; `tune`: the kernels with a search space in the
    registry's order), then the commands of commands/<group>.py that are not a kernel's (`tune plot`). Made anew
    at each call (cli.py calls it when the group is listed), so a kernel registered at run time
    (registry.register_spec) is in it."""
    import importlib

    base = importlib.import_module(f"ascendbench.commands.{group}").app
    app = typer.Typer(help=base.info.help, no_args_is_help=True)
    add_registry_commands(app, group)
    if group == "run":  # `run scan` first, then the others by name (as `run --help` has listed them)
        app.registered_commands.sort(key=lambda c: (c.name != "scan", c.name))
    app.registered_commands += base.registered_commands
    return app
