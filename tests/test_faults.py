"""Fault injection: SIGKILLs at random moments of `run` and `tune` (the parent, a --jobs worker), a full disk
(RLIMIT_FSIZE) under both, and a journal torn inside its last record; after each, nothing is lost beyond the
trial in flight, nothing is stored twice or left RUNNING, no process or hidden file is left, and the same
command resumes. The harness is tests/faults.py; benchmarks/bench_faults.py runs 100 such kills."""

import random
import resource
import subprocess
import sys

import pytest

from tests.faults import TUNE, Audit, _cli, _env, _leftovers, _stored, run_fault, tune_fault

SEED = 26  # the moments are random, and the same in every run of the suite


def _assert_clean(audit: Audit) -> None:
    assert audit.clean(), audit.notes
    assert audit.evaluated >= 1 and audit.stored >= audit.evaluated - 1, (audit.evaluated, audit.stored)


@pytest.mark.parametrize(("jobs", "victim"), [(1, "parent"), (2, "worker"), (2, "parent")])
def test_a_sigkilled_tune_loses_at_most_the_trial_in_flight_and_resumes(tmp_path, jobs, victim):
    rng = random.Random(f"{SEED}-{jobs}-{victim}")
    # at a random moment within 2 s after the first trial (start-up takes seconds, longer on a loaded machine)
    audit = tune_fault(tmp_path, rng, jobs=jobs, victim=victim, after_trials=1, delay=rng.uniform(0.0, 2.0))
    _assert_clean(audit)


def test_a_sigkilled_run_leaves_whole_outputs_or_none_and_the_next_run_sweeps_its_leftovers(tmp_path):
    rng = random.Random(SEED)
    audit = Audit()
    for i in range(2):
        audit.add(run_fault(tmp_path / str(i), rng, delay=rng.uniform(1.5, 3.0)))
    assert audit.clean(), audit.notes


def _limited(megabytes: float):
    def limit() -> None:
        size = int(megabytes * 2**20)
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))

    return limit


def test_a_full_disk_under_run_writes_nothing_and_says_so_in_one_line(tmp_path):
    done = subprocess.run(_cli("run", "scan", "--n", "2**22", "--output-file", "y.npy", "--out", "r.json"),
                          cwd=tmp_path, env=_env(tmp_path), capture_output=True, text=True, timeout=120,
                          preexec_fn=_limited(4))  # the 16 MB fp32 output cannot be written
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert "Traceback" not in done.stderr and "y.npy" in lines[-1], lines
    assert not (tmp_path / "y.npy").exists() and not (tmp_path / "r.json").exists()
    assert _leftovers(tmp_path) == []


def test_a_full_disk_under_tune_keeps_the_journal_and_the_printed_resume_works(tmp_path):
    env = _env(tmp_path)
    tune = _cli(*TUNE, "--trials", "400")
    done = subprocess.run(tune, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180,
                          preexec_fn=_limited(0.05))  # the journal fills 50 kB after a few dozen trials
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr and "resume with:" in done.stderr, done.stderr
    before = _stored(tmp_path)
    (study,) = before
    assert len(before[study]) >= 5
    resumed = subprocess.run(_cli(*TUNE, "--trials", str(len(before[study]) + 3)), cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=180)
    assert resumed.returncode == 0, resumed.stderr
    after = _stored(tmp_path)[study]
    assert [t["number"] for t in after] == list(range(len(after))) and len(after) >= len(before[study]) + 3
    assert {t["number"] for t in before[study]} <= {t["number"] for t in after}
    assert not any(t["state"] == "RUNNING" for t in after)


def test_a_journal_torn_inside_its_last_record_keeps_every_whole_record_and_resumes(tmp_path):
    rng = random.Random(SEED)
    env = _env(tmp_path)
    subprocess.run(_cli(*TUNE, "--trials", "8"), cwd=tmp_path, env=env, check=True, capture_output=True,
                   timeout=180)
    journal = tmp_path / "studies.journal"
    data = journal.read_bytes()
    last = data.rstrip(b"\n").rfind(b"\n") + 1
    cut = rng.randrange(last + 1, len(data) - 1)  # inside the last record
    journal.write_bytes(data[:cut])
    resumed = subprocess.run(_cli(*TUNE, "--trials", "10"), cwd=tmp_path, env=env, capture_output=True,
                             text=True, timeout=180)
    assert resumed.returncode == 0 and "Traceback" not in resumed.stderr, resumed.stderr
    assert journal.read_bytes().startswith(data[:last])  # every whole record kept, in place
    (trials,) = _stored(tmp_path).values()
    assert [t["number"] for t in trials] == list(range(len(trials)))
    # --trials counts distinct feasible configurations (the kernel's check may prune some)
    assert len({t["config"] for t in trials if t["state"] == "COMPLETE"}) == 10
    assert not any(t["state"] == "RUNNING" for t in trials)


if sys.platform != "linux":  # /proc and RLIMIT_FSIZE semantics
    pytestmark = pytest.mark.skip("Linux only")
