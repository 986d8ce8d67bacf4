"""One spelling per option (issue 30 item 2): `run <kernel>` and `tune <kernel>` declare a kernel's parameters
alike (KernelSpec.options), and choices are offered by shell completion.

The command tree is walked through typer.main.get_command with duck typing (p.opts, p.secondary_opts): newer
typer versions bundle their own click, so click's classes are not checked for."""

import pytest
import typer.main

from ascendbench.cli import app
from ascendbench.kernels.registry import REGISTRY

ROOT = typer.main.get_command(app)
CTX = ROOT.context_class(ROOT, info_name="ascendbench")


def group(name):
    return ROOT.get_command(CTX, name)


def options(command) -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    """Parameter name -> (its options, its False options) of a command."""
    return {p.name: (tuple(p.opts), tuple(p.secondary_opts)) for p in command.params}


def declared(spec, field) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(options, False options) of a field as KernelSpec.options declares it."""
    decls = spec.options(field)
    if "/" in decls[0]:
        true, false = decls[0].split("/")
        return (true,), (false,)
    return decls, ()


RUN, TUNE = group("run"), group("tune")
BOTH = sorted(set(RUN.list_commands(CTX)) & set(TUNE.list_commands(CTX)))


def test_the_kernels_with_a_tune_command_have_a_run_command():
    assert BOTH == ["batched-scan", "hgemm", "sample", "scan", "sort", "topk", "topp"]


@pytest.mark.parametrize("kernel", BOTH)
def test_run_and_tune_spell_every_shared_option_alike(kernel):
    run, tune = options(RUN.get_command(CTX, kernel)), options(TUNE.get_command(CTX, kernel))
    shared = sorted(set(run) & set(tune))
    assert {"hardware", "seed", "out", "no_save", "json_out"} <= set(shared)
    assert {name: run[name] for name in shared} == {name: tune[name] for name in shared}
    spec = REGISTRY[kernel]
    for name in set(spec.Params.model_fields) & set(tune):  # the problem's parameters: as the kernel declares them
        assert tune[name] == declared(spec, name), name


@pytest.mark.parametrize("kernel, field, spelling", [
    ("sort", "descending", ("--descending", "--ascending")),
    ("topk", "largest", ("--largest", "--smallest")),
    ("scan", "exclusive", ("--exclusive", "--inclusive")),
    ("batched-scan", "exclusive", ("--exclusive", "--inclusive")),
    ("sort", "warm_l2", ("--warm-l2", "--no-warm-l2")),
    ("topp", "warm_l2", ("--warm-l2", "--no-warm-l2")),
])
def test_the_field_terms_are_the_spellings(kernel, field, spelling):
    for app_group in (RUN, TUNE):
        opts, secondary = options(app_group.get_command(CTX, kernel))[field]
        assert (opts[0], secondary[0]) == spelling


def test_every_run_command_has_warm_l2_both_ways():
    for name in RUN.list_commands(CTX):
        assert options(RUN.get_command(CTX, name))["warm_l2"] == (("--warm-l2",), ("--no-warm-l2",)), name
