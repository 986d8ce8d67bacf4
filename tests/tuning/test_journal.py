"""The journal storage: torn records set aside, failed appends taken back, stale locks broken (issue 26)."""

import errno
import json
import os
import signal
import threading

import optuna
import pytest

from ascendbench.tuning import study as study_module
from ascendbench.tuning.space import load_space, space_path
from ascendbench.tuning.study import JournalLock, TuneError, TuneRequest, open_storage, study_name_for, tune_problem

PROBLEM = {"m": 1024, "n": 256, "k": 512, "batch": 1}
M0 = optuna.distributions.CategoricalDistribution([64, 128])
K0 = optuna.distributions.IntDistribution(1, 512, log=True)


def add(study, k0):
    """A finished trial as this tool writes it (one record, with its configuration)."""
    study.add_trial(optuna.trial.create_trial(params={"m0": 128, "k0": k0}, distributions={"m0": M0, "k0": K0},
                                              value=float(k0), user_attrs={"config": {"m0": 128, "k0": k0}}))


def trials_in(path):
    """The trials of study "x" as plain Optuna reads the file."""
    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(path)))
    return [t.params["k0"] for t in optuna.load_study(study_name="x", storage=storage).trials]


def records(path):
    return [json.loads(line) for line in path.read_bytes().splitlines(keepends=True)]  # every line one record


@pytest.fixture
def journal(tmp_path):
    path = tmp_path / "j.journal"
    study = optuna.create_study(study_name="x", storage=open_storage(str(path)))
    for k0 in (1, 2, 4):
        add(study, k0)
    return path


def test_a_journal_cut_at_any_byte_of_its_last_record_opens_with_every_whole_record(journal, capsys, monkeypatch):
    full = journal.read_bytes()
    last = full.rindex(b"\n", 0, len(full) - 1) + 1  # where the last record (trial k0=4) starts
    monkeypatch.setattr(study_module.os, "fsync", lambda fd: None)  # 600 cuts: durability is not tested here
    capsys.readouterr()
    for cut in range(last, len(full) + 1):
        journal.write_bytes(full[:cut])
        whole = cut >= len(full) - 1  # a cut just before the newline leaves a whole record
        study = optuna.load_study(study_name="x", storage=open_storage(str(journal)))
        assert [t.params["k0"] for t in study.trials] == ([1, 2, 4] if whole else [1, 2]), cut
        err = capsys.readouterr().err
        aside = list(journal.parent.glob("j.journal.torn-*"))
        if whole or cut == last:
            assert not aside and not err, cut
        else:
            assert [p.read_bytes() for p in aside] == [full[last:cut]], cut
            assert err.count("\n") == 1 and f"set aside in {aside[0]}" in err and f"its {cut - last} bytes" in err
            aside[0].unlink()
        add(study, 8)  # appended cleanly, not glued onto a partial line: every line is a record
        assert len(records(journal)) == (5 if whole else 4), cut
        if cut in (last, last + 1, (last + len(full)) // 2, len(full) - 2, len(full) - 1, len(full)):
            assert trials_in(journal) == ([1, 2, 4, 8] if whole else [1, 2, 8]), cut  # as plain Optuna reads it


def test_a_journal_whose_only_record_is_cut_opens_at_any_byte(tmp_path, capsys, monkeypatch):
    # the disk filled at the journal's first append: what is left is no journal record, yet no other file either
    path = tmp_path / "j.journal"
    optuna.create_study(study_name="x", storage=open_storage(str(path)))
    full = path.read_bytes()
    monkeypatch.setattr(study_module.os, "fsync", lambda fd: None)
    for cut in range(1, len(full) + 1):
        path.write_bytes(full[:cut])
        whole = cut >= len(full) - 1
        study = optuna.create_study(study_name="x", storage=open_storage(str(path)), load_if_exists=True)
        add(study, 8)
        # (with the record whole, create_study appends a second one that loads the study)
        assert trials_in(path) == [8] and len(records(path)) == (3 if whole else 2), cut
        assert ("set aside" in capsys.readouterr().err) is not whole, cut
        for aside in tmp_path.glob("j.journal.torn-*"):
            aside.unlink()


def test_two_processes_opening_a_torn_journal_together_set_it_aside_once(journal):
    full = journal.read_bytes()
    journal.write_bytes(full[:-40])
    storages = [open_storage(str(journal)), open_storage(str(journal))]  # the second finds nothing torn
    assert len(list(journal.parent.glob("j.journal.torn-*"))) == 1
    add(optuna.load_study(study_name="x", storage=storages[1]), 8)
    add(optuna.load_study(study_name="x", storage=storages[0]), 16)
    assert trials_in(journal) == [1, 2, 8, 16]


def test_a_torn_line_with_records_after_it_is_refused_naming_the_line(journal):
    lines = journal.read_bytes().splitlines(keepends=True)
    # as an older version left it: a record cut by a full disk, the next append glued onto it, more after
    glued = lines[:2] + [lines[2][:50] + lines[3]] + lines[3:]
    journal.write_bytes(b"".join(glued))
    with pytest.raises(TuneError, match=r"^--storage: line 3 of 4 of the journal .*j\.journal is not a journal record, "
                                        r"and records follow it .* its first 2 lines are whole \(head -n 2 "):
        open_storage(str(journal))
    assert journal.read_bytes() == b"".join(glued)  # nothing changed
    assert not list(journal.parent.glob("j.journal.torn-*"))


def test_read_only_opening_changes_nothing_and_needs_no_write_permission(journal, capsys, monkeypatch):
    # tune plot and results export --rows trials only read: a torn journal stays as it is, nothing is set aside,
    # no lock is taken, and a file the user may not write is still read
    full = journal.read_bytes()
    journal.write_bytes(full[:-40])
    monkeypatch.setattr(os, "access", lambda *args, **kwargs: False)  # as a read-only file looks (root bypasses)
    capsys.readouterr()
    study = optuna.load_study(study_name="x", storage=open_storage(str(journal), read_only=True))
    assert [t.params["k0"] for t in study.trials] == [1, 2]  # the torn last record is left out
    assert journal.read_bytes() == full[:-40] and sorted(p.name for p in journal.parent.iterdir()) == ["j.journal"]
    assert capsys.readouterr().err == ""
    with pytest.raises(TuneError, match="read only"):
        add(study, 8)


def test_read_only_opening_refuses_what_is_no_journal_in_one_line(tmp_path, journal):
    lines = journal.read_bytes().splitlines(keepends=True)
    journal.write_bytes(b"".join(lines[:2] + [lines[2][:50] + lines[3]] + lines[3:]))
    with pytest.raises(TuneError, match=r"^--storage: line 3 of 4 of the journal .* is not a journal record"):
        open_storage(str(journal), read_only=True)
    (tmp_path / "notes.txt").write_text("hello\n")
    with pytest.raises(TuneError, match=r"^--storage: .*notes\.txt is not an Optuna journal file"):
        open_storage(str(tmp_path / "notes.txt"), read_only=True)
    with pytest.raises(TuneError, match=r"^--storage: no journal file"):
        open_storage(str(tmp_path / "missing.journal"), read_only=True)


class FullDisk:
    """A file whose writes stop part way: the first write stores `room` bytes, the next raises ENOSPC
    (as a raw write on a disk that fills up); `truncate_fails`: neither can it be cut back."""

    def __init__(self, fh, room, truncate_fails=False):
        self.fh, self.room, self.truncate_fails = fh, room, truncate_fails

    def write(self, data):
        if self.room <= 0:
            raise OSError(errno.ENOSPC, "No space left on device")
        n = self.fh.write(bytes(data[:self.room]))
        self.room -= n
        return n

    def truncate(self, size):
        if self.truncate_fails:
            raise OSError(errno.EIO, "Input/output error")
        return self.fh.truncate(size)

    def __getattr__(self, name):
        return getattr(self.fh, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.fh.close()


@pytest.mark.parametrize("truncate_fails", [False, True])
def test_an_append_that_fails_part_way_leaves_no_partial_record(journal, monkeypatch, capsys, truncate_fails):
    before = journal.read_bytes()
    storage = open_storage(str(journal))
    study = optuna.load_study(study_name="x", storage=storage)
    opener = study_module.JournalFile._open_append
    monkeypatch.setattr(study_module.JournalFile, "_open_append",
                        lambda self: FullDisk(opener(self), 100, truncate_fails))
    with pytest.raises(OSError, match="No space left"):
        add(study, 8)
    monkeypatch.setattr(study_module.JournalFile, "_open_append", opener)
    if not truncate_fails:
        assert journal.read_bytes() == before  # taken back
    else:
        # left as it is: the next append (here another process's) sets it aside
        assert journal.read_bytes()[:len(before)] == before and len(journal.read_bytes()) == len(before) + 100
    capsys.readouterr()
    add(optuna.load_study(study_name="x", storage=open_storage(str(journal))), 16)
    assert ("set aside" in capsys.readouterr().err) is truncate_fails
    assert trials_in(journal) == [1, 2, 4, 16] and len(records(journal)) == 5


def _fork_lock_holder(path, then):
    """A child process that takes the journal's lock, writes b"x" to a pipe, then does `then` (SIGKILL
    itself, or wait for a byte on a second pipe and release). Returns (pid, read end, write end)."""
    held_r, held_w = os.pipe()
    go_r, go_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: no pytest, no cleanup
        try:
            lock = JournalLock(str(path), None)
            lock.acquire()
            os.write(held_w, b"x")
            if then == "die":
                os.kill(os.getpid(), signal.SIGKILL)
            os.read(go_r, 1)
            lock.release()
        finally:
            os._exit(0)
    os.close(held_w)
    os.close(go_r)
    assert os.read(held_r, 1) == b"x"
    os.close(held_r)
    return pid, go_w


@pytest.mark.parametrize("reaped", [True, False])
def test_a_lock_left_by_a_killed_process_is_broken_at_once_with_one_note(journal, reaped):
    pid, go = _fork_lock_holder(journal, "die")
    os.close(go)
    if reaped:
        os.waitpid(pid, 0)
    else:  # killed, not yet reaped by its parent (a zombie): gone all the same
        os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
    lock_file = journal.with_name("j.journal.lock")
    assert json.loads(lock_file.read_text())["pid"] == pid
    notes = []
    lock = JournalLock(str(journal), None, notify=notes.append)  # no grace period: only the owner check breaks it
    assert lock.acquire()
    assert notes == [f"broke the journal lock {lock_file}: its owner, process {pid} on this machine, is gone "
                     "(killed while it held the lock)"]
    assert json.loads(lock_file.read_text())["pid"] == os.getpid()
    lock.release()
    assert not lock_file.exists()
    if not reaped:
        os.waitpid(pid, 0)


def test_a_lock_whose_owner_runs_is_waited_for(journal):
    pid, go = _fork_lock_holder(journal, "wait")
    notes, got = [], threading.Event()
    lock = JournalLock(str(journal), 0.05, notify=notes.append)  # a grace period shorter than the wait below

    def take():
        lock.acquire()
        got.set()

    waiter = threading.Thread(target=take, daemon=True)
    waiter.start()
    assert not got.wait(1.0)  # the owner lives: not broken, even after the grace period
    os.write(go, b"x")  # the owner releases the lock
    os.close(go)
    assert got.wait(30)
    waiter.join()
    assert notes == [] and json.loads(journal.with_name("j.journal.lock").read_text())["pid"] == os.getpid()
    lock.release()
    os.waitpid(pid, 0)


def test_processes_that_find_one_stale_lock_together_take_turns(journal):
    pid, go = _fork_lock_holder(journal, "die")
    os.close(go)
    os.waitpid(pid, 0)
    counter = journal.with_name("counter")
    counter.write_text("0")
    children = []
    for _ in range(4):
        child = os.fork()
        if child == 0:
            code = 1
            try:
                lock = JournalLock(str(journal), None, notify=lambda text: None)
                for _ in range(25):
                    lock.acquire()
                    counter.write_text(str(int(counter.read_text()) + 1))
                    lock.release()
                code = 0
            finally:
                os._exit(code)
        children.append(child)
    assert [os.waitpid(c, 0)[1] for c in children] == [0] * 4
    assert counter.read_text() == "100"  # no two held the lock at once
    assert not journal.with_name("j.journal.lock").exists()


def test_a_lock_of_optunas_own_kind_is_broken_after_the_grace_period(tmp_path, monkeypatch, capsys):
    # Optuna's symlink lock (an older version of this tool, plain Optuna) says nothing of its owner: it is
    # broken once it has stayed unchanged for the grace period, with one note. The journal path is relative.
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(study_module, "LOCK_GRACE_SECONDS", 0.3)  # 10 in use
    req = TuneRequest("hgemm", space_path("hgemm"), "atlas-300t-a2", trials=2, exhaustive=False,
                      storage="results/s.journal")
    tune_problem(req, PROBLEM)
    lock = tmp_path / "results" / "s.journal.lock"
    lock.symlink_to((tmp_path / "results" / "s.journal").resolve())
    capsys.readouterr()
    out = tune_problem(TuneRequest("hgemm", space_path("hgemm"), "atlas-300t-a2", trials=4, exhaustive=False,
                                   storage="results/s.journal"), PROBLEM)
    assert out.trials["evaluated"] == 4 and not lock.exists()
    err = capsys.readouterr().err.splitlines()
    assert err == [f"note: broke the journal lock {(tmp_path / 'results').resolve() / lock.name}: unchanged for 0.3 s, held "
                   "by an owner that is not recorded (Optuna's own lock), which this machine cannot check"]


def test_trials_of_plain_optuna_in_a_study_are_left_out_and_counted(tmp_path):
    req = TuneRequest("hgemm", space_path("hgemm"), "atlas-300t-a2", trials=3, exhaustive=False,
                      storage=str(tmp_path / "s.journal"))
    key = tune_problem(req, PROBLEM).key
    shared = optuna.load_study(study_name=study_name_for(req, key), storage=open_storage(req.storage))
    # another script on the study, with its own parameters (Optuna refuses another kind under one of the space's
    # names) and attributes
    shared.optimize(lambda t: t.suggest_float("x", 0, 1), n_trials=2)
    out = tune_problem(TuneRequest("hgemm", space_path("hgemm"), "atlas-300t-a2", trials=12, exhaustive=False,
                                   storage=req.storage), PROBLEM)
    t = out.trials
    assert t["foreign"] == 2 and t["evaluated"] == 12
    assert t["evaluated"] + t["infeasible"] + t["repeats"] == t["finished"]
    assert set(out.best["config"]) == set(load_space(space_path("hgemm")).parameters)
    assert out.importance is not None and "x" not in out.importance
