"""What a new user meets first (issue 16 item 10): a fast --version and --help (the command modules, and NumPy,
Optuna, pydantic and matplotlib with them, load only when a command runs), shell completion, and tables whose
key columns stay whole in an 80-column terminal."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ascendbench.cli import COMMANDS, load_command

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("numpy", "optuna", "matplotlib", "scipy", "pydantic", "sqlalchemy")


def _run(args, cwd, **env):
    return subprocess.run([sys.executable, "-m", "ascendbench.cli", *args], capture_output=True, text=True, cwd=cwd,
                          check=False, env={**os.environ, "PYTHONPATH": str(ROOT), **env})


@pytest.mark.parametrize("args", [["--version"], ["--help"], []])
def test_version_and_help_import_no_heavy_package(tmp_path, args):
    code = ("import sys\n"
            f"sys.argv = ['ascendbench', *{args!r}]\n"
            "from ascendbench.cli import main\n"
            "try:\n    main()\nexcept SystemExit as exc:\n    code = exc.code\n"
            f"print('LOADED', sorted({{m.split('.')[0] for m in sys.modules}} & {set(HEAVY)!r}), code)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, check=False,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.stdout.strip().splitlines()[-1] == "LOADED [] 0", proc.stdout + proc.stderr
    if args == ["--version"]:
        assert proc.stdout.startswith("ascendbench 0.1.0\n")


def test_the_command_listing_starts_each_commands_own_help():
    for name, (_, _, start) in COMMANDS.items():
        real = " ".join(load_command(name).help.split())
        assert real.startswith(start.rstrip(".")), name


def test_help_lists_every_command_and_completion(tmp_path):
    out = _run(["--help"], tmp_path, COLUMNS="100")
    assert out.returncode == 0
    assert re.findall(r"│ (\w+) {2,}", out.stdout.split("Commands")[1]) == list(COMMANDS)
    assert "--install-completion" in out.stdout and "--show-completion" in out.stdout
    sub = _run(["run", "--help"], tmp_path, COLUMNS="100")
    assert "Usage: ascendbench run [OPTIONS] COMMAND" in sub.stdout and "--install-completion" not in sub.stdout
    assert {"scan", "batched-scan", "hgemm", "topp"} <= set(re.findall(r"│ ([\w-]+) {2,}", sub.stdout))


def test_shell_completion(tmp_path):
    # typer takes the shell named here only with detection off; otherwise it asks shellingham, which finds no
    # shell when the suite runs detached (nohup, a service)
    script = _run(["--show-completion", "bash"], tmp_path, _TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION="1")
    assert script.returncode == 0
    assert "complete -o default -F _ascendbench_completion ascendbench" in script.stdout
    for words, cword, expected in (("ascendbench ru", "1", "run"), ("ascendbench run batched", "2", "batched-scan"),
                                   ("ascendbench run scan --alg", "3", "--algorithm")):
        out = _run([], tmp_path, _ASCENDBENCH_COMPLETE="complete_bash", COMP_WORDS=words, COMP_CWORD=cword)
        assert out.stdout.split() == [expected], (words, out.stdout, out.stderr)


NARROW = [
    (["hardware", "list"], ["ascend-910b4", "atlas-300t-a2"]),
    (["hgemm", "select", "--m", "4096", "--n", "102400", "--k", "4096"], ["256x128", "128x128", "16x16"]),
    (["run", "hgemm", "--workload", "fig6", "--no-save"], ["256x128x128", "128x128x256", "32768"]),
    (["tune", "hgemm", "--m", "4096", "--n", "102400", "--k", "4096", "--trials", "3", "--no-exhaustive",
      "--no-save", "--storage", "s.journal"], ["4096x102400x4096"]),
    (["reproduce", "list"], ["fig4.2", "table5"]),
    (["kernels"], ["segmented-scan", "batched-scan", "split-values"]),
]


def test_results_show_and_compare_keep_their_problems_whole_at_80_columns(tmp_path):
    assert _run(["run", "hgemm", "--workload", "llama2-qk", "--out", "w.json"], tmp_path).returncode == 0
    for args in (["results", "show", "w.json"], ["results", "compare", "w.json", "w.json"]):
        out = _run(args, tmp_path, COLUMNS="80")
        assert out.returncode == 0, out.stderr
        table = [line for line in out.stdout.splitlines() if line[:1] in "┏┃┡│└"]  # (command: is not wrapped)
        assert table and max(len(line) for line in table) <= 80 and "…" not in out.stdout, out.stdout
        assert "│ hgemm 2048x128x2048 " in out.stdout, out.stdout


@pytest.mark.parametrize("args, keys", NARROW)
def test_key_columns_are_whole_at_80_columns(tmp_path, args, keys):
    out = _run(args, tmp_path, COLUMNS="80")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    # a command to copy (tune's deployable `ascendbench run ...`) is on a line of its own and never wrapped
    wrapped = [line for line in lines if not line.startswith("  ascendbench ")]
    assert max(len(line) for line in wrapped) <= 80 and "…" not in out.stdout, out.stdout
    for key in keys:
        assert any(f"│ {key} " in line or f" {key} │" in line for line in lines), (key, out.stdout)


def test_a_ctrl_c_while_the_command_line_machinery_loads_ends_with_one_line(tmp_path):
    # the console script's entry point; the SIGINT arrives in the middle of `import typer`, as a Ctrl-C in the
    # first 0.1-0.2 s of any command does (it gave a KeyboardInterrupt traceback)
    code = ("import builtins, os, signal, sys\n"
            "real = builtins.__import__\n"
            "def hooked(name, *args, **kwargs):\n"
            "    if name == 'typer':\n"
            "        os.kill(os.getpid(), signal.SIGINT)\n"
            "    return real(name, *args, **kwargs)\n"
            "builtins.__import__ = hooked\n"
            "sys.argv = ['ascendbench', '--version']\n"
            "from importlib.metadata import entry_points\n"
            "(script,) = [e for e in entry_points(group='console_scripts') if e.name == 'ascendbench']\n"
            "script.load()()\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, check=False,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60)
    assert (proc.returncode, proc.stderr, proc.stdout) == (130, "interrupted\n", "")


@pytest.mark.parametrize("path", [[], ["run"], ["run", "scan"], ["run", "sort"], ["tune"], ["tune", "hgemm"],
                                  ["tune", "topk"], ["results", "list"], ["hardware", "show"], ["hgemm", "select"],
                                  ["validate"], ["kernels"], ["reproduce"], ["correlate"]])
def test_short_h_prints_the_same_help_as_long_help(path):
    from typer.testing import CliRunner

    from ascendbench.cli import app

    runner = CliRunner()
    short, long = runner.invoke(app, [*path, "-h"]), runner.invoke(app, [*path, "--help"])
    assert short.exit_code == long.exit_code == 0 and "Usage: ascendbench" in long.output
    assert short.output == long.output
