"""`run <kernel>` and `tune <kernel>` for every registry kernel without a command of its own: the options are
made from the kernel's Params model (one option per field, its description as help), so a kernel added to the
registry appears in both without further edits.

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
from ascendbench.kernels.contract import KernelSpec

__all__ = ["add_registry_commands", "add_run_commands", "add_tune_commands"]


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


def _option(spec: KernelSpec, name: str, field: FieldInfo) -> inspect.Parameter:
    """A typer option for one field of spec's Params model (int fields with the count parser, count_option;
    bool fields spelled by spec.flag, as the hand-written commands spell them)."""
    annotation, optional = _base(field.annotation)
    flag, *aliases = spec.options(name)
    help_text = (field.description or "").rstrip(".")
    required = field.is_required()
    default = None if required or optional else field.default
    kind: Any = annotation
    choices = typing.get_args(annotation) if typing.get_origin(annotation) is Literal else ()
    if choices:
        listed = ", ".join(map(str, choices))
        help_text = f"{help_text}: {listed}" if help_text else listed
        kind = int if all(isinstance(c, int) for c in choices) else str
    if default is not None and annotation is not bool:
        help_text += f" (default: {default})"
    help_text = help_text[:1].upper() + help_text[1:] + "."
    if choices:
        option = choice_option(flag, *aliases, choices=choices, help=help_text, show_default=False)
    elif annotation is int:
        option = count_option(flag, *aliases, help=help_text, show_default=False)
    else:
        option = typer.Option(flag, *aliases, help=help_text, show_default=False)
    if not (required or annotation is bool or default is not None):
        kind = kind | None
    return _parameter(name, kind, option, ... if required else default)


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


def add_run_commands(app: typer.Typer, specs: list[KernelSpec]) -> None:
    """A `run <name>` command for each kernel in specs (kernels without a hand-written command)."""
    from ascendbench.commands.common import HardwareOption, JsonOption, NoSaveOption, TraceOption
    from ascendbench.hardware import DEFAULT_SCAN_HARDWARE

    for spec in specs:
        fields = list(spec.Params.model_fields)
        common = {
            "seed": (Annotated[int, count_option("--seed", help="Seed of the generated inputs.")], 0),
            "input_file": (Annotated[Path | None, typer.Option(
                "--input", help="Inputs: a 1-D .npy (the first input) or a .npz with arrays "
                + ", ".join(repr(i.name) for i in spec.inputs) + ".")], None),
            "output_file": (Annotated[Path | None, typer.Option("--output-file", help="Save the outputs as .npz.")],
                            None),
            "verify": (Annotated[bool, typer.Option("--verify/--no-verify", help="Compare with the NumPy "
                                                                                "reference.")], True),
            "model_only": (Annotated[bool, typer.Option("--model-only", help="Timings and counters only, no "
                                                                             "data.")], False),
            "hardware": (HardwareOption, DEFAULT_SCAN_HARDWARE if spec.family != "gemm" else "atlas-300t-a2"),
            "trace": (TraceOption, None),
            "out": (Annotated[Path | None, typer.Option("--out", help=f"Result JSON path (default: results/runs/"
                                                                      f"{spec.name}/<time>-<id>.json).")], None),
            "no_save": (NoSaveOption, False),
            "json_out": (JsonOption, False),
        }
        params = [_option(spec, name, spec.Params.model_fields[name]) for name in fields]
        params += [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=kind, default=default)
                   for name, (kind, default) in common.items()]

        def command(_spec: KernelSpec = spec, _fields: list[str] = fields, **options: Any) -> None:
            from ascendbench.commands.operator_common import execute, finish, load_arrays, prepare

            wall0 = time.perf_counter()
            input_file, output_file = options["input_file"], options["output_file"]
            hw = prepare(input_file=input_file, output_file=output_file, output_suffix=".npz", trace=options["trace"],
                         out=options["out"], no_save=options["no_save"], seed=options["seed"],
                         hardware=options["hardware"])
            names = tuple(i.name for i in _spec.inputs)
            arrays, sha = load_arrays(input_file, names, names[0]) if input_file else (None, None)
            run = execute(_spec.name, arrays=arrays, sha=sha, input_file=input_file, hw=hw, seed=options["seed"],
                          verify=options["verify"], model_only=options["model_only"],
                          **_values(_spec, _fields, options))
            finish(run, wall0, output_file=output_file, trace=options["trace"], out=options["out"],
                   no_save=options["no_save"], json_out=options["json_out"])

        _register(app, spec, command, params, f"{spec.title} ({spec.source}).")


def add_tune_commands(app: typer.Typer, specs: list[KernelSpec]) -> None:
    """A `tune <name>` command for each kernel in specs with a search space (kernels without a hand-written one):
    one problem from the options, or a problem set of the space file (--problems)."""
    from ascendbench.commands import tune as tune_module

    for spec in specs:
        tuned = set(spec.tuned())
        fields = [name for name in spec.Params.model_fields if name not in tuned]
        # every problem option optional here: the problem may come from a problem set of the space file
        params = [_optional(_option(spec, name, spec.Params.model_fields[name])) for name in fields]
        params += [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=kind, default=default)
                   for name, (kind, default) in tune_module.common_options(spec).items()]

        def command(_spec: KernelSpec = spec, _fields: list[str] = fields, **options: Any) -> None:
            space = tune_module._space(_spec.space, options["space"])  # the problems: tuning/session.py
            problems, _ = tune_module._problems(_spec.space, space, options["problems"],
                                                **_values(_spec, _fields, options))
            tune_module.run_tune(_spec.space, problems, space, options)

        _register(app, spec, command, params, f"Tune {spec.title} ({', '.join(sorted(tuned))}) on the timing model "
                                              "and compare with the paper's choice.")


def _optional(parameter: inspect.Parameter) -> inspect.Parameter:
    """The option with None as its default (a required option made optional)."""
    kind, option = typing.get_args(parameter.annotation)
    return parameter.replace(annotation=Annotated[kind | None, option], default=None)


def _register(app: typer.Typer, spec: KernelSpec, command, params: list[inspect.Parameter], doc: str) -> None:
    def entry(**options: Any) -> None:
        command(**options)

    entry.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    entry.__annotations__ = {p.name: p.annotation for p in params} | {"return": None}
    entry.__doc__ = doc
    entry.__name__ = spec.name.replace("-", "_")
    app.command(spec.name)(entry)


def add_registry_commands(app: typer.Typer, group: str) -> None:
    """Add to the `run` (group "run") or `tune` (group "tune") app a command for every registry kernel that has
    none there yet (for tune: every kernel with a search space). Adding again adds nothing."""
    from ascendbench.kernels.registry import REGISTRY

    have = {c.name or c.callback.__name__ for c in app.registered_commands}
    if group == "run":
        add_run_commands(app, [s for s in REGISTRY.values() if s.name not in have and s.command is None])
    else:
        add_tune_commands(app, [s for s in REGISTRY.values() if s.space is not None and s.space not in have])
