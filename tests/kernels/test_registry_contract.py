"""The shared contract tests: every kernel of the registry, and a toy kernel added to it at run time (one module,
tests/toy_kernel.py, and one registry line), through the same pipeline, CLI and tuner."""

from __future__ import annotations

import json
import math
import typing
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import ascendbench
from ascendbench.cli import app as cli_app
from ascendbench.commands.generic import registry_app
from ascendbench.hardware import load_profile
from ascendbench.kernels.base import ParamError
from ascendbench.kernels.contract import KernelParams
from ascendbench.kernels.registry import REGISTRY, get_spec, get_tunable, register_spec
from ascendbench.sim.result import SimResult
from ascendbench.store.operators import OperatorRunResult
from ascendbench.tuning.space import load_space, space_path
from tests.toy_kernel import ToyReverseKernel

HW = load_profile("ascend-910b4")
TOY = ToyReverseKernel()
SPECS = [*REGISTRY.values(), TOY]  # the toy is registered for each test of this module (the fixture below)
OPERATORS = [s for s in SPECS if not s.streaming]
STREAMING = [s for s in SPECS if s.streaming]

# A small problem of every kernel (what the contract runs end to end)
SMALL = {
    "scan": {"n": 40_000, "algorithm": "mcscan"}, "batched-scan": {"batch": 3, "length": 5000},
    "segmented-scan": {"n": 30_000}, "split": {"n": 5000}, "split-values": {"n": 5000}, "compress": {"n": 5000},
    "sort": {"n": 3000, "dtype": "int16"}, "topk": {"n": 5000, "k": 100}, "topp": {"vocab": 1000, "batch": 2},
    "sample": {"n": 4000, "samples": 7}, "hgemm": {"m": 64, "n": 48, "k": 32}, "toy-reverse": {"n": 5000},
}


@pytest.fixture(autouse=True)
def toy():
    """The toy kernel of tests/toy_kernel.py in the registry while a test of this module runs."""
    register_spec(TOY)  # the one registry line
    yield TOY
    del REGISTRY[TOY.name]


def test_the_registry_lists_every_kernel_of_the_tool():
    assert set(REGISTRY) == set(SMALL)  # the tool's 11 and the toy
    assert ascendbench.list_kernels() == list(REGISTRY)
    from ascendbench.kernels.registry import choices

    assert set(choices("scan", "algorithm")) == {"mcscan-ul1", "mcscan", "scanu", "scanul1", "vec-cumsum", "memcpy"}
    assert REGISTRY["hgemm"].variants == ("proposed", "gemm-example")


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_every_kernel_declares_the_contract(spec):
    assert spec.title and spec.source and spec.family in ("scan", "row-scan", "operator", "gemm")
    assert issubclass(spec.Params, KernelParams) and spec.inputs
    assert spec.size_field in spec.Params.model_fields
    if spec.variants:
        choices = typing.get_args(spec.Params.model_fields["variant"].annotation)
        assert set(spec.variants) <= set(choices)
        assert spec.Params.model_fields["variant"].default == spec.variants[0]  # the paper's variant by default
    with pytest.raises(ParamError) as err:
        spec.params({**SMALL[spec.name], "no_such_option": 1})
    assert str(err.value) == f"--no-such-option: is not a parameter of {spec.name}"
    with pytest.raises(ParamError) as err:
        spec.params({**SMALL[spec.name], spec.size_field: -1})
    assert str(err.value).startswith(f"--{spec.size_field.replace('_', '-')}: must be")


@pytest.mark.parametrize("spec", [s for s in SPECS if s.space], ids=lambda s: s.name)
def test_a_kernel_with_a_space_is_tunable_and_its_heuristic_is_on_the_grid(spec):
    space = load_space(spec.space_file())
    tunable = get_tunable(spec.space)
    space.check(tunable.check_values())  # every value of the file is one the kernel's model takes
    if spec.tunable_class is not None:
        return  # hgemm, scan, batched-scan: their own problem dicts and heuristics (tests/tuning)
    problem = spec.problem_of(spec.params(SMALL[spec.name]))
    heuristic = tunable.heuristic(problem, HW)
    assert space.to_optuna(heuristic) is not None
    times = [tunable.evaluate(problem, config, HW).time_s for config in space.grid()]
    assert all(t > 0 and math.isfinite(t) for t in times)
    assert tunable.evaluate(problem, heuristic, HW).time_s in times


@pytest.mark.parametrize("spec", OPERATORS, ids=lambda s: s.name)
def test_every_operator_runs_through_the_pipeline(spec):
    run = ascendbench.run(spec.name, seed=3, **SMALL[spec.name])
    doc = run.result
    OperatorRunResult.model_validate(doc.model_dump(mode="json"))  # the document is schema-valid
    assert doc.verification.performed and doc.verification.passed, doc.verification
    assert doc.problem.operator == spec.name and doc.problem.n == spec.size(run.params)
    assert doc.problem.seed == 3 and doc.problem.data == "generated"
    s = doc.simulated
    assert s.time_s > 0 and math.isclose(sum(s.phases_s.values()), s.time_s, rel_tol=1e-9)
    assert s.bandwidth_bytes == spec.bytes_moved(run.params, None if not run.arrays else
                                                 spec.compute(spec.generate(run.params, 3), run.params, 3).facts)
    if spec.variants:
        assert s.baseline is not None and s.baseline["variant"] == spec.variants[1]
    # the same seed gives the same outputs, bit for bit
    again = ascendbench.run(spec.name, seed=3, **SMALL[spec.name])
    for name, array in run.arrays.items():
        assert np.atleast_1d(array).tobytes() == np.atleast_1d(again.arrays[name]).tobytes()
    # the user's own arrays give the same result as the generated ones
    arrays = spec.generate(run.params, 3)
    mine = ascendbench.run(spec.name, arrays=arrays, seed=3, **{k: v for k, v in SMALL[spec.name].items()
                                                             if k not in (spec.size_field, "batch")})
    assert mine.result.simulated.time_s == pytest.approx(s.time_s, rel=1e-12)
    assert mine.result.verification.passed


@pytest.mark.parametrize("spec", OPERATORS, ids=lambda s: s.name)
def test_model_only_runs_need_no_data(spec):
    with pytest.raises(ParamError) as err:
        ascendbench.run(spec.name, model_only=True, arrays={spec.inputs[0].name: np.zeros(3, np.float16)},
                        **SMALL[spec.name])
    assert str(err.value) == "arrays: there is no data with model_only; drop one of them"  # Python's names
    run = ascendbench.run(spec.name, model_only=True, **SMALL[spec.name])
    assert run.arrays is None and run.result.problem.data == "none"
    assert not run.result.verification.performed and run.result.simulated.time_s > 0


@pytest.mark.parametrize("spec", STREAMING, ids=lambda s: s.name)
def test_every_streaming_kernel_runs_through_the_same_entry_point(spec):
    run = ascendbench.run(spec.name, **SMALL[spec.name])
    checks = [shape.verification for shape in run.result.shapes] if spec.family == "gemm" else [run.result.verification]
    assert all(v.performed and v.passed for v in checks)


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_every_kernel_returns_one_kernel_run_with_its_time_verdict_outputs_and_trace(spec):
    run = ascendbench.run(spec.name, seed=2, **SMALL[spec.name])
    assert type(run) is ascendbench.KernelRun and run.spec is spec and run.hw.name == run.result.hardware["name"]
    doc = run.result
    assert run.time_s == (doc.simulated.time_s if isinstance(doc, OperatorRunResult) else doc.metrics["time_s"]) > 0
    assert run.verification.performed and run.verification.passed
    assert run.trace and all(isinstance(sim, SimResult) for sim in run.trace) and run.trace[0] is run.sim
    assert run.arrays and all(isinstance(a, np.ndarray) and a.size for a in run.arrays.values())
    assert doc.command == ["python-api", "run", spec.name]


def test_a_kernel_run_holds_the_parameters_that_ran():
    # sizes and dtype from the data, the algorithm the default chose, HGEMM's shape from its files
    run = ascendbench.run("scan", arrays={"x": np.ones(1000, np.int8)})
    assert (run.params.n, run.params.dtype, run.params.algorithm) == (1000, "int8", "mcscan")
    run = ascendbench.run("batched-scan", arrays={"x": np.ones((2, 500), np.int8)})
    assert (run.params.batch, run.params.length, run.params.dtype) == (2, 500, "int8")
    assert ascendbench.run("segmented-scan", arrays={"values": np.ones(700, np.float16)}).params.n == 700


def test_an_hgemm_workload_run_sums_its_shapes_and_its_verdict():
    run = ascendbench.run("hgemm", workload="fig6", jobs=1, verify=False)
    assert run.time_s == sum(s.time_s for s in run.result.shapes) and len(run.result.shapes) > 1
    assert run.arrays is None and not run.verification.performed and run.verification.passed is None
    with pytest.raises(ParamError, match="^input_file: hgemm takes its matrices as a_file, b_file, c_file$"):
        ascendbench.run("hgemm", m=4, n=4, k=4, input_file=Path("a.npy"))


def test_every_kernel_appears_in_run_and_tune():
    from ascendbench.cli import load_command

    run_group, tune_group = load_command("run"), load_command("tune")  # as `ascendbench run ...` loads them
    assert set(run_group.list_commands(None)) >= {s.command.split()[0] if s.command else s.name for s in SPECS}
    assert set(tune_group.list_commands(None)) >= {s.space for s in SPECS if s.space}

    def names(app) -> set[str]:
        return {c.name or c.callback.__name__ for c in app.registered_commands}

    in_run, in_tune = names(registry_app("run")), names(registry_app("tune"))
    for spec in SPECS:
        assert (spec.command or spec.name).split()[0] in in_run
        if spec.space:
            assert spec.space in in_tune


def test_every_run_command_is_made_by_the_one_builder():
    from ascendbench.commands import run
    from ascendbench.commands.generic import run_parameters

    assert run.app.registered_commands == []  # no hand-written `run <kernel>`
    options = {spec.name: [p.name for p in run_parameters(spec)[0]] for spec in SPECS if spec.command is None}
    assert options["scan"][:6] == ["n", "algorithm", "s", "blocks", "chunk", "exclusive"]  # RunCommand.order
    assert "verify" not in options["scan"] and "input_file" not in options["hgemm"]  # RunCommand.omit
    assert {"workload", "a_file", "b_file", "c_file", "jobs"} <= set(options["hgemm"])  # ExtraOption
    assert {"generator", "partition_limit", "warm_l2"} <= set(options["scan"])


def test_every_tune_command_is_made_by_the_one_builder():
    from ascendbench.commands import tune
    from ascendbench.commands.generic import tune_parameters
    from ascendbench.tuning.session import problem_options

    assert [c.name for c in tune.app.registered_commands] == ["plot"]  # no hand-written `tune <kernel>`
    shared = list(tune.common_options(REGISTRY["scan"]))
    for spec in [s for s in SPECS if s.space]:
        names = [p.name for p in tune_parameters(spec)]
        own = list(problem_options(spec.space))  # what its problems take: no option the tuner would ignore
        assert names == own + shared, spec.name
    assert problem_options("hgemm") == ("m", "n", "k", "batch", "workload", "every_core")  # TuneCommand.order
    assert problem_options("scan") == ("n", "dtype", "exclusive")  # without TuneCommand.omit's out_dtype, l2
    assert REGISTRY["hgemm"].tune_command.extras[0] in REGISTRY["hgemm"].run_command.extras  # one --workload
    # `tune` takes no input arrays: a size's help does not offer them (the model's description does, for `run`)
    sizes = [p for spec in SPECS if spec.space for p in tune_parameters(spec) if p.name in ("n", "vocab", "batch")]
    helps = [typing.get_args(p.annotation)[1].help for p in sizes]
    assert len(helps) >= 5 and not any("input" in h for h in helps), helps


def test_one_bad_option_is_one_line_exit_2(tmp_path):
    out = CliRunner().invoke(cli_app, ["run", "sort", "--n", "100", "--variant", "bitonic", "--no-save"])
    assert out.exit_code == 2 and out.output.strip() == "error: --variant: must be one of mcscan, vector, got 'bitonic'"


# ----- the toy kernel (tests/toy_kernel.py), added at run time ------------------------------------------------
def test_a_new_kernel_is_one_module_and_one_registry_line(toy, tmp_path, monkeypatch):
    # the Python API
    run = ascendbench.run("toy-reverse", n=1000, seed=1)
    assert run.result.verification.passed and get_spec("toy-reverse") is toy
    assert run.arrays["values"].tobytes() == toy.generate(run.params, 1)["values"][::-1].tobytes()
    assert run.result.simulated.baseline["variant"] == "slow" and run.result.simulated.baseline["speedup"] > 1
    # `ascendbench run toy-reverse` and `tune toy-reverse`: the CLI's own app, made from its Params model
    monkeypatch.chdir(tmp_path)
    out = CliRunner().invoke(cli_app, ["run", "toy-reverse", "--n", "2**12", "--dtype", "int8", "--json",
                                       "--no-save"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    assert doc["problem"]["n"] == 4096 and doc["problem"]["operator"] == "toy-reverse"
    assert doc["problem"]["dtypes"] == {"values": "int8"} and doc["verification"]["passed"] is True
    out = CliRunner().invoke(cli_app, ["run", "toy-reverse", "--n", "10", "--variant", "fast", "--no-save"])
    assert out.exit_code == 2 and out.output.strip() == "error: --variant: must be one of copy, slow, got 'fast'"
    out = CliRunner().invoke(cli_app, ["tune", "toy-reverse", "--n", "1e5", "--trials", "2", "--json", "--no-save",
                                       "--storage", str(tmp_path / "s.journal")])
    assert out.exit_code == 0, out.output
    problem = json.loads(out.stdout)["problems"][0]
    assert problem["best"]["config"] == {"variant": "copy"}
    assert problem["exhaustive"]["optimum"]["config"] == {"variant": "copy"}
    assert problem["exhaustive"]["points"] == 2 and problem["exhaustive"]["heuristic_rank"] == 1
    # the listings: `run --help`, `tune --help` and `kernels`
    for group in ("run", "tune"):
        out = CliRunner().invoke(cli_app, [group, "--help"], terminal_width=200)
        assert "toy-reverse" in out.stdout and "Reverse (a toy kernel)" in out.stdout
    rows = json.loads(CliRunner().invoke(cli_app, ["kernels", "--json"]).stdout)
    assert rows[-1]["name"] == "toy-reverse" and rows[-1]["run"] == "ascendbench run toy-reverse"
    assert rows[-1]["tuned"] == ["variant"] and rows[-1]["parameters"] == ["n", "dtype", "variant", "warm_l2"]
    assert not (tmp_path / "results").exists()  # --no-save: no result file


def test_the_toy_runs_options_are_its_fields(toy):
    from ascendbench.cli import load_command

    command = load_command("run").get_command(None, "toy-reverse")
    opts = {p.name: (tuple(p.opts), tuple(p.secondary_opts)) for p in command.params}
    assert list(opts)[:3] == ["n", "dtype", "variant"]  # its fields first, in the model's order
    assert opts["warm_l2"] == (("--warm-l2",), ("--no-warm-l2",)) and opts["model_only"] == (("--model-only",), ())
    shared = {"seed", "input_file", "output_file", "verify", "hardware", "trace", "out", "no_save", "json_out"}
    assert shared < set(opts)


def test_a_kernel_taken_out_of_the_registry_leaves_the_cli(toy):
    del REGISTRY[toy.name]
    try:
        out = CliRunner().invoke(cli_app, ["run", "toy-reverse", "--n", "10", "--no-save"])
        assert out.exit_code == 2 and "No such command 'toy-reverse'" in out.output
    finally:
        register_spec(toy)


def test_the_kernels_command_lists_the_registry():
    out = CliRunner().invoke(cli_app, ["kernels", "--json"])
    assert out.exit_code == 0, out.output
    rows = {r["name"]: r for r in json.loads(out.stdout)}
    assert list(rows) == list(REGISTRY)
    assert rows["sort"]["variants"] == ["mcscan", "vector"] and rows["sort"]["tuned"] == ["variant"]
    assert rows["hgemm"]["variants"] == ["proposed", "gemm-example"]
    assert rows["split-values"]["run"] == "ascendbench run split --no-indices"
    assert rows["segmented-scan"]["tuned"] == []


@pytest.mark.parametrize("values, message", [
    ({"n": True}, "n: must be an integer, got True"),
    ({"n": "10"}, "n: must be an integer, got '10'"),
    ({"n": 10.0}, "n: must be an integer, got 10.0"),
    ({"n": 10, "dtype": "float16"}, ("dtype: must be one of fp16, uint8, uint16, uint32, int8, int16, int32, "
                                     "got 'float16'")),
    ({"arrays": {"values": np.zeros((2, 2), np.int16)}}, "arrays: array 'values' must be 1-D, got shape (2, 2)"),
    ({"arrays": {"keys": np.zeros(3, np.int16)}}, "arrays: unexpected array 'keys'; allowed names: values"),
    ({"n": 10, "seed": -1}, "seed: must be a non-negative integer, got -1"),
    ({"n": 10, "dtyp": "int32"}, "dtyp: is not a parameter of sort; did you mean dtype?"),
    ({"n": 10, "hardwre": "ascend-910b4"}, "hardwre: is not a parameter of sort; did you mean hardware?"),
])
def test_the_python_api_checks_like_the_cli_in_python_names(values, message):
    with pytest.raises(ParamError) as err:
        ascendbench.run("sort", **values)
    assert str(err.value) == message
    assert ascendbench.run("sort", n=np.int64(10)).result.problem.n == 10  # NumPy scalars are numbers


def test_mismatched_input_arrays_are_refused():
    with pytest.raises(ParamError) as err:
        ascendbench.run("split", arrays={"values": np.zeros(3, np.float16), "flags": np.zeros(4, bool)})
    assert str(err.value) == "arrays: array 'flags' must have the length of 'values' (3), got 4"


def test_the_python_api_runs_as_the_cli_does():
    # the default algorithm choice, the dtype of the arrays, the kernel's paper's chip
    assert ascendbench.run("scan", n=1000, dtype="int8").result.kernel == "mcscan"
    over = ascendbench.run("scan", arrays={"x": np.full(1024, 600, np.float16)}).result
    assert over.kernel == "mcscan" and "ran mcscan instead" in over.model["algorithm_choice"]
    assert ascendbench.run("batched-scan", arrays={"x": np.ones((2, 500), np.int8)}).result.verification.passed
    assert ascendbench.run("hgemm", m=64, n=64, k=64).result.hardware["name"] == "atlas-300t-a2"


@pytest.mark.parametrize("call, message", [
    ({"name": "split", "arrays": {"values": np.ones(10, np.float16), "mask": np.ones(10, bool)}},
     "arrays: unexpected array 'mask'; allowed names: values, flags"),
    ({"name": "sort", "n": 10, "model_only": "no"}, "model_only: must be True or False, got 'no'"),
    ({"name": "sort", "arrays": [1, 2]}, "arrays: arrays must map names to arrays, got list"),
    ({"name": "scan", "model_only": True, "arrays": {"x": np.ones(10, np.float16)}},
     "arrays: there is no data with model_only; drop one of them"),
    ({"name": "sortt", "n": 10}, "name: unknown kernel 'sortt' (did you mean 'sort'?); choose from scan, "
                                 "batched-scan, segmented-scan, split, split-values, compress, sort, topk, topp, "
                                 "sample, hgemm, toy-reverse"),  # the toy is registered for this module's tests
    ({"name": "hgemm", "m": 64, "n": 64, "k": 64, "alpha": 1e300}, "alpha: must be representable in fp16 (|alpha| <= 65504)"),
])
def test_the_python_api_refuses_like_the_cli(call, message):
    name = call.pop("name")
    with pytest.raises(ParamError) as err:
        ascendbench.run(name, **call)
    assert str(err.value) == message


STREAMED_DATA = [("scan", {"x": np.ones(10, np.float16)}), ("batched-scan", {"x": np.ones((2, 10), np.float16)}),
                 ("segmented-scan", {"values": np.ones(10, np.float16)}),
                 ("segmented-scan", {"values": np.ones(10, np.float16), "flags": np.zeros(10, bool)})]


@pytest.mark.parametrize("name, data", STREAMED_DATA)
def test_the_streaming_scans_refuse_data_with_model_only(tmp_path, name, data):
    with pytest.raises(ParamError) as err:
        ascendbench.run(name, model_only=True, arrays=data)
    assert str(err.value) == "arrays: there is no data with model_only; drop one of them"
    np.save(tmp_path / "x.npy", next(iter(data.values())))
    with pytest.raises(ParamError) as err:
        ascendbench.run(name, model_only=True, input_file=tmp_path / "x.npy")
    assert str(err.value) == "input_file: there is no data with model_only; drop one of them"


def test_a_buffer_too_small_for_the_tiles_names_the_hardware(tmp_path):
    text = (Path(ascendbench.__file__).parent / "hardware" / "profiles" / "ascend-910b4.toml").read_text()
    profile = tmp_path / "tiny.toml"
    profile.write_text(text.replace("ub_bytes = { value = 196608", "ub_bytes = { value = 16", 1))
    with pytest.raises(ParamError) as err:
        ascendbench.run("sort", n=1000, hardware=str(profile))
    assert str(err.value).startswith("hardware: UB: ") and "too small for the kernel's tiles" in str(err.value)


@pytest.mark.parametrize("args, message", [
    (["tune", "topk", "--k", "10"], "error: --n: is required with the other problem options (or give --problems)"),
    (["tune", "topp", "--vocab", "0"], "error: --vocab: must be at least 1 to tune, got 0"),
    (["tune", "sort", "--n", "10", "--problems", "default"],
     "error: --n: give the problem's options or --problems, not both"),
    (["tune", "scan", "--dtype", "int8"], ("error: --n: is required with --dtype / --exclusive (a problem set gives "
                                           "its own)")),
])
def test_tune_refuses_problem_options_it_would_ignore(tmp_path, args, message):
    out = CliRunner().invoke(cli_app, [*args, "--no-save", "--storage", str(tmp_path / "s.journal")])
    assert out.exit_code == 2 and out.output.strip() == message
    assert list(tmp_path.iterdir()) == []


def test_a_space_files_bad_problem_names_the_entry(tmp_path):
    space = tmp_path / "sort.toml"
    space.write_text('kernel = "sort"\n[parameters.variant]\ntype = "categorical"\nchoices = ["mcscan", "vector"]\n'
                     'default = "mcscan"\n[problems.default]\nparams = [{n = 10}, {n = 10, dtype = "fp64"}]\n'
                     '[problems.tuned]\nparams = [{n = 10, variant = "vector"}]\n')
    out = CliRunner().invoke(cli_app, ["tune", "sort", "--space", str(space), "--no-save"])
    assert out.exit_code == 2 and out.output.strip() == (
        f"error: --problems: {space}: problems.default.params[1]: dtype: must be one of fp16, uint8, uint16, "
        "uint32, int8, int16, int32, got 'fp64'")
    out = CliRunner().invoke(cli_app, ["tune", "sort", "--space", str(space), "--problems", "tuned", "--no-save"])
    assert out.output.strip() == (f"error: --problems: {space}: problems.tuned.params[0]: variant is a tuned "
                                  "parameter of sort, not part of a problem")


def test_a_search_where_nothing_fits_stops_and_a_refused_one_opens_no_storage(tmp_path):
    text = (Path(ascendbench.__file__).parent / "hardware" / "profiles" / "ascend-910b4.toml").read_text()
    tiny = tmp_path / "tiny.toml"
    tiny.write_text(text.replace("ub_bytes = { value = 196608", "ub_bytes = { value = 16", 1))
    out = CliRunner().invoke(cli_app, ["tune", "scan", "--n", "1000", "--trials", "5", "--no-exhaustive", "--json",
                                       "--hardware", str(tiny), "--no-save", "--storage", str(tmp_path / "a.journal")])
    trials = json.loads(out.stdout)["problems"][0]["trials"]
    assert trials["complete"] == 0 and trials["finished"] == 200  # MAX_IDLE_TRIALS without a feasible point
    space = tmp_path / "big.toml"
    space.write_text(space_path("scan").read_text()
                     .replace('high = 24\nbounded_by = "ai_cores"', "high = 10000000"))
    out = CliRunner().invoke(cli_app, ["tune", "scan", "--n", "1e6", "--space", str(space), "--exhaustive",
                                       "--no-save", "--storage", str(tmp_path / "new.journal")])
    assert out.exit_code == 2 and "--exhaustive: the grid of" in out.output
    assert not (tmp_path / "new.journal").exists()
