"""A built wheel, installed into a fresh virtual environment, tunes and selects: every data file the tuner
reads (search spaces, the learned selector, profiles, workloads) ships inside the package."""

import json
import os
import site
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run(cmd, cwd, timeout=600):
    # without PYTHONPATH: a checkout on it (as when testing a worktree) would be imported instead of the wheel
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False, env=env)
    assert done.returncode == 0, f"{cmd}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    return done


def _our_site_dirs() -> list[str]:
    """The folders this interpreter installs packages into (its site-packages, and the user's where enabled):
    those of the virtual environment when the suite runs in one, as README's route does."""
    dirs = site.getsitepackages() + ([site.getusersitepackages()] if site.ENABLE_USER_SITE else [])
    return [d for d in dirs if Path(d).is_dir()]


def _fresh_venv_seeing_our_dependencies(venv: Path, cwd: Path) -> None:
    """A new venv whose dependencies come from this interpreter's site-packages, appended to its sys.path by a
    .pth file (their own .pth files, as an editable install's finder, are not run: the package itself can only
    come from the wheel). `venv --system-site-packages` would not do: from inside a venv it adds the base
    interpreter's site-packages, which lack what was installed in the venv (typer, ...)."""
    _run([sys.executable, "-m", "venv", str(venv)], cwd)
    inner = _run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                 cwd).stdout.strip()
    (Path(inner) / "_outer_site_packages.pth").write_text("".join(f"{d}\n" for d in _our_site_dirs()))


def test_a_built_wheel_in_a_fresh_venv_runs_tune_hgemm(tmp_path):
    wheels = tmp_path / "wheels"
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(ROOT)], tmp_path)
    (wheel,) = wheels.glob("ascendbench-*.whl")
    venv = tmp_path / "venv"
    _fresh_venv_seeing_our_dependencies(venv, tmp_path)
    python = venv / "bin" / "python"
    _run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--force-reinstall", str(wheel)], tmp_path)
    where = _run([str(python), "-c", "import ascendbench; print(ascendbench.__file__)"], tmp_path).stdout
    assert where.strip().startswith(str(venv)), where  # not the checkout's (editable) copy
    work = tmp_path / "work"
    work.mkdir()
    out = _run([str(venv / "bin" / "ascendbench"), "tune", "hgemm", "--m", "512", "--n", "512", "--k", "512",
                "--trials", "5", "--no-exhaustive", "--no-save", "--json"], work)
    doc = json.loads(out.stdout)
    assert doc["problems"][0]["trials"]["evaluated"] == 5 and doc["space"]["path"].startswith(str(venv))
    sel = _run([str(venv / "bin" / "ascendbench"), "hgemm", "select", "--m", "512", "--n", "512", "--k", "512",
                "--selector", "learned", "--json"], work)
    assert len(json.loads(sel.stdout)["tile"]) == 3
