"""One spelling per option (issue 30 item 2): `run <kernel>` and `tune <kernel>` declare a kernel's parameters
alike (KernelSpec.options), and choices are offered by shell completion.

The command tree is walked through typer.main.get_command with duck typing (p.opts, p.secondary_opts): newer
typer versions bundle their own click, so click's classes are not checked for."""

import tomllib

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


def commands():
    """(path, command) of every leaf command (the registry's `run` and `tune` commands included)."""
    out, todo = [], [((), ROOT)]
    while todo:
        path, command = todo.pop()
        if hasattr(command, "list_commands"):
            todo += [((*path, name), command.get_command(CTX, name)) for name in command.list_commands(CTX)]
        else:
            out.append((" ".join(path), command))
    return sorted(out, key=lambda pc: pc[0])


def completions(command, name: str, incomplete: str = "") -> list[str]:
    param = next(p for p in command.params if p.name == name)
    return [getattr(item, "value", item) for item in param.shell_complete(CTX, incomplete)]


def expected_choices() -> list[tuple[str, str, tuple]]:
    """(command, parameter, the values completion offers) of every choice this test knows of."""
    from ascendbench.hardware import list_profiles
    from ascendbench.kernels.partition import GENERATORS
    from ascendbench.kernels.registry import choices
    from ascendbench.plotting import FORMATS
    from ascendbench.reference.figures import FIGURES
    from ascendbench.store.export import ROW_KINDS
    from ascendbench.tuning.space import space_path
    from ascendbench.tuning.study import SAMPLERS
    from ascendbench.workloads import list_workloads

    out = []
    for path, command in commands():
        names = {p.name for p in command.params}
        if path.startswith(("run ", "tune ")) and path.split()[1] in REGISTRY:  # the kernel's Literal fields
            kernel = path.split()[1]
            out += [(path, f, tuple(choices(kernel, f))) for f in REGISTRY[kernel].Params.model_fields
                    if f in names and choices(kernel, f)]
        if "hardware" in names and path != "validate":  # validate's is CHIP=PROFILE: test_validate_hardware...
            out.append((path, "hardware", tuple(list_profiles())))
        if "sampler" in names:
            out.append((path, "sampler", SAMPLERS))
        if "workload" in names:
            out.append((path, "workload", tuple(list_workloads())))
        if path in ("reproduce", "tune plot"):
            out.append((path, "formats", FORMATS))
        if path.startswith("tune ") and "problems" in names:  # the sets of the kernel's shipped space file
            sets = tomllib.loads(space_path(path.split()[1]).read_text())["problems"]
            out.append((path, "problems", tuple(sets)))
    out += [("run scan", "chunk", ("auto", "off")), ("run scan", "generator", GENERATORS), ("results export", "rows", ROW_KINDS),
            ("hgemm select", "selector", ("paper", "learned")), ("hardware show", "name", tuple(list_profiles())),
            ("reproduce", "target", (*FIGURES, "all", "list"))]
    return out


def test_completion_offers_every_choice():
    by_path = dict(commands())
    table = expected_choices()
    assert len(table) >= 60  # every command's choices, not an empty walk
    kinds = {name for _, name, _ in table}
    assert {"algorithm", "dtype", "variant", "s", "hardware", "sampler", "formats", "target", "rows", "problems",
            "chunk"} <= kinds
    for path, name, values in table:
        assert completions(by_path[path], name) == [str(v) for v in values], (path, name)


def test_validate_hardware_completes_a_chip_then_its_profile():
    from ascendbench.hardware import list_profiles

    validate = dict(commands())["validate"]
    assert completions(validate, "hardware") == ["ascend-910b4=", "atlas-300t-a2="]
    assert completions(validate, "hardware", "atl") == ["atlas-300t-a2="]
    assert completions(validate, "hardware", "ascend-910b4=ascend-910b") == [
        f"ascend-910b4={p}" for p in list_profiles() if p.startswith("ascend-910b")]
    assert completions(validate, "hardware", "nope=a") == []


def test_completion_narrows_to_what_was_typed():
    by_path = dict(commands())
    assert completions(by_path["run scan"], "algorithm", "mcscan") == ["mcscan-ul1", "mcscan"]
    assert completions(by_path["run sort"], "dtype", "uint") == ["uint8", "uint16", "uint32"]
    assert completions(by_path["tune scan"], "hardware", "atlas") == ["atlas-300t-a2"]
    assert completions(by_path["tune hgemm"], "problems", "f") == ["fig6"]
    assert completions(by_path["run scan"], "chunk", "o") == ["off"]
    # --only takes comma-separated claim IDs: the part after the last comma is completed
    assert completions(by_path["validate"], "only", "S-4,G-1") == ["S-4,G-1", "S-4,G-10", "S-4,G-11"]


def test_bash_completion_lists_the_algorithms():
    import os
    import subprocess
    import sys
    from pathlib import Path

    from ascendbench.kernels.registry import choices

    env = {**os.environ, "_ASCENDBENCH_COMPLETE": "complete_bash", "COMP_WORDS": "ascendbench run scan --algorithm ",
           "COMP_CWORD": "4", "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    out = subprocess.run([sys.executable, "-m", "ascendbench.cli"], env=env, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == list(choices("scan", "algorithm"))


@pytest.mark.parametrize("args, message", [
    (["run", "scan", "--n", "10", "--l2", "hot"], "--l2: must be one of flushed, clean, warm, got 'hot'"),
    (["run", "sort", "--n", "10", "--variant", "bitonic"], "--variant: must be one of mcscan, vector, got 'bitonic'"),
    (["run", "topp", "--vocab", "10", "--s", "2**5+1"], "--s: must be one of 16, 32, 64, 128, got 33"),
    (["tune", "topk", "--n", "10", "--k", "1", "--dtype", "bf16"],
     "--dtype: must be one of fp16, uint8, uint16, uint32, int8, int16, int32, got 'bf16'"),
    (["hgemm", "select", "--m", "1", "--n", "1", "--k", "1", "--selector", "ml"],
     "--selector: must be one of paper, learned, got 'ml'"),
    (["reproduce", "all", "--format", "png", "--format", "gif"], "--format: must be one of png, svg, pdf, got 'gif'"),
])
def test_a_value_outside_the_choices_is_one_line_naming_the_option(tmp_path, cli, args, message):
    out = cli(args, tmp_path)
    assert out.exit_code == 2
    assert [line for line in out.output.splitlines() if line.strip()] == [f"error: {message}"]
    assert list(tmp_path.iterdir()) == []
