"""A built wheel, installed into a fresh virtual environment, tunes and selects: every data file the tuner
reads (search spaces, the learned selector, profiles, workloads) ships inside the package."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run(cmd, cwd, timeout=600):
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, f"{cmd}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    return done


def test_a_built_wheel_in_a_fresh_venv_runs_tune_hgemm(tmp_path):
    wheels = tmp_path / "wheels"
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(ROOT)], tmp_path)
    (wheel,) = wheels.glob("ascendbench-*.whl")
    venv = tmp_path / "venv"
    # the dependencies come from this interpreter's site-packages; the package itself only from the wheel
    _run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], tmp_path)
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
