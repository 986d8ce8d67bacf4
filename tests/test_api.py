"""The typed Python API beside `ascendbench.run` (issue 30 item 3): `ascendbench.tune` returns what `tune --json`
prints, `ascendbench.kernels.get` gives a kernel's parameter model, and errors name Python's keyword arguments
with a suggestion while the CLI keeps its option spellings."""

from __future__ import annotations

import pickle
import typing

import pytest
from typer.testing import CliRunner

import ascendbench
from ascendbench.cli import app
from ascendbench.kernels import ParamError
from ascendbench.kernels.contract import KernelSpec
from tests.tuning.test_report import _cli as _cli_json  # the JSON a command prints, run in a folder

# wall-clock fields (and when and how the run was asked for): the only keys that differ between two runs
_CLOCK = {"created_at", "command", "wall_time_s", "wall_s", "model_s", "replay_s", "sampler_s", "check_s",
          "storage_s", "other_s", "search_wall_s"}


def _without_clock(value):
    if isinstance(value, dict):
        return {k: _without_clock(v) for k, v in value.items() if k not in _CLOCK}
    if isinstance(value, list):
        return [_without_clock(v) for v in value]
    return value


@pytest.mark.parametrize("kernel, problem, options", [
    ("scan", {"n": 10**6}, ["--n", "1e6"]),
    ("sort", {"n": 1000, "dtype": "int32", "descending": True}, ["--n", "1000", "--dtype", "int32", "--descending"]),
])
def test_tune_returns_the_summary_tune_json_prints(tmp_path, monkeypatch, kernel, problem, options):
    (tmp_path / "cli").mkdir()
    (tmp_path / "api").mkdir()
    cli = _cli_json(tmp_path / "cli", ["tune", kernel, *options, "--trials", "6", "--seed", "3", "--no-exhaustive",
                                       "--storage", "s.journal", "--no-save", "--json"])
    monkeypatch.chdir(tmp_path / "api")  # its own storage and evaluation store: both runs simulate every trial
    api = ascendbench.tune(kernel, **problem, trials=6, seed=3, exhaustive=False, storage="s.journal")
    assert api["command"] == ["python-api", "tune", kernel]
    assert list(api) == list(cli) and _without_clock(api) == _without_clock(cli)
    assert api["problems"][0]["trials"]["evaluated"] == cli["problems"][0]["trials"]["evaluated"] >= 2
    assert sorted(p.name for p in (tmp_path / "api").iterdir()) == ["evaluations.sqlite", "s.journal"]  # no result


@pytest.mark.parametrize("kernel, arguments, message", [
    ("sort", {"n": 1000, "trails": 5}, "trails: is not an argument of tune('sort'); did you mean trials?"),
    ("sort", {"nn": 1000}, "nn: is not an argument of tune('sort'); did you mean n?"),
    ("sort", {"n": 1000, "trials": 0}, "trials: must be at least 1, got 0"),
    ("sort", {"n": 1000, "trials": "5"}, "trials: must be an integer, got '5'"),
    ("sort", {"n": 1000, "study_name": " "}, "study_name: must not be empty"),
    ("sort", {"n": 1000, "dtype": "float16"}, ("dtype: must be one of fp16, uint8, uint16, uint32, int8, int16, "
                                               "int32, got 'float16'")),
    ("sort", {"n": 1000, "problems": "default"}, "n: give the problem's options or problems, not both"),
    ("sort", {"dtype": "int8"}, "n: is required with the other problem options (or give problems)"),
    ("sort", {"n": 1000, "sampler": "tpee"}, "sampler: must be one of tpe, random, gp, grid, got 'tpee'"),
    ("sort", {"n": 1000, "storage": ""}, ("storage: must not be empty; give a journal file path (default "
                                          "results/tuning/studies.journal) or an RDB URL such as sqlite:///studies.db")),
    ("hgemm", {"m": 64, "n": 64}, "m: give m, n and k together (or workload / problems)"),
    ("hgemm", {"workload": "nope"}, "workload: unknown workload 'nope'; choose from "),
    ("hgemm", {"problems": ""}, "problems: must name a problem set of "),
    ("scan", {"dtype": "int8"}, "n: is required with dtype / exclusive (a problem set gives its own)"),
    ("scan", {"n": 1000, "hardware": "nope"}, "hardware: unknown profile 'nope'; use one of "),
    ("sortt", {"n": 1000}, "kernel: unknown tunable kernel 'sortt' (did you mean 'sort'?); choose from scan, "
                           "batched-scan, sort, topk, topp, sample, hgemm"),
    ("split", {"n": 1000}, "kernel: split has no search space; choose from scan, "),
])
def test_a_bad_tune_argument_is_a_param_error_in_python_names(tmp_path, monkeypatch, kernel, arguments, message):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ParamError) as err:
        ascendbench.tune(kernel, **arguments)
    assert str(err.value).startswith(message) and "--" not in str(err.value)
    assert list(tmp_path.iterdir()) == []  # refused before a storage was made


def test_the_cli_keeps_its_option_spellings(tmp_path):
    out = CliRunner().invoke(app, ["tune", "sort", "--n", "1000", "--study-name", " ", "--no-save"])
    assert out.exit_code == 2 and "--study-name: must not be empty" in out.output


def test_a_kernels_parameter_model_is_reachable_and_typed():
    sort = ascendbench.kernels.get("sort")
    hints = typing.get_type_hints(ascendbench.kernels.get, localns={"KernelSpec": KernelSpec})  # an IDE's view
    assert isinstance(sort, KernelSpec) and hints["return"] is KernelSpec
    params = sort.Params(n=1000, dtype="int32")
    assert (params.n, params.dtype, params.descending) == (1000, "int32", False)
    assert ascendbench.kernels.get("hgemm").Params.model_fields["m"].annotation is not None
    with pytest.raises(ParamError) as err:
        ascendbench.kernels.get("topkk")
    assert str(err.value).startswith("name: unknown kernel 'topkk' (did you mean 'topk'?); choose from scan, ")


def test_a_param_error_keeps_its_spelling_across_processes():
    err = ParamError("model-only", "there is no data with --model-only", suggestion="dtype")
    assert str(pickle.loads(pickle.dumps(err))) == "--model-only: there is no data with --model-only; did you mean --dtype?"
    python = pickle.loads(pickle.dumps(err.in_python_names()))
    assert str(python) == "model_only: there is no data with model_only; did you mean dtype?"
    assert (python.param, python.detail) == ("model-only", "there is no data with --model-only")


def test_a_fresh_import_reaches_kernels_and_tune():
    import subprocess
    import sys

    code = ("import ascendbench, inspect; print(ascendbench.kernels.get('sort').Params.__name__, "
            "'trials' in inspect.signature(ascendbench.tune).parameters)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["SortParams", "True"]
