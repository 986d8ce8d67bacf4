"""--jobs worker processes: how many may start, and that every stop is prompt and clean (a Ctrl-C while they
start up, one of them SIGKILLed, a Ctrl-C of run hgemm's pool). Real processes: the command in a subprocess,
signals at chosen moments."""

import json
import os
import signal
import subprocess
import sys
import time

import optuna
import pytest
from typer.testing import CliRunner

from ascendbench.processes import jobs_error, max_jobs, usable_cores
from tests.faults import alive as _alive
from tests.faults import workers_of as _workers

TUNE = [sys.executable, "-m", "ascendbench.cli", "tune", "hgemm", "--m", "1024", "--n", "256", "--k", "512",
        "--trials", "100000", "--jobs", "2", "--no-exhaustive", "--storage", "j.journal", "--out", "r.json"]


def _trials(folder) -> list[optuna.trial.FrozenTrial]:
    journal = folder / "j.journal"
    if not journal.exists():
        return []
    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(journal)))
    try:
        return optuna.load_study(study_name=None, storage=storage).get_trials(deepcopy=False)
    except (KeyError, ValueError):  # no study yet
        return []


def _wait(condition, proc, what: str, limit_s: float = 60.0):
    deadline = time.monotonic() + limit_s
    while not (found := condition()):
        assert proc.poll() is None and time.monotonic() < deadline, f"{what} did not happen"
        time.sleep(0.02)
    return found


def _end(proc, limit_s: float = 20.0) -> tuple[str, str]:
    """The outputs of proc once it ends: within limit_s seconds, else it and its group are killed."""
    try:
        return proc.communicate(timeout=limit_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise AssertionError(f"the command was still running {limit_s} s after the signal") from None


def _assert_gone(pids: list[int]) -> None:
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [p for p in pids if _alive(p)], "a worker process outlived the command"


def test_more_workers_than_four_per_usable_core_are_refused_in_one_line(tmp_path, monkeypatch):
    from ascendbench.cli import app

    cores, most = usable_cores(), max_jobs()
    assert most == 4 * cores and jobs_error(most) is None and jobs_error(0) == "must be at least 1, got 0"
    runner = CliRunner()
    monkeypatch.chdir(tmp_path)
    shape = ["--m", "256", "--n", "256", "--k", "256"]
    for args, jobs in ((["tune", "hgemm", *shape, "--trials", "1"], most + 1),
                       (["tune", "scan", "--n", "1e6", "--trials", "1"], 10**6),
                       (["run", "hgemm", *shape], 10**6)):
        out = runner.invoke(app, [*args, "--jobs", "1e6" if jobs == 10**6 else str(jobs)])
        assert out.exit_code == 2, out.output
        assert out.output.strip() == (f"error: --jobs: must be at most {most} (4 per core this process may "
                                      f"use, {cores} here), got {jobs:,}"), out.output
    assert not (tmp_path / "results").exists()  # refused before anything was stored or written

    import ascendbench
    from ascendbench.kernels import ParamError
    from ascendbench.tuning.space import space_path
    from ascendbench.tuning.study import TuneError, TuneRequest, tune_problem

    with pytest.raises(ParamError, match=f"^jobs: must be at most {most} "):  # the Python API's name
        ascendbench.run("hgemm", m=256, n=256, k=256, jobs=most + 1)
    request = TuneRequest("hgemm", space_path("hgemm"), "atlas-300t-a2", jobs=most + 1,
                          storage=str(tmp_path / "s.journal"))
    with pytest.raises(TuneError, match=f"--jobs: must be at most {most} "):
        tune_problem(request, {"m": 256, "n": 256, "k": 256, "batch": 1})
    assert not (tmp_path / "s.journal").exists()


@pytest.mark.parametrize("to", ["group", "parent"])
def test_ctrl_c_while_the_workers_start_up_stops_the_run_at_once(tmp_path, to):
    # Before, the parent ignored SIGINT while it started its workers and the workers ignored it until their
    # handler was in place (about a second of imports): the run went on to its target (here: for ever).
    proc = subprocess.Popen(TUNE, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    workers = _wait(lambda: _workers(proc.pid), proc, "a worker start")  # it imports NumPy and Optuna now
    if to == "group":  # what a terminal's Ctrl-C does
        os.killpg(proc.pid, signal.SIGINT)
    else:
        proc.send_signal(signal.SIGINT)
    _out, err = _end(proc)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and err.strip().splitlines()[-1] == "interrupted", err
    assert "resume with: " in err and "--jobs 2" in err
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["interrupted"] and doc["problems"][0]["trials"]["stopped"] == "interrupted"
    trials = _trials(tmp_path)
    assert doc["problems"][0]["trials"]["finished"] == len(trials) < 100000
    assert not [t for t in trials if t.state == optuna.trial.TrialState.RUNNING]
    _assert_gone(workers + _workers(proc.pid))


def test_a_sigkilled_worker_ends_the_command_with_the_report_and_how_to_resume(tmp_path):
    # Before, the survivor ran on to the target (here: for ever), then the command said only "1 of 2 tuning
    # worker processes failed", with no report.
    proc = subprocess.Popen(TUNE, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    _wait(lambda: len(_trials(tmp_path)) >= 10, proc, "10 trials")
    workers = _wait(lambda: len(w := _workers(proc.pid)) == 2 and w, proc, "two workers")
    victim = workers[1]
    os.kill(victim, signal.SIGKILL)
    out, err = _end(proc)
    assert proc.returncode == 1, err
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"tune: worker 2 of 2 (pid {victim}) was killed by SIGKILL; the other worker "
                           "stopped after the trial in flight; the finished trials are kept in j.journal; "
                           "resume with: ascendbench tune hgemm --m 1024"), last
    assert "1024x256x512" in out and "a --jobs worker process died (run the same command again to go on)" in (
        " ".join(out.split()))  # the report of what was stored
    doc = json.loads((tmp_path / "r.json").read_text())
    trials = _trials(tmp_path)
    stored = {json.dumps(t.user_attrs["config"], sort_keys=True) for t in trials
              if t.state == optuna.trial.TrialState.COMPLETE}
    assert doc["problems"][0]["trials"]["stopped"] == "worker_failed" and not doc["interrupted"]
    # 10 trials were stored before the kill; some may be pruned (a tile that does not fit) or repeats, which
    # are not distinct feasible configurations
    assert doc["problems"][0]["trials"]["evaluated"] == len(stored) >= 1 and len(trials) >= 10
    assert not [t for t in trials if t.state == optuna.trial.TrialState.RUNNING]
    _assert_gone(workers)


def test_ctrl_c_stops_run_hgemm_on_worker_processes_at_once(tmp_path):
    # Before, the process pool's shutdown ran every queued shape first: about 50 s for random-5000.
    proc = subprocess.Popen([sys.executable, "-m", "ascendbench.cli", "run", "hgemm", "--workload", "random-5000",
                             "--jobs", "2", "--no-verify", "--no-save"], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    workers = _wait(lambda: len(w := _workers(proc.pid)) == 2 and w, proc, "two pool workers")
    os.killpg(proc.pid, signal.SIGINT)
    _out, err = _end(proc)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and err.strip().splitlines()[-1] == "interrupted", err
    _assert_gone(workers)


# The first SIGINT comes from a worker while the parent waits for results; the second arrives in the middle
# of Pool.terminate(), as the group's copy of `timeout -s INT`'s signal or a second Ctrl-C does.
_SECOND_CTRL_C = """
import functools, os, signal
from multiprocessing import pool
from ascendbench.interrupts import run_script
from ascendbench.processes import imap_in_workers

original = pool.Pool._help_stuff_finish

def second_ctrl_c(*args):
    os.kill(os.getpid(), signal.SIGINT)
    return original(*args)

def main():
    pool.Pool._help_stuff_finish = staticmethod(second_ctrl_c)
    print("workers", flush=True)
    for _ in imap_in_workers(functools.partial(os.kill, os.getpid()), [signal.SIGINT] + [0] * 1000, 2):
        pass
    print("finished", flush=True)

run_script(main)
"""


def test_a_second_ctrl_c_while_the_pool_stops_does_not_hang_the_command(tmp_path):
    # Before, the second KeyboardInterrupt left Pool.terminate() halfway: the workers were never stopped and
    # the parent joined the pool's result thread for ever (2 of 9 `timeout -s INT 3 ... run hgemm --jobs 2`).
    proc = subprocess.Popen([sys.executable, "-c", _SECOND_CTRL_C], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    out, err = _end(proc)
    assert proc.returncode == 130, err
    assert out.split() == ["workers"] and err.strip().splitlines() == ["interrupted"], (out, err)
