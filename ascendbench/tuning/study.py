"""Driving Optuna: one study per problem, kept in a storage so that no finished trial is ever lost.

Each problem (one HGEMM shape, one scan size) gets its own study, named after the kernel, the problem and the
hardware (or `<study name>/<problem>` when the user names the study), so running the same command again
resumes it. The objective is the simulated time in seconds (minimised). Trial 0 of every new study is the
paper's heuristic configuration (enqueued), so the best a study reports is never slower than the heuristic and
the sampler learns from it. A configuration the kernel cannot run ends as a PRUNED trial with the kernel's
reason in its user attribute "infeasible" (samplers learn to avoid it; it is never scored); a configuration the
study already holds is answered from the study (user attribute "repeat") without running the model again.
`trials` is the number of *distinct feasible configurations* the study should hold: infeasible points and
repeats do not count, and a resumed study runs only the missing ones. Several processes (`jobs`, or other
machines on one RDB storage) share a study; each stops when the study holds enough distinct configurations
(or the whole grid has been seen, or MAX_IDLE_TRIALS trials in a row brought no new feasible configuration).

The default storage is an Optuna journal file (`results/tuning/studies.journal`), which takes several writer
processes through file locks (plain SQLite does not: "database is locked").
"""

from __future__ import annotations

import bisect
import contextlib
import copy
import dataclasses
import functools
import hashlib
import importlib.util
import itertools
import json
import math
import multiprocessing
import multiprocessing.connection
import os
import random
import secrets
import signal
import socket
import stat
import statistics
import sys
import threading
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:  # not on a POSIX system: a stale lock is broken without the flock guard
    fcntl = None

import numpy as np
import optuna
from optuna.trial import TrialState

from ascendbench.hardware import HardwareProfile, load_profile
from ascendbench.interrupts import note
from ascendbench.kernels.base import ParamError
from ascendbench.kernels.registry import get_tunable
from ascendbench.kernels.tunable import Evaluation, Infeasible
from ascendbench.processes import child_started, jobs_error, starting_children, usable_cores
from ascendbench.redact import mask_url, redact
from ascendbench.sim.engine import BufferCapacityError
from ascendbench.tuning.evaluations import FILE_NAME as STORE_FILE
from ascendbench.tuning.evaluations import EvaluationStore, model_fingerprint, problem_digest
from ascendbench.tuning.space import SearchSpace, load_space

__all__ = [
    "DEFAULT_STORAGE",
    "SAMPLERS",
    "ProblemOutcome",
    "TuneError",
    "TuneRequest",
    "WorkerError",
    "combine_seeds",
    "describe_storage",
    "open_result_storage",
    "open_storage",
    "study_name_for",
    "tune_problem",
]

SAMPLERS = ("tpe", "random", "gp", "grid")
DEFAULT_STORAGE = Path("results") / "tuning" / "studies.journal"
AUTO_EXHAUSTIVE_POINTS = 512  # spaces with at most this many grid points are evaluated whole automatically
AUTO_EXHAUSTIVE_SECONDS = 60.0  # ... and larger ones whose whole grid is estimated to take at most this long
MAX_IDLE_TRIALS = 200  # a search that finds no new feasible configuration in this many trials in a row stops
_FINISHED = (TrialState.COMPLETE, TrialState.PRUNED)
_RDB_SCHEMES = ("sqlite", "postgresql", "mysql", "oracle", "mssql")

optuna.logging.set_verbosity(optuna.logging.WARNING)


class WorkerError(RuntimeError):
    """A --jobs worker process failed (killed, or an error it met); the trials it finished are in the study."""


class TuneError(ValueError):
    """A user error in a tuning request (the message names the option and what is allowed)."""


@dataclass(frozen=True)
class TuneRequest:
    """What to tune. problems: JSON-ready dicts (see kernels/tunable.py); storage: an RDB URL, a journal file
    path or None (the default journal file); trials: finished trials each study should hold."""

    kernel: str
    space_path: Path
    hardware: str
    sampler: str = "tpe"
    seed: int = 0
    trials: int = 200
    timeout_s: float | None = None
    storage: str | None = None
    study_name: str | None = None
    jobs: int = 1
    exhaustive: bool | None = None  # None: automatically when the grid is small or cheap
    replica: int | None = None  # --seeds: this search's seed, its study is <study>/seed-<replica>
    replay: bool = True  # answer configurations kept in the evaluation store (tuning.evaluations) from it
    run_id: str = field(default_factory=lambda: secrets.token_hex(4))  # marks the trials this command ran


@dataclass
class ProblemOutcome:
    """What tuning one problem found (times in seconds, throughput in the kernel's unit)."""

    problem: dict[str, Any]
    key: str
    study_name: str
    trials: dict[str, Any]  # counts (TrialCounts), and "stopped": why the search ended
    best: dict[str, Any] | None
    heuristic: dict[str, Any]
    speedup: float | None
    infeasible_reasons: dict[str, int]
    exhaustive: dict[str, Any] | None = None
    history: list[float] = field(default_factory=list, repr=False)  # best-so-far time per new configuration
    importance: dict[str, float] | None = None  # parameter -> importance (PED-ANOVA), None when too few
    seeds: dict[str, Any] | None = None  # --seeds: each search's outcome and the spread (combine_seeds)
    exhaustive_skipped: str | None = None  # why the whole grid was not evaluated
    importance_source: str | None = None  # "grid" (every feasible grid point) or "study" (its trials)
    cost: dict[str, Any] | None = None  # where this run's search time went (SearchCost.as_dict)
    deploy: dict[str, Any] | None = None  # the best configuration as a `run` command and a JSON fragment


@dataclass
class SearchCost:
    """Where a search's wall time went (seconds, summed over --jobs workers): the timing model (simulated
    evaluations), the kernel's checks of the sampler's candidates, the sampler itself (checks excluded),
    replays from the evaluation store, the shared storage (adding this run's trials, reading the others'), and
    the rest (Optuna's in-memory study and this tool's bookkeeping): the parts add up to `wall_s`."""

    wall_s: float = 0.0
    model_s: float = 0.0
    check_s: float = 0.0
    sampler_s: float = 0.0
    replay_s: float = 0.0
    storage_s: float = 0.0
    simulated: int = 0  # evaluations the timing model ran
    replayed: int = 0  # evaluations read from the evaluation store
    processes: int = 0  # the searching processes whose times are summed (--jobs workers, or 1)
    store_error: str | None = None  # why the evaluation store could not be used

    def add(self, other: SearchCost) -> None:
        for f in dataclasses.fields(self):
            if f.name != "store_error":
                setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))
        self.store_error = self.store_error or other.store_error

    def as_dict(self) -> dict[str, Any]:
        parts = self.model_s + self.check_s + self.sampler_s + self.replay_s + self.storage_s
        return {**dataclasses.asdict(self), "other_s": max(0.0, self.wall_s - parts)}


# ---------------------------------------------------------------------------------------------------------
# Storage and samplers
# ---------------------------------------------------------------------------------------------------------
def _is_url(storage: str) -> bool:
    return storage.split(":", 1)[0].split("+", 1)[0] in _RDB_SCHEMES and "://" in storage


EMPTY_STORAGE = ("--storage: must not be empty; give a journal file path (default results/tuning/studies.journal) "
                 "or an RDB URL such as sqlite:///studies.db")


def open_storage(storage: str | None, read_only: bool = False) -> optuna.storages.BaseStorage:
    """An Optuna storage: an RDB URL (sqlite:///..., postgresql://...) with heartbeats, so that trials of a
    killed worker are marked failed; anything else is a journal file path (created with its folder), whose
    torn last record, if any, is set aside with a note on stderr (JournalFile.recover), and whose lock, if a
    process that is gone left it, is broken at once with a note (JournalLock).

    read_only (a journal that is only read: `tune plot`, `results export --rows trials`): the journal's whole
    records are read into memory as they are; nothing is written, set aside or locked, and a read-only file
    will do (a torn last record is left out, in the file too). Appending to that storage raises TuneError.

    Raises TuneError (--storage) when the database cannot be opened, the path cannot be written (or, read_only,
    read), or a line that is not a journal record has records after it (named: nothing is changed)."""
    target = str(storage) if storage is not None else str(DEFAULT_STORAGE)
    if not target.strip():  # Path("") is the current folder: "'.' is not a regular file" would mislead
        raise TuneError(EMPTY_STORAGE)
    if "://" in target and not _is_url(target):
        raise TuneError(f"--storage: unknown URL scheme {target.split('://', 1)[0]!r}; give an RDB URL "
                        "(postgresql://..., mysql://..., sqlite:///FILE) or a journal file path")
    if target.split("+", 1)[0].startswith("sqlite") and target.split("://", 1)[1] in ("", "/", "/:memory:"):
        raise TuneError("--storage: sqlite:// needs a file (sqlite:///studies.db): an in-memory database "
                        "keeps nothing")
    try:
        if _is_url(target):
            return _rdb_storage(target)
        path = Path(target)
        if read_only:
            return optuna.storages.JournalStorage(_JournalInMemory(path, target))
        _check_journal(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path = path.resolve()  # worker processes and the lock's guard find it wherever they run
        file = JournalFile(str(path), JournalLock(str(path), LOCK_GRACE_SECONDS), shown=target)
        file.recover()  # a torn last record is set aside (a note says where) before anything is appended
        try:
            return Journal(file)
        except Exception:
            _refuse_torn_middle(path, target)  # a record that is not one, with records after it
            raise
    except TuneError:
        raise
    except ImportError:
        raise TuneError(f"--storage: no database driver for {describe_storage(storage)} is installed "
                        "(PostgreSQL: pip install 'psycopg[binary]', or the postgres extra: pip install -e '.[postgres]' in "
                        "the project's folder)") from None
    except Exception as exc:  # noqa: BLE001 - SQLAlchemy, OS and Optuna errors all mean "cannot open"
        first = redact(str(exc).strip().splitlines()[0]) if str(exc).strip() else type(exc).__name__
        raise TuneError(f"--storage: cannot open {describe_storage(storage)}: {first}") from None


# A lock whose owner cannot be checked (a lock of Optuna's own kind, from an older version of this tool, plain
# Optuna or optuna-dashboard; or one taken on another machine sharing the folder) is broken once it has stayed
# unchanged this long (an append holds the lock for milliseconds). A lock whose owner is on this machine is
# broken at once when that process is gone, and waited for while it lives (JournalLock).
LOCK_GRACE_SECONDS = 10
LOCK_WAIT_NOTE_SECONDS = 10.0  # a live owner holding the lock this long is named, once

# A worker's journal appends are fsync'd at most this often (and when its loop ends): an fsync'd append per trial
# (0.5-2.5 ms here) was a fifth of a 500-trial HGEMM loop; a killed process loses nothing written before it died.
FSYNC_SECONDS = 1.0


def _storage_note(text: str) -> None:
    """One line on stderr about the storage (a lock broken, a torn record set aside): the command's user sees
    it, also from a --jobs worker process (which shares the command's stderr)."""
    print(f"note: {text}", file=sys.stderr, flush=True)


def _read_text(path: str) -> str | None:
    try:
        with open(path, encoding="ascii") as fh:
            return fh.read().strip()
    except (OSError, ValueError):
        return None


def _proc_stat(pid: int) -> tuple[str, int] | None:
    """(state, start time in clock ticks after boot) of a process, from /proc (Linux); None elsewhere or when
    the process is gone."""
    text = _read_text(f"/proc/{pid}/stat")
    if not text:
        return None
    fields = text.rsplit(")", 1)[-1].split()  # after the command name, which may hold spaces and parentheses
    try:
        return fields[0], int(fields[19])
    except (IndexError, ValueError):
        return None


@functools.lru_cache(maxsize=4)
def _lock_owner(pid: int) -> dict[str, Any]:
    """This process as a lock's owner: host name, boot id and PID namespace (Linux; None elsewhere), PID and
    start time (cached per PID: a forked child is another owner)."""
    ns = None
    with contextlib.suppress(OSError):
        ns = os.readlink("/proc/self/ns/pid")
    ps = _proc_stat(pid)
    return {"host": socket.gethostname(), "boot": _read_text("/proc/sys/kernel/random/boot_id"), "pidns": ns,
            "pid": pid, "start": ps[1] if ps else None}


def _owner_alive(owner: Mapping[str, Any]) -> bool | None:
    """Whether the process that wrote the owner record `owner` still runs: True or False when this process can
    tell (the same boot of the same kernel, the same PID namespace; the start time tells a reused PID), None
    when it cannot (another machine, another container, a system without /proc, or this machine before its
    last start: a host name can repeat across machines, a boot id cannot)."""
    me = _lock_owner(os.getpid())
    same = me["boot"] and me["pidns"] and owner.get("boot") == me["boot"] and owner.get("pidns") == me["pidns"]
    if not same or not isinstance(owner.get("pid"), int) or not isinstance(owner.get("start"), int):
        return None
    try:
        os.kill(owner["pid"], 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process has that PID: the owner if its start time agrees
        pass
    except OSError:
        return None
    ps = _proc_stat(owner["pid"])
    if ps is None:
        return False  # gone between the two looks
    state, start = ps
    return state not in ("Z", "X") and start == owner["start"]  # a zombie (killed, not yet reaped) is gone


class JournalLock:
    """The journal's file lock, `<journal>.lock`, that knows its owner: a regular file made exclusively (as
    Optuna's JournalFileOpenLock; Optuna's own locks have the same path, so plain Optuna and optuna-dashboard
    exclude it and are excluded by it), holding its owner as JSON (host, boot id, PID namespace, PID and start
    time). It has Optuna's lock contract (acquire, release).

    A lock left by a process of this machine that is gone (killed while it held the lock, SIGKILL included) is
    broken at once, with one note on stderr; a lock whose owner runs is waited for, however long it holds it
    (named once after LOCK_WAIT_NOTE_SECONDS). A lock whose owner this process cannot check (another machine
    sharing the folder, another container, a lock made before the machine restarted or without an owner
    record) is broken, with a note, once it has stayed unchanged for `grace_period_s` seconds, as Optuna does.

    Breaking is done holding an fcntl.flock of the journal file, and only if the lock is still the one
    judged stale, so that several processes finding one stale lock together break it once and then take turns
    (otherwise the second would remove the lock the first had just taken). The kernel releases an flock when
    its owner dies, so it can never be stale itself; on NFS it is a lock of the server (NFSv4, or v3 with
    lockd), and where flock is not supported the breaking goes on without it. Exclusive creation works on
    NFSv3 and later (Optuna's JournalFileOpenLock has the same limit). Owners on other machines are judged by
    the grace period only: their PIDs mean nothing here.

    Args:
        filepath: the journal file (absolute, or relative to a folder that does not change).
        grace_period_s: seconds after which a lock whose owner cannot be checked is broken; None: never.
        notify: called with each note's text (default: one line on stderr).
    """

    def __init__(self, filepath: str, grace_period_s: float | None = LOCK_GRACE_SECONDS,
                 notify: Callable[[str], None] = _storage_note):
        self._journal_path = filepath
        self._lock_file = filepath + ".lock"  # Optuna's lock path
        self.grace_period = grace_period_s
        self.notify = notify
        self._held: tuple[int, int] | None = None  # (device, inode) of the lock this process made

    def acquire(self) -> bool:
        """Take the lock, blocking (see the class). Returns True. Raises OSError when the lock file cannot be
        made (a folder gone read-only, a full disk)."""
        record = json.dumps(_lock_owner(os.getpid())).encode("ascii")
        sleep_s, started = 0.001, time.monotonic()
        unknown: tuple[Any, float] | None = None  # a lock of unknown owner: its state, and since when
        named = False
        while True:
            try:
                fd = os.open(self._lock_file, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                pass
            else:
                try:
                    os.write(fd, record)
                    st = os.fstat(fd)
                except BaseException:
                    os.close(fd)
                    with contextlib.suppress(OSError):
                        os.unlink(self._lock_file)
                    raise
                os.close(fd)
                self._held = (st.st_dev, st.st_ino)
                return True
            state, owner, alive = self._inspect()
            if state is None:
                continue  # released meanwhile: try again at once
            if alive is False:
                if self._break(state, False):
                    self.notify(f"broke the journal lock {self._lock_file}: its owner, process "
                                f"{owner['pid']} on this machine, is gone (killed while it held the lock)")
                continue
            if alive is None:
                now = time.monotonic()
                if unknown is None or unknown[0] != state:
                    unknown = (state, now)
                elif self.grace_period is not None and now - unknown[1] > self.grace_period:
                    if self._break(state, None):
                        who = (f"process {owner['pid']} on {owner.get('host')}" if owner
                               else "an owner that is not recorded (Optuna's own lock)")
                        self.notify(f"broke the journal lock {self._lock_file}: unchanged for "
                                    f"{self.grace_period:g} s, held by {who}, which this machine cannot "
                                    "check")
                    unknown = None
                    continue
            elif not named and time.monotonic() - started > LOCK_WAIT_NOTE_SECONDS:
                named = True
                self.notify(f"waiting for the journal lock {self._lock_file}, held by process "
                            f"{owner['pid']} on this machine (still running; stopped with Ctrl-Z?)")
            time.sleep(sleep_s)
            sleep_s = min(sleep_s * 2, 0.05)

    def _inspect(self) -> tuple[Any, dict[str, Any] | None, bool | None]:
        """(state, owner record, whether the owner runs: see _owner_alive) of the lock file as it is now;
        state None when there is no lock file."""
        try:
            st = os.lstat(self._lock_file)
        except FileNotFoundError:
            return None, None, None
        state = (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size)
        owner = None
        if stat.S_ISREG(st.st_mode):
            try:
                with open(self._lock_file, "rb") as fh:
                    owner = json.loads(fh.read(4096))
            except (OSError, ValueError):
                owner = None  # being written (made empty, the record follows), or not ours
        if not isinstance(owner, dict):
            return state, None, None
        return state, owner, _owner_alive(owner)

    def _break(self, state: Any, alive: bool | None) -> bool:
        """Remove the lock file if it is still in `state` with its owner still judged `alive` (False or None);
        returns whether this call removed it."""
        guard = None
        with contextlib.suppress(OSError):
            guard = os.open(self._journal_path, os.O_RDWR)  # O_RDWR: NFS needs a writable file to lock it
        try:
            if guard is not None and fcntl is not None:
                with contextlib.suppress(OSError):  # no flock on this file system: break without it
                    fcntl.flock(guard, fcntl.LOCK_EX)
            now, _owner, now_alive = self._inspect()
            if now != state or now_alive is not alive:
                return False  # released, or broken and taken by another process meanwhile
            try:
                os.unlink(self._lock_file)
            except FileNotFoundError:
                return False
            return True
        finally:
            if guard is not None:
                os.close(guard)  # releases the flock

    def release(self) -> None:
        """Remove the lock this process holds (nothing if another process broke it meanwhile)."""
        held, self._held = self._held, None
        try:
            st = os.lstat(self._lock_file)
        except FileNotFoundError:
            return
        if held == (st.st_dev, st.st_ino):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._lock_file)

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_held": None}  # a copy in another process holds nothing


def _is_record(line: bytes) -> bool:
    """Whether `line` (without its newline) is one whole journal record: a JSON object with an op_code. A cut
    prefix of a record never is one (its braces are not closed)."""
    try:
        record = json.loads(line)
    except ValueError:  # UnicodeDecodeError included
        return False
    return isinstance(record, dict) and "op_code" in record


def _line_start(fh, end: int) -> int:
    """Offset of the line that ends at `end` (just after the last newline before it; 0 if none)."""
    pos = end
    while pos > 0:
        step = min(pos, 1 << 16)
        fh.seek(pos - step)
        chunk = fh.read(step)
        cut = chunk.rfind(b"\n")
        if cut >= 0:
            return pos - step + cut + 1
        pos -= step
    return 0


class JournalFile(optuna.storages.journal.JournalFileBackend):
    """Optuna's journal file (same records, same lock path) that survives a torn write, and whose appends
    made inside `grouped()` are fsync'd at most once per FSYNC_SECONDS and when the outermost `grouped()`
    ends, instead of each on its own.

    Every append goes to the file at once under the file lock (JournalLock), so other processes read it at
    once, and a process killed (SIGKILL included) loses nothing it had appended: the operating system holds
    the data. Only a crash of the operating system can lose appends: those made less than FSYNC_SECONDS after
    the last fsync, until the next append or the end of the group fsyncs them. Outside `grouped()` each append
    is fsync'd, as Optuna's. Appends are serialised by JournalStorage's own lock.

    Torn writes: an append that fails part way (a full disk, a file size limit, an interrupt) is taken back
    (the file cut to its size before the append) and its error raised. A last line that is not a whole
    record (a write cut by a crash, a disk filled by another program, a take-back that failed) is set aside in
    a file `<journal>.torn-<UTC time>` beside the journal, with one note, before the next append and when the
    journal is opened (recover), so that no record is ever glued onto a partial line; a last record cut just
    before its newline is whole and kept. Optuna's readers skip such a line: nothing read is set aside.

    Args:
        file_path: the journal file (created if missing).
        lock_obj: the file lock (JournalLock, or one of Optuna's).
        shown: the journal's name in notes (default: file_path).
        notify: called with each note's text (default: one line on stderr).
    """

    def __init__(self, file_path: str, lock_obj: JournalLock,
                 shown: str | None = None, notify: Callable[[str], None] = _storage_note):
        super().__init__(file_path, lock_obj)
        self._path, self._file_lock = file_path, lock_obj
        self.shown, self.notify = shown or file_path, notify
        self._grouping = 0
        self._unsynced = False
        self._synced_at = -math.inf
        self._own_bytes = 0  # appended by the grouped appends of this process

    def _open_append(self):
        # unbuffered: a failed write leaves no buffered rest that a later flush or close would append
        return open(self._path, "a+b", buffering=0)

    def append_logs(self, logs: list[dict[str, Any]]) -> None:
        data = ("\n".join(json.dumps(log, separators=(",", ":")) for log in logs) + "\n").encode("utf-8")
        self._file_lock.acquire()
        try:
            with self._open_append() as fh:
                self._mend(fh)
                start = fh.seek(0, os.SEEK_END)
                try:
                    view = memoryview(data)
                    while view:  # a raw write may write part of it (a full disk: the next one raises)
                        view = view[fh.write(view):]
                except BaseException:
                    with contextlib.suppress(OSError):
                        fh.truncate(start)  # else the next append or open sets the partial record aside
                    raise
                if not self._grouping:
                    os.fsync(fh.fileno())
                    return
                self._own_bytes += len(data)
                self._unsynced = True
                if time.monotonic() - self._synced_at >= FSYNC_SECONDS:
                    self._fsync(fh)
        finally:
            self._file_lock.release()

    def recover(self) -> str | None:
        """Set aside a last line that is not a whole record (see the class), under the file lock so that
        processes opening the journal together do it once. Returns the note written, None if nothing was torn.

        Raises OSError when the torn bytes cannot be kept (a full disk: the journal is left as it is)."""
        self._file_lock.acquire()
        try:
            with self._open_append() as fh:
                return self._mend(fh, whole=True)
        finally:
            self._file_lock.release()

    def _mend(self, fh, whole: bool = False) -> str | None:
        """End the file (`fh`, open a+b, the lock held) with a whole record: a last line cut short is set
        aside, or completed with its newline when it is a whole record. whole=True also checks a last line
        that has its newline (a torn write a crash filled up to a newline). Returns the note written, if
        any."""
        size = fh.seek(0, os.SEEK_END)
        if not size:
            return None
        fh.seek(size - 1)
        ends = fh.read(1) == b"\n"
        if ends and not whole:
            return None  # every append's check: two system calls
        end = size - 1 if ends else size
        start = _line_start(fh, end)
        fh.seek(start)
        line = fh.read(end - start)
        if _is_record(line):
            if not ends:
                fh.write(b"\n")  # cut just before its newline: the record is whole
            return None
        aside = self._set_aside(start, fh, size)
        text = (f"the last record of the journal {self.shown} was cut short (a full disk, or a write killed "
                f"part way): its {size - start} bytes are set aside in {aside}; every whole record is kept")
        self.notify(text)
        return text

    def _set_aside(self, start: int, fh, size: int) -> str:
        """Copy bytes start..size of the journal to a new file beside it, then cut the journal at `start`;
        returns the new file's name as shown."""
        fh.seek(start)
        torn = fh.read(size - start)
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        for n in itertools.count(1):
            suffix = f".torn-{stamp}" + (f"-{n}" if n > 1 else "")
            try:
                out = open(self._path + suffix, "xb")  # noqa: SIM115 - removed below if it cannot be written
            except FileExistsError:
                continue
            try:
                with out:
                    out.write(torn)
                    out.flush()
                    os.fsync(out.fileno())
            except BaseException:  # a full disk: the journal is left as it is (the caller says why)
                with contextlib.suppress(OSError):
                    os.unlink(self._path + suffix)
                raise
            break
        fh.truncate(start)
        os.fsync(fh.fileno())
        return self.shown + suffix

    def _fsync(self, fh) -> None:
        os.fsync(fh.fileno())
        self._unsynced, self._synced_at = False, time.monotonic()

    def _size(self) -> int:
        # opened, not just stat'ed: on NFS an open revalidates the file's attributes (close-to-open), where a
        # stat may answer from a cache seconds old, as Optuna's reads open the file each time
        with open(self._path, "rb") as fh:
            return os.fstat(fh.fileno()).st_size

    def mark(self) -> tuple[int, int]:
        """The file's size and this process's grouped appends so far, for others_appended."""
        return self._size(), self._own_bytes

    def others_appended(self, mark: tuple[int, int]) -> bool:
        """Whether the file grew since `mark` by more than this process's grouped appends (another process
        wrote to it; an ungrouped append of this process also counts, which only costs a needless read)."""
        size, own = mark
        return self._size() - size != self._own_bytes - own

    @contextlib.contextmanager
    def grouped(self):
        """Group the fsyncs of the appends made inside (nested uses count once)."""
        self._grouping += 1
        try:
            yield self
        finally:
            self._grouping -= 1
            if not self._grouping and self._unsynced:
                with open(self._path, "ab") as fh:
                    self._fsync(fh)


def open_result_storage(target: str) -> optuna.storages.BaseStorage:
    """The storage a tuning result names (or --storage), opened to be read (open_storage's read_only), for
    `tune plot` and `results export --rows trials`. Raises TuneError (--storage) when it is empty, a database
    whose password the result does not keep, a journal file that is not there, or cannot be opened."""
    if "***" in target:
        raise TuneError("--storage: the result names a database whose password is not stored; give --storage URL")
    if target.strip() and "://" not in target and not Path(target).is_file():
        raise TuneError(f"--storage: no journal file {target!r} (the result's studies live there; run from the "
                        "folder that ran the tuning, or give --storage)")
    return open_storage(target, read_only=True)


class _JournalInMemory(optuna.storages.journal.BaseJournalBackend):
    """The whole records of a journal file, read once, for a storage that is only read (open_storage's
    read_only): the file is neither locked nor changed, and needs no write permission."""

    def __init__(self, path: Path, shown: str):
        if not path.is_file():
            raise TuneError(f"--storage: no journal file {shown!r}")
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise TuneError(f"--storage: cannot read {shown}: {exc.strerror or exc}") from None
        lines = data[: data.rfind(b"\n") + 1].splitlines()  # a torn last record (no newline yet) is left out
        if lines and not _is_record(lines[0]):
            raise TuneError(f"--storage: {shown} is not an Optuna journal file (its first line is not a journal "
                            "record)")
        if not all(map(_is_record, lines)):
            _refuse_torn_middle(path, shown)
        self._logs = [json.loads(line) for line in lines]

    def read_logs(self, log_number_from: int) -> list[dict[str, Any]]:
        return self._logs[log_number_from:]

    def append_logs(self, logs: list[dict[str, Any]]) -> None:
        raise TuneError("--storage: opened to be read only (a bug: nothing should be written here)")


class Journal(optuna.storages.JournalStorage):
    """Optuna's journal storage on a JournalFile (`file`), whose fsyncs a tuning loop groups."""

    def __init__(self, file: JournalFile):
        super().__init__(file)
        self.file = file


def _rdb_storage(url: str, attempts: int = 5) -> optuna.storages.RDBStorage:
    """RDBStorage with heartbeats. Workers that start together on an empty database race to create Optuna's
    tables (one gets a unique-key violation); a short retry sees the tables the other one made."""
    for attempt in range(attempts):
        try:
            with warnings.catch_warnings():  # heartbeats are "experimental" in Optuna; they mark killed trials
                warnings.simplefilter("ignore")
                return optuna.storages.RDBStorage(url, heartbeat_interval=30, grace_period=90)
        except ImportError:
            raise
        except Exception:  # re-raised on the last attempt
            if attempt == attempts - 1:
                raise
            time.sleep(0.5 * (attempt + 1))
    raise AssertionError("unreachable")


def _check_journal(path: Path) -> None:
    """Refuse a journal path that is not a regular file, not an Optuna journal, or not writable (with its
    folder, where the lock file goes), before anything is appended to it."""
    if path.exists() or path.is_symlink():
        if not path.is_file():
            raise TuneError(f"--storage: {path} exists and is not a regular file")
        with open(path, "rb") as fh:
            first = fh.readline(1 << 20)
        if first:
            # a first record cut short (a disk that filled at the journal's first append): recover sets it aside
            start = b'{"op_code":'  # how Optuna's records begin
            torn = not first.endswith(b"\n") and (first.startswith(start) or start.startswith(first))
            if not (_is_record(first) or torn):
                raise TuneError(f"--storage: {path} is not an Optuna journal file (its first line is not a "
                                "journal record); give a new path or the journal of earlier studies")
        if not os.access(path, os.W_OK):
            raise TuneError(f"--storage: {path} is not writable")
    folder = path.parent if str(path.parent) else Path(".")
    for parent in (folder, *folder.parents):
        if parent.exists():
            if not parent.is_dir():
                raise TuneError(f"--storage: {parent} is not a folder")
            if not os.access(parent, os.W_OK):
                raise TuneError(f"--storage: folder {parent} is not writable")
            break


def _refuse_torn_middle(path: Path, shown: str) -> None:
    """Raise TuneError naming the first line of the journal that is not a record, if one is (Optuna's replay
    fails on it once records follow). It is left as it is: the records after it may depend on it, so dropping
    them, or it, could change what the studies hold."""
    bad, count = None, 0
    with open(path, "rb") as fh:
        for count, line in enumerate(fh, start=1):
            if bad is None and not _is_record(line):
                bad = count
    if bad is None:
        return
    raise TuneError(f"--storage: line {bad} of {count} of the journal {shown} is not a journal record, and "
                    "records follow it (a torn write that an older version appended to, or an edit); nothing "
                    f"is changed: its first {bad - 1} lines are whole (head -n {bad - 1} {shown} > "
                    "other.journal keeps them, then give --storage other.journal)")


def describe_storage(storage: str | None) -> str:
    """The storage as it may be printed or saved: a URL's password replaced by *** (ascendbench.redact.mask_url:
    as SQLAlchemy's render_as_string(hide_password=True) renders an ordinary URL, and also a password holding
    an unencoded @ or given as a query parameter); a journal path as it is; None: the default journal."""
    if storage is None:
        return str(DEFAULT_STORAGE)
    return mask_url(storage)


class NewPointTPESampler(optuna.samplers.TPESampler):
    """Optuna's multivariate TPE that proposes only new points the kernel can run, wherever it finds one.

    TPE draws `n_ei_candidates` (24) candidates from its model of the good trials and proposes the one with the
    best acquisition value (the good model's density over the bad one's). Near convergence most candidates are
    points the study holds, so plain TPE proposes them again (444 of 1,178 trials of a 500-configuration HGEMM
    study were repeats), and many others do not fit a buffer (235 more): each such trial costs a fit of TPE,
    which is O(trials) in Optuna, and brings nothing. Here the proposal is the best candidate that the study
    does not hold (finished, feasible or not) and that `rejects` does not refuse (the kernel's check, before a
    trial is made); when no candidate is, the best candidates' unseen grid neighbours (one parameter one step
    away) in the same order; when none of those is either, up to EXTRA_ROUNDS more draws of 24. Only when all
    fail does it propose TPE's own choice (a repeat is answered from the study, and _optimize then queues an
    unseen neighbour). So TPE's model is built from distinct points, as found in its own order.

    A fit costs Optuna 4-12 ms here, more than the HGEMM timing model takes per configuration, so one fit
    serves int(REFIT_GROWTH x trials) proposals (2 from 67 trials on with 0.03), its next best new points in
    the same order (each checked against the study again when its turn comes); it is fit again when those
    are used up or the study has grown by REFIT_GROWTH (other workers' trials count). Before that, over the
    trials in which a search gets within 1% of the optimum on the benchmark's shapes, every proposal has its
    own fit (benchmarks/bench_tune.py: the same medians as a fit for every proposal, 28-65 trials; 0.04,
    two proposals a fit from 50 trials, took 4096^3 from 56 to 105).

    rejects: Optuna's params of a candidate (the names and values trials hold) -> True when the kernel refuses
    it; None: only known points are skipped. Relies on TPESampler._compute_acquisition_func(samples, mpe_below,
    mpe_above) (Optuna 3.0 to 5.x; samples in Optuna's internal representation: ints as floats, categoricals
    as indices), whose caller proposes the best of `samples` by the values returned: the chosen point is left
    there alone."""

    EXTRA_ROUNDS = 7
    REFIT_GROWTH = 0.03

    def __init__(self, *args: Any, rejects: Callable[[dict[str, Any]], bool] | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.rejects = rejects
        self._space: dict[str, optuna.distributions.BaseDistribution] = {}  # the relative search space
        self._known: set[tuple[float, ...]] = set()  # finished trials' points (internal representation)
        self._rows: dict[int, tuple[float, ...]] = {}  # trial number -> its point (finished trials only)
        self._queue: list[tuple[float, ...]] = []  # the last fit's other usable candidates, best first
        self._refused: dict[tuple[float, ...], bool] = {}  # point -> rejects(point)
        self._fitted = 0  # finished trials the last fit saw
        self._scanned = 0  # the study's trials before this index are finished (or failed) and looked at
        self._counted = 0  # ... and this many of them finished (_FINISHED)
        self._inferred: dict[str, optuna.distributions.BaseDistribution] = {}

    def infer_relative_search_space(self, study: optuna.Study,
                                    trial: optuna.trial.FrozenTrial) -> dict[str, optuna.distributions.BaseDistribution]:
        # Optuna intersects the finished trials' distributions and deep-copies the result before every trial.
        # Here every trial suggests every parameter of one space (a study is tied to its space's fingerprint),
        # so the intersection, once it is not empty, stays what it is.
        if not self._inferred:
            self._inferred = super().infer_relative_search_space(study, trial)
        return dict(self._inferred)

    def sample_relative(self, study: optuna.Study, trial: optuna.trial.FrozenTrial,
                        search_space: dict[str, optuna.distributions.BaseDistribution]) -> dict[str, Any]:
        if search_space != self._space:  # another search space: start again
            self._space, self._known, self._rows, self._queue, self._refused = dict(search_space), set(), {}, [], {}
            self._scanned = self._counted = 0
        finished = self._look_at(study.get_trials(deepcopy=False))
        # A fit serves the proposals _compute_acquisition_func queued until the study has grown by REFIT_GROWTH
        if finished < self._fitted * (1 + self.REFIT_GROWTH):
            while self._queue:
                point = self._queue.pop(0)
                if point not in self._known:
                    return {name: d.to_external_repr(v) for (name, d), v in zip(self._space.items(), point)}
        self._fitted, self._queue = finished, []
        return super().sample_relative(study, trial, search_space)

    def _look_at(self, trials: list[optuna.trial.FrozenTrial]) -> int:
        """Note the points of the finished trials among `trials` (a study's, by number) not noted yet; returns
        how many are finished. Trials once finished stay so: only those from the first one that was not
        are looked at again (listing the finished ones would cost O(trials) before every trial)."""
        if len(trials) < self._scanned:  # not the study it looked at before
            self._scanned = self._counted = 0
        while self._scanned < len(trials) and trials[self._scanned].state.is_finished():
            t, self._scanned = trials[self._scanned], self._scanned + 1
            if t.state in _FINISHED:
                self._counted += 1
                self._note(t)
        finished = self._counted
        for t in trials[self._scanned:]:  # after a trial still waiting or running (trials pulled meanwhile)
            if t.state in _FINISHED:
                finished += 1
                self._note(t)
        return finished

    def _note(self, trial: optuna.trial.FrozenTrial) -> None:
        if trial.number not in self._rows:
            self._known.add(self._point(trial))

    def _point(self, trial: optuna.trial.FrozenTrial) -> tuple[float, ...]:
        """The trial's point in the search space's order (internal representation; () if it lacks one)."""
        row = self._rows.get(trial.number)
        if row is None:
            params = trial.params
            row = (tuple(d.to_internal_repr(params[name]) for name, d in self._space.items())
                   if self._space.keys() <= params.keys() else ())
            self._rows[trial.number] = row
        return row

    def _get_internal_repr(self, trials: list[optuna.trial.FrozenTrial],
                           search_space: dict[str, optuna.distributions.BaseDistribution],
                           study: optuna.Study) -> dict[str, np.ndarray]:
        # TPE converts every trial's parameters on every sampling step; finished trials' points are kept instead
        if search_space != self._space or any(t.state not in _FINISHED for t in trials):
            return super()._get_internal_repr(trials, search_space, study)
        rows = [row for row in map(self._point, trials) if row]
        columns = np.array(rows, dtype=float).reshape(len(rows), len(self._space))
        return {name: columns[:, i] for i, name in enumerate(self._space)}

    def _compute_acquisition_func(self, samples: dict[str, np.ndarray], mpe_below: Any, mpe_above: Any) -> np.ndarray:
        values = super()._compute_acquisition_func(samples, mpe_below, mpe_above)
        if samples.keys() != self._space.keys():  # an independent sampling step: plain TPE
            return values
        serves = max(1, int(self.REFIT_GROWTH * self._fitted))  # proposals this fit serves
        draws = [(samples, values)]
        chosen = self._choose(draws, serves)
        for _ in range(self.EXTRA_ROUNDS if not chosen else 0):
            draws.append(self._draw(mpe_below, mpe_above))
            if chosen := self._choose(draws, serves):
                break
        if not chosen:
            return values  # nothing new and runnable: TPE's own choice among the first draw
        self._queue = chosen[1:]
        # the caller proposes the best of `samples` by the values returned: leave it only the chosen point
        for i, name in enumerate(self._space):
            samples[name] = np.array([chosen[0][i]])
        return np.zeros(1)

    def _draw(self, mpe_below: Any, mpe_above: Any) -> tuple[dict[str, np.ndarray], np.ndarray]:
        more = mpe_below.sample(self._rng.rng, self._n_ei_candidates)
        return more, super()._compute_acquisition_func(more, mpe_below, mpe_above)

    def _choose(self, draws: list[tuple[dict[str, np.ndarray], np.ndarray]], count: int) -> list[tuple[float, ...]]:
        """Up to `count` distinct usable points: the candidates of the draws, best acquisition value first, then
        the grid neighbours of the candidates in the same order (one parameter one step away)."""
        ranked = []
        for draw, values in draws:
            points = np.column_stack([draw[name] for name in self._space]).tolist()
            ranked += [(-float(v), len(ranked) + i, tuple(point)) for i, (v, point) in enumerate(zip(values, points))]
        ranked.sort(key=lambda item: item[:2])  # the best value first; ties: the first drawn, as np.argmax
        candidates = list(dict.fromkeys(point for _, _, point in ranked))
        out = list(itertools.islice(filter(self._usable, candidates), count))
        for point in candidates:
            if len(out) >= count:
                break
            moves = self._neighbours(point)
            self._rng.rng.shuffle(moves)
            out += itertools.islice((m for m in moves if m not in out and self._usable(m)), count - len(out))
        return out

    def _neighbours(self, point: tuple[float, ...]) -> list[tuple[float, ...]]:
        """The points one step from `point` (internal representation): an int parameter one step either way
        within its range, a categorical one changed to another choice; float parameters are not moved."""
        moves = []
        for i, dist in enumerate(self._space.values()):
            if isinstance(dist, optuna.distributions.IntDistribution):
                values = [v for v in (point[i] - dist.step, point[i] + dist.step) if dist.low <= v <= dist.high]
            elif isinstance(dist, optuna.distributions.CategoricalDistribution):
                values = [float(j) for j in range(len(dist.choices)) if j != point[i]]
            else:
                values = []
            moves += [point[:i] + (float(v),) + point[i + 1:] for v in values]
        return moves

    def _usable(self, point: tuple[float, ...]) -> bool:
        """Neither a point the study holds nor one the kernel refuses (`rejects`, cached per point)."""
        if point in self._known:
            return False
        if self.rejects is None:
            return True
        if point not in self._refused:
            params = {name: d.to_external_repr(v) for (name, d), v in zip(self._space.items(), point)}
            self._refused[point] = bool(self.rejects(params))
        return not self._refused[point]


def make_sampler(name: str, seed: int, space: SearchSpace) -> optuna.samplers.BaseSampler:
    """The sampler for --sampler NAME, seeded. Raises TuneError for unknown names or a missing package."""
    if name == "tpe":
        # Trial 0 is the paper's heuristic, a strong start: TPE models after 5 trials instead of Optuna's 10
        # random ones (benchmarks/bench_tune.py: median trials to within 1% of the optimum on 4096^3 and
        # 2048x128x2048 fell from 242 and 84 distinct configurations to 43 and 62).
        # Multivariate (one model of the whole configuration: tile sizes interact through the buffers; Optuna 5's
        # default, not 4's); no constant liar: each worker samples from its own in-memory study (_Mirror),
        # where no other worker's trial runs, so it would only cost time.
        with warnings.catch_warnings():  # experimental arguments in older Optuna
            warnings.simplefilter("ignore")
            return NewPointTPESampler(seed=seed, n_startup_trials=5, multivariate=True, constant_liar=False)
    if name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    if name == "grid":
        _check_grid_size(space, "--sampler")
        return optuna.samplers.GridSampler(space.optuna_grid(), seed=seed)
    if name == "gp":
        missing = [m for m in ("torch", "scipy") if importlib.util.find_spec(m) is None]
        if missing:
            raise TuneError(f"--sampler: gp needs {' and '.join(missing)} (the gp extra: pip install -e '.[gp]' in the project's folder)")
        return optuna.samplers.GPSampler(seed=seed)
    raise TuneError(f"--sampler: must be one of {', '.join(SAMPLERS)}, got {name!r}")


def study_name_for(request: TuneRequest, key: str) -> str:
    base = f"{request.study_name}/{key}" if request.study_name else f"{request.kernel}/{request.hardware}/{key}"
    return base if request.replica is None else f"{base}/seed-{request.replica}"


# ---------------------------------------------------------------------------------------------------------
# The objective
# ---------------------------------------------------------------------------------------------------------
def config_key(config: Mapping[str, Any]) -> str:
    """A configuration's identity in a study (JSON with sorted keys)."""
    return json.dumps(dict(config), sort_keys=True)


def is_tool_trial(trial: optuna.trial.FrozenTrial, names: frozenset[str]) -> bool:
    """Whether the trial was made by this tool: its user attribute "config" is a dict whose keys are exactly
    `names`, the space's parameter names (what SearchSpace.suggest returns). A study can also hold trials of
    plain Optuna (another script, optuna-dashboard), with no "config" or one of their own (a string, another
    dict): they are left out of the counts, the report, the repeat check, the workers' samplers, the ground
    truth, the importance and the figures, and counted as "foreign" (summarise)."""
    config = trial.user_attrs.get("config")
    return isinstance(config, dict) and config.keys() == names


def _names(space: SearchSpace) -> frozenset[str]:
    """The parameter names of the space's configurations (is_tool_trial)."""
    return frozenset(space.parameters)


class _Objective:
    """Simulated time of the suggested configuration; infeasible points are pruned with their reason; a
    configuration the study (or this process) already evaluated is answered from it, marked "repeat"; one the
    evaluation store keeps (`store`, tuning.evaluations) is replayed from it, marked "replayed". `cost`
    collects the seconds spent in the timing model, in the kernel's checks and in replays."""

    def __init__(self, kernel: str, space: SearchSpace, problem: Mapping[str, Any], hw: HardwareProfile,
                 run_id: str = "", study: optuna.Study | None = None, store: EvaluationStore | None = None,
                 cost: SearchCost | None = None, shared_attrs: dict[int, dict[str, Any]] | None = None):
        self.tunable, self.run_id = get_tunable(kernel), run_id
        # trial number -> its user attributes, when a _Mirror adds them to the shared study's copy of the trial
        # (None: set on the trial itself)
        self.shared_attrs = shared_attrs
        self.space, self.problem, self.hw = space, dict(problem), hw
        self.cache: dict[str, Evaluation | str] = {}  # config key -> outcome (a reason: infeasible)
        self.store = store
        self.cost = cost if cost is not None else SearchCost()
        if study is not None:
            self.learn(study)

    def learn(self, source: optuna.Study | Sequence[optuna.trial.FrozenTrial]) -> None:
        """Take the outcomes a study (or a list of trials) holds: other workers' trials, earlier runs."""
        trials = source.get_trials(deepcopy=False, states=_FINISHED) if isinstance(source, optuna.Study) else source
        names = _names(self.space)
        for t in trials:
            if t.state not in _FINISHED or not is_tool_trial(t, names):
                continue
            key = config_key(t.user_attrs["config"])
            if key in self.cache or t.user_attrs.get("repeat"):
                continue
            if t.state == TrialState.COMPLETE:
                self.cache[key] = Evaluation(t.value, t.user_attrs.get("throughput", 0.0), "")
            else:
                self.cache[key] = str(t.user_attrs.get("infeasible", "pruned"))

    def rejects(self, params: Mapping[str, Any]) -> bool:
        """Whether the kernel's check refuses the configuration of Optuna's `params` (no trial is made for
        it; NewPointTPESampler asks before proposing a point, and keeps the answer)."""
        start = time.perf_counter()
        try:
            self.tunable.check(self.problem, self.space.from_optuna(params), self.hw)
        except Infeasible:
            return True
        finally:
            self.cost.check_s += time.perf_counter() - start
        return False

    def outcome(self, config: Mapping[str, Any], key: str | None = None) -> tuple[Evaluation | str, bool]:
        """(the configuration's evaluation or infeasible reason, whether it was replayed from the store); key:
        config_key(config), when the caller has it."""
        key = config_key(config) if key is None else key
        if key in self.cache:
            return self.cache[key], False
        start = time.perf_counter()
        kept = self.store.get(key) if self.store is not None else None
        if kept is not None:
            self.cost.replay_s += time.perf_counter() - start
            self.cost.replayed += 1
            self.cache[key] = kept
            return kept, True
        try:
            value: Evaluation | str = self.tunable.evaluate(self.problem, config, self.hw)
        except Infeasible as exc:
            value = exc.reason
        self.cost.model_s += time.perf_counter() - start
        self.cost.simulated += 1
        self.cache[key] = value
        if self.store is not None:
            self.store.put(key, value)
        return value, False

    def __call__(self, trial: optuna.Trial) -> float:
        config = self.space.suggest(trial)
        # "worker": the process (a _Mirror tells its own trials from the others' by it). Each parameter's real
        # value is a user attribute of its own too (m0=128, k0=256, where the sampler sees m0_index=5 and
        # log2_k0=8): optuna-dashboard shows and sorts them; "config" stays what this tool reads.
        key = config_key(config)
        attrs = {**config, "config": config, "run": self.run_id, "worker": _WORKER}
        if key in self.cache:
            attrs["repeat"] = True
        value, replayed = self.outcome(config, key)
        if replayed:
            attrs["replayed"] = True
        if isinstance(value, str):
            attrs["infeasible"] = value
        else:
            attrs["throughput"] = value.throughput
        if self.shared_attrs is None:
            _set_attrs(trial, attrs)
        else:
            # The in-memory trial gets only what the search reads back (each set_user_attr copies the trial in
            # Optuna's in-memory storage, and a callback deep-copies them all); the whole set goes to the
            # shared study's copy (_Mirror.flush), where reports, exports and dashboards read it.
            self.shared_attrs[trial.number] = attrs
            _set_attrs(trial, {name: attrs[name] for name in LOCAL_ATTRS if name in attrs})
        if isinstance(value, str):
            raise optuna.TrialPruned(value) from None
        return value.time_s


_WORKER = f"{socket.gethostname()}:{os.getpid()}"


# The user attributes of this tool's trials besides one per parameter (_Objective, _enqueue_start, _search); no
# tunable kernel has a parameter of these names (tests/tuning/test_study.py)
TRIAL_ATTRS = frozenset({"config", "run", "worker", "repeat", "replayed", "infeasible", "throughput", "heuristic",
                         "warm_start", "neighbour_of_repeat"})


# ... of which the in-memory study of a _Mirror holds only these (the repeat check and the counts read them)
LOCAL_ATTRS = ("config", "repeat")


def _set_attrs(trial: optuna.Trial, attrs: Mapping[str, Any]) -> None:
    for name, value in attrs.items():
        trial.set_user_attr(name, value)


def distinct_counts(study: optuna.Study, space: SearchSpace) -> tuple[int, int]:
    """(distinct feasible configurations, distinct configurations) of this tool the study holds (finished
    trials)."""
    feasible, seen, names = set(), set(), _names(space)
    for t in study.get_trials(deepcopy=False, states=_FINISHED):
        if not is_tool_trial(t, names):
            continue
        key = config_key(t.user_attrs["config"])
        seen.add(key)
        if t.state == TrialState.COMPLETE:
            feasible.add(key)
    return len(feasible), len(seen)


@functools.lru_cache(maxsize=8)
def _profile(hardware: str) -> HardwareProfile:
    """The profile of a run, read once per process (every problem, trial batch and grid chunk uses it)."""
    return load_profile(hardware)


def _finished(study: optuna.Study) -> int:
    return len(study.get_trials(deepcopy=False, states=_FINISHED))


def _open_study(request: TuneRequest, space: SearchSpace, problem: Mapping[str, Any], key: str,
                storage) -> optuna.Study:
    """The problem's study (made if new), checked to belong to this kernel, problem, hardware and space.
    Its sampler is set by whoever runs trials on it (_optimize). A new study's records (the study, its
    attributes) are fsync'd once on a journal, not each on its own."""
    with storage.file.grouped() if isinstance(storage, Journal) else contextlib.nullcontext():
        return _open_study_records(request, space, problem, key, storage)


def _open_study_records(request: TuneRequest, space: SearchSpace, problem: Mapping[str, Any], key: str,
                        storage) -> optuna.Study:
    name = study_name_for(request, key)
    try:  # create_study(load_if_exists=True) of a study that exists appends a record to a journal each time
        study = optuna.load_study(study_name=name, storage=storage)
    except KeyError:  # new (workers starting together may each make it: the first one made is loaded)
        study = optuna.create_study(study_name=name, storage=storage, direction="minimize", load_if_exists=True)
    want = {"kernel": request.kernel, "problem": dict(problem), "hardware": request.hardware,
            "space": space.fingerprint()}
    have = study.user_attrs
    # Workers started together race between creating the study and writing its attributes: an attribute not
    # written yet is written (the same value by every worker of this problem), one that differs is refused.
    for attr, value in want.items():
        if attr in have and have[attr] != value:
            raise TuneError(f"--study-name: study {name!r} was made with another {attr} "
                            f"({have[attr]!r}, now {value!r}); choose another --study-name")
    missing = [attr for attr in want if attr not in have]
    for attr in missing:
        study.set_user_attr(attr, want[attr])
    if missing:
        with warnings.catch_warnings():  # experimental in Optuna, harmless: names the objective in dashboards
            warnings.simplefilter("ignore")
            study.set_metric_names(["time_s"])
    return study


def _sampler_seed(seed: int, worker: int, done: int) -> int:
    """A different seed per worker and per resumption (a resumed random search must not repeat itself),
    the same for the same command and history."""
    return (seed * 1_000_003 + worker * 7919 + done) % (2**32)


def _enqueue_start(study: optuna.Study, space: SearchSpace, kernel: str, problem: Mapping[str, Any],
                   hw: HardwareProfile, warm_start: Sequence[Mapping[str, Any]] = ()) -> None:
    """The first trials of a new study: trial 0 the paper's heuristic configuration, then the warm-start
    configurations; each only when it is a point of the space."""
    starts: list[tuple[Mapping[str, Any], dict[str, Any]]] = []
    try:
        starts.append((get_tunable(kernel).heuristic(problem, hw), {"heuristic": True}))
    except (ParamError, BufferCapacityError):
        pass
    starts += [(config, {"warm_start": True}) for config in warm_start]
    for config, attrs in starts:
        params = space.to_optuna(dict(config))
        if params is not None:
            study.enqueue_trial(params, user_attrs=attrs, skip_if_exists=True)


class _Mirror:
    """A worker samples from a study in memory and shares it through the storage.

    Each of its finished trials is added to the shared study whole, after the trial (one storage record per
    trial instead of one per parameter and attribute: 13 fsync'd journal appends per trial before; a journal's
    fsyncs are grouped, see JournalFile), and other workers' finished trials are pulled into memory at the same
    time, where the sampler and the repeat check see them. So workers see each other's trials before each new
    one and stop at the target together. A worker killed with SIGKILL loses at most the trial in flight; the
    shared study never holds a RUNNING trial of a worker that died.

    `feasible` and `seen`: the configuration keys of the distinct feasible and of all finished trials known
    here (kept incrementally: the stop test runs after every trial)."""

    def __init__(self, shared: optuna.Study, sampler: optuna.samplers.BaseSampler, run_id: str,
                 names: frozenset[str], journal: JournalFile | None = None):
        self.shared, self.run_id = shared, run_id
        self.names = names  # the space's parameter names: which trials are this tool's (is_tool_trial)
        self.journal = journal  # the shared study's journal file: pull reads it only when another process wrote
        self._mark: tuple[int, int] | None = None
        self.local = optuna.create_study(storage=optuna.storages.InMemoryStorage(), sampler=sampler,
                                         direction="minimize", study_name=shared.study_name)
        self.done: set[int] = set()  # local numbers that are in the shared study (pushed, or pulled from it)
        self.scanned = 0  # the shared trials numbered below have been looked at (pull)
        self.looked_at: set[int] = set()  # and these numbers from `scanned` on
        self.feasible: set[str] = set()
        self.seen: set[str] = set()
        self.pending: list[optuna.trial.FrozenTrial] = []  # this worker's trials finished since the last flush
        # local trial number -> the user attributes its shared copy gets (_Objective's shared_attrs)
        self.attrs: dict[int, dict[str, Any]] = {}
        self.failed = False  # adding a trial to the storage failed: add nothing more
        self.pull()

    def note(self, trial: optuna.trial.FrozenTrial) -> None:
        if trial.state in _FINISHED and is_tool_trial(trial, self.names):
            key = config_key(trial.user_attrs["config"])
            self.seen.add(key)
            if trial.state == TrialState.COMPLETE:
                self.feasible.add(key)

    def pull(self) -> list[optuna.trial.FrozenTrial]:
        """Copy the shared study's finished trials that are not here yet; returns them."""
        if self.journal is not None and self._mark is not None and not self.journal.others_appended(self._mark):
            return []  # listing the study's trials costs O(trials), after every trial
        self._mark = self.journal.mark() if self.journal is not None else None  # before the listing
        trials = self.shared.get_trials(deepcopy=False)
        # Trials reach an RDB storage out of number order when several workers add them: a trial not looked at
        # yet is after the prefix of numbers 0 .. scanned - 1, all looked at (numbers are unique). Optuna's RDB
        # cache reads trials by increasing id, and a trial created finished is committed with its parameters
        # and attributes in one transaction: another worker's trial committed after a higher id was read would
        # never be seen; adding each trial as it finishes (no bursts) keeps that rare.
        arrived = [t for t in trials[self.scanned:] if t.number not in self.looked_at]
        # a trial still running (a plain Optuna process writes one RUNNING, then finishes it) is looked at again
        self.looked_at.update(t.number for t in arrived if t.state.is_finished())
        while (self.scanned < len(trials) and trials[self.scanned].number == self.scanned
               and self.scanned in self.looked_at):
            self.looked_at.discard(self.scanned)
            self.scanned += 1
        # trials of plain Optuna are not copied: they hold no configuration to learn from, and their parameters
        # would shrink the sampler's search space (the parameters that every trial has)
        new = [t for t in arrived if t.state in _FINISHED and not self._own(t) and is_tool_trial(t, self.names)]
        if new:
            start = len(self.local.get_trials(deepcopy=False))  # in-memory numbers run on from there
            self.local.add_trials(new)
            self.done |= set(range(start, start + len(new)))
            for t in new:
                self.note(t)
        return new

    def _own(self, trial: optuna.trial.FrozenTrial) -> bool:
        """A trial this worker added (the workers of one command share its run id)."""
        return trial.user_attrs.get("run") == self.run_id and trial.user_attrs.get("worker") == _WORKER

    def finished(self, trial: optuna.trial.FrozenTrial) -> None:
        """A trial of this worker finished: noted here, added to the shared study by the next flush."""
        self.note(trial)
        self.pending.append(trial)

    def _shared_copy(self, trial: optuna.trial.FrozenTrial) -> optuna.trial.FrozenTrial:
        """The trial as the shared study gets it: with all its user attributes, those set at its creation
        (enqueue_trial's) first, as Optuna would have kept them."""
        attrs = self.attrs.get(trial.number)
        if not attrs:
            return trial
        shared = copy.copy(trial)
        shared.user_attrs = {**{k: v for k, v in trial.user_attrs.items() if k not in attrs}, **attrs}
        return shared

    def flush(self, every: bool = False) -> list[optuna.trial.FrozenTrial]:
        """Add this worker's trials finished since the last flush (every=True: all its finished trials, also
        those no callback reported, as when a run stops) to the shared study and pull; returns the pulled
        trials."""
        if self.failed:
            return []  # after a storage error, adding again could store a trial twice (see below)
        trials = self.local.get_trials(deepcopy=False, states=_FINISHED) if every else self.pending
        todo = [t for t in trials if t.state in _FINISHED and t.number not in self.done]
        self.pending = []
        try:
            for t in todo:
                self.shared.add_trial(self._shared_copy(t))
                self.done.add(t.number)
                self.attrs.pop(t.number, None)
        except BaseException:
            # The trial's record may be in the storage (a journal append whose fsync failed) or half of it (a
            # full disk): the error goes to the caller, and nothing more is added by this worker.
            self.failed = True
            raise
        return self.pull()


def _unseen_neighbour(space: SearchSpace, config: Mapping[str, Any], seen: set[str],
                      rng: random.Random) -> dict[str, Any] | None:
    """Optuna's parameters of a random grid neighbour of `config` that is not in `seen`: one parameter moved
    one step along its grid (ordered, int and log-int parameters), or changed (bool and categorical ones)."""
    moves = []
    for name, p in space.parameters.items():
        values = p.values() if p.type != "int" else None
        if values is None:  # an int range: one step either way, inside the range
            options = [v for v in (config[name] - p.step, config[name] + p.step) if p.low <= v <= p.high]
        elif p.type in ("bool", "categorical"):
            options = [v for v in values if v != config[name]]
        else:
            i = values.index(config[name])
            options = [values[j] for j in (i - 1, i + 1) if 0 <= j < len(values)]
        moves += [(name, v) for v in options]
    rng.shuffle(moves)
    for name, value in moves:
        candidate = {**config, name: value}
        if config_key(candidate) not in seen:
            return space.to_optuna(candidate)
    return None


def _reached(feasible: int, seen: int, trials: int, space: SearchSpace) -> str | None:
    """Why a study with `feasible` distinct feasible and `seen` distinct configurations needs no more trials:
    "target" (it holds --trials), "grid" (every point seen); None: it does."""
    return "target" if feasible >= trials else "grid" if seen >= space.grid_size else None


def _optimize(request: TuneRequest, space: SearchSpace, problem: dict[str, Any], key: str, worker: int,
              progress: Callable[[int, float | None], None] | None = None, escalate: bool = True,
              storage=None, warm_start: Sequence[Mapping[str, Any]] = (),
              signals: list[int] | None = None, cost: SearchCost | None = None) -> str:
    """Run trials until the study holds request.trials distinct feasible configurations (or the grid is
    covered, the search is idle for MAX_IDLE_TRIALS trials, or the timeout ends), through a _Mirror. Returns
    why it stopped: "target", "grid", "idle" or "timeout" (an interrupt raises KeyboardInterrupt). signals: a
    worker's record of the SIGINT / SIGTERM it took before (it then runs no trial) and while Optuna runs.
    cost: filled with where the time went (SearchCost), also when an interrupt ends the search."""
    cost = cost if cost is not None else SearchCost()
    cost.processes += 1
    wall0 = time.perf_counter()
    try:
        return _search(request, space, problem, key, worker, progress, escalate, storage, warm_start, signals,
                       cost)
    finally:
        cost.wall_s += time.perf_counter() - wall0


def _time_sampler(sampler: optuna.samplers.BaseSampler, cost: SearchCost) -> None:
    """Count the seconds the sampler's calls take in cost.sampler_s, less the kernel checks they make (counted
    in cost.check_s by _Objective.rejects); calls it makes of its own methods are counted once."""
    depth = [0]

    def timed(method: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            if depth[0]:
                return method(*args, **kwargs)
            depth[0] += 1
            start, checks = time.perf_counter(), cost.check_s
            try:
                return method(*args, **kwargs)
            finally:
                depth[0] -= 1
                cost.sampler_s += time.perf_counter() - start - (cost.check_s - checks)
        return call

    for name in ("before_trial", "infer_relative_search_space", "sample_relative", "sample_independent",
                 "after_trial"):
        setattr(sampler, name, timed(getattr(sampler, name)))


def _search(request: TuneRequest, space: SearchSpace, problem: dict[str, Any], key: str, worker: int, progress,
            escalate: bool, storage, warm_start: Sequence[Mapping[str, Any]], signals: list[int] | None,
            cost: SearchCost) -> str:
    """_optimize's search (see there)."""
    start = time.perf_counter()
    storage = storage if storage is not None else open_storage(request.storage)
    study = _open_study(request, space, problem, key, storage)
    done = _finished(study)
    # the grid sampler walks the grid itself (no neighbour trials after a repeat); it shuffles the grid by its
    # seed and shares grid ids through the study: every worker and every resumption must shuffle it the same way
    grid = request.sampler == "grid"
    seed = request.seed if grid else _sampler_seed(request.seed, worker, done)
    sampler = make_sampler(request.sampler, seed, space)
    mirror = _Mirror(study, sampler, request.run_id, _names(space),
                     storage.file if isinstance(storage, Journal) else None)
    cost.storage_s += time.perf_counter() - start
    if reached := _reached(len(mirror.feasible), len(mirror.seen), request.trials, space):
        return reached  # nothing left to do
    hw = _profile(request.hardware)
    if not mirror.seen:  # a new study (workers starting together may each run the start; repeats are free)
        _enqueue_start(mirror.local, space, request.kernel, problem, hw, warm_start)
    store = open_evaluation_store(request, problem) if request.replay else None
    if store is not None and not store.available:
        cost.store_error = store.error
    _time_sampler(sampler, cost)
    objective = _Objective(request.kernel, space, problem, hw, request.run_id, mirror.local, store, cost,
                           shared_attrs=mirror.attrs)
    if isinstance(sampler, NewPointTPESampler):
        sampler.rejects = objective.rejects
    idle = [0, len(mirror.feasible)]
    best = [min((t.value for t in mirror.local.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))),
                default=None)]

    rng = random.Random(_sampler_seed(request.seed, worker, done))
    diversified: list[bool] = []  # the samplers were reseeded once another worker's trial arrived
    stopped = ["timeout"]  # why the search ended, unless enough() stops it first

    def enough(st: optuna.Study, trial: optuna.trial.FrozenTrial) -> None:
        if (trial.user_attrs.get("repeat") and not grid
                and not st.get_trials(deepcopy=False, states=(TrialState.WAITING,))):
            # The sampler proposed a point it had: try an unseen neighbour of it next instead of sampling
            # again (a repeat costs a sampling step and brings nothing; its neighbours are where it looks).
            step = _unseen_neighbour(space, trial.user_attrs["config"], mirror.seen, rng)
            if step is not None:
                st.enqueue_trial(step, user_attrs={"neighbour_of_repeat": True})
        mirror.finished(trial)
        if trial.state == TrialState.COMPLETE and (best[0] is None or trial.value < best[0]):
            best[0] = trial.value
        flushed = time.perf_counter()
        pulled = mirror.flush()
        cost.storage_s += time.perf_counter() - flushed
        objective.learn(pulled)
        if pulled and not grid and not diversified:
            # Another worker runs now. With the same seed and the same trials (a command run on each machine,
            # or started together), both samplers would propose the same points: each draws its own from here.
            sampler.reseed_rng()
            rng.seed()
            diversified.append(True)
        feasible, seen = len(mirror.feasible), len(mirror.seen)
        # idle: trials in a row that found no new feasible configuration (repeats, or new points that do not fit)
        idle[:] = [0, feasible] if feasible > idle[1] else [idle[0] + 1, feasible]
        if (reached := _reached(feasible, seen, request.trials, space)) or idle[0] >= MAX_IDLE_TRIALS:
            stopped[0] = reached or "idle"
            st.stop()
        if progress is not None:
            progress(feasible, best[0])

    grouped = storage.file.grouped() if isinstance(storage, Journal) else contextlib.nullcontext()
    with grouped:
        try:
            with _stop_after_trial_on_interrupt(escalate, signals) as interrupted:
                def after_trial(st: optuna.Study, trial: optuna.trial.FrozenTrial) -> None:
                    enough(st, trial)  # one callback: Optuna deep-copies the trial for each
                    if interrupted():
                        st.stop()

                if not interrupted():  # a worker told to stop while it opened the study runs no trial
                    mirror.local.optimize(objective, timeout=request.timeout_s, callbacks=[after_trial],
                                          catch=())
        finally:
            flushed = time.perf_counter()
            mirror.flush(every=True)  # every finished trial, also one whose callback an interrupt cut short
            cost.storage_s += time.perf_counter() - flushed
            if store is not None:
                store.close()
                cost.store_error = cost.store_error or store.error  # a write that failed during the search
    if interrupted():
        raise KeyboardInterrupt
    return stopped[0]


@contextlib.contextmanager
def _stop_after_trial_on_interrupt(escalate: bool = True, seen: list[int] | None = None):
    """While Optuna runs: a first Ctrl-C or SIGTERM lets the trial in flight finish (milliseconds) and then
    stops the study, so that nothing is left half-written or running in the storage (an interrupt inside
    Optuna's own bookkeeping can leave a trial RUNNING or fail in its clean-up); a second one interrupts at
    once (unless escalate is False: worker processes, which their parent stops). Yields a function telling
    whether an interrupt came. seen: the signals taken so far (a worker's, from its start), appended to."""
    seen = [] if seen is None else seen

    def handler(signum, _frame) -> None:
        if seen and escalate:
            raise KeyboardInterrupt
        seen.append(signum)
        note(signum)  # the command ends with this signal's line and status

    if threading.current_thread() is not threading.main_thread():  # signals reach the main thread only
        yield lambda: bool(seen)
        return
    old = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield lambda: bool(seen)
    finally:
        for sig, previous in old.items():
            signal.signal(sig, previous)


def _worker(request: TuneRequest, space_path: Path, problem: dict[str, Any], key: str, worker: int,
            parent: int, warm_start: Sequence[Mapping[str, Any]] = (), report=None) -> None:
    """A worker process of --jobs (started by _run_workers). Its first act takes SIGINT and SIGTERM with a
    handler that only records them (processes.child_started): an interrupt then lets the trial in flight
    finish and ends the worker quietly (the parent reports), and so does the parent's death (a SIGKILL of the
    command leaves no orphans). It sends (why its search ended, None, its SearchCost) on `report`, a pipe to the parent:
    _optimize's answer or "interrupted"; after a storage or user error ("failed", the error in one line), and
    exits with status 1."""
    signals: list[int] = []

    def record(signum: int, _frame) -> None:
        signals.append(signum)
        note(signum)

    child_started(record)

    def watch_parent() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(30.0)  # still here after the trial in flight: stuck, give up
        os._exit(1)

    threading.Thread(target=watch_parent, daemon=True).start()
    detail = None
    cost = SearchCost()
    try:
        space = load_space(space_path).on(_profile(request.hardware))
        stopped = _optimize(request, space, problem, key, worker, escalate=False, warm_start=warm_start,
                            signals=signals, cost=cost)
    except KeyboardInterrupt:
        stopped = "interrupted"
    except (OSError, TuneError) as exc:  # the parent says it in one line (not multiprocessing's traceback)
        stopped, detail = "failed", redact(" ".join(str(exc).split()) or type(exc).__name__)
    if report is not None:
        with contextlib.suppress(OSError):
            report.send((stopped, detail, cost))
    if stopped == "failed":
        sys.exit(1)


def open_evaluation_store(request: TuneRequest, problem: Mapping[str, Any]) -> EvaluationStore:
    """The evaluation store of the request's storage, opened on the problem's evaluations."""
    return EvaluationStore(_beside_storage(request, STORE_FILE),
                           problem_digest(request.kernel, problem, _profile(request.hardware)),
                           get_tunable(request.kernel).unit)


# ---------------------------------------------------------------------------------------------------------
# Exhaustive evaluation
# ---------------------------------------------------------------------------------------------------------
def _evaluate_chunk(args: tuple) -> list[Evaluation | str]:
    return _evaluate_points(*args)


MAX_GRID_POINTS = 1_000_000


def _check_grid_size(space: SearchSpace, option: str) -> None:
    if space.grid_size > MAX_GRID_POINTS:
        raise TuneError(f"{option}: the grid of {space.path} has {space.grid_size:,} points, more than "
                        f"{MAX_GRID_POINTS:,} can be listed; narrow the int ranges or use another sampler")


def _evaluate_points(kernel: str, hardware: str, problem: dict[str, Any], points: list[dict[str, Any]]
                     ) -> list[Evaluation | str]:
    """Each point's evaluation, or the kernel's reason it is infeasible."""
    tunable, hw = get_tunable(kernel), _profile(hardware)
    out: list[Evaluation | str] = []
    for config in points:
        try:
            out.append(tunable.evaluate(problem, config, hw))
        except Infeasible as exc:
            out.append(exc.reason)
    return out


def _refused(request: TuneRequest, problem: dict[str, Any], points: list[dict[str, Any]]
             ) -> tuple[list[tuple[dict[str, Any], str]], list[dict[str, Any]]]:
    """The points the kernel's check refuses, each with its reason, and the others, in order."""
    tunable, hw = get_tunable(request.kernel), _profile(request.hardware)
    refused, feasible = [], []
    for config in points:
        try:
            tunable.check(problem, config, hw)
        except Infeasible as exc:
            refused.append((config, exc.reason))
        else:
            feasible.append(config)
    return refused, feasible


def grid_processes(request: TuneRequest) -> int:
    """Processes of an exhaustive evaluation: every core this process may use (at least --jobs)."""
    return max(request.jobs, usable_cores())


def evaluate_grid(request: TuneRequest, space: SearchSpace, problem: dict[str, Any],
                  progress: Callable[[int, int], None] | None = None, stats: dict[str, Any] | None = None
                  ) -> list[tuple[dict[str, Any], float | None]]:
    """Simulated time of every grid point (None where infeasible): the points the evaluation store keeps are
    replayed (unless request.replay is off); of the others, those the kernel's check refuses (Tunable.check,
    microseconds each) are recorded here with its reason, and the feasible ones simulated on all cores
    (grid_processes), each process taking chunks of 64 points in turn; all are added to the store. stats,
    when given, receives the seconds, how many points were evaluated now (simulated or refused by the check)
    and replayed, and the processes used."""
    _check_grid_size(space, "--exhaustive")
    start = time.perf_counter()
    points = space.grid()
    keys = [config_key(c) for c in points]
    store = open_evaluation_store(request, problem) if request.replay else None
    outcomes: dict[str, Evaluation | str] = {}
    if store is not None:
        outcomes = {k: v for k in keys if (v := store.rows.get(k)) is not None}  # as read when opened
    todo = [c for c, k in zip(points, keys, strict=True) if k not in outcomes]
    replayed = len(points) - len(todo)
    # The feasible set, enumerated once with the kernel's check: refused points are not sent to the
    # processes. The grid is sharded by index, 64 points a chunk, so that neighbours on the grid (which differ
    # in the last parameters only and often share truncated programs, kernels' run caches) stay in one process.
    refused, feasible = _refused(request, problem, todo)
    index = {config_key(c): i for i, c in enumerate(feasible)}
    chunks = [chunk for i in range(0, len(points), 64)
              if (chunk := [feasible[index[k]] for k in keys[i:i + 64] if k in index])]
    done = replayed
    processes = min(grid_processes(request), len(chunks))
    if progress:
        progress(done, len(points))

    def take(chunk: list[dict[str, Any]], part: list[Evaluation | str]) -> None:
        nonlocal done
        new = [(config_key(c), v) for c, v in zip(chunk, part, strict=True)]
        outcomes.update(new)
        if store is not None:
            store.put_many(new)  # kept as they come: an interrupted grid is not simulated again
        done += len(chunk)
        if progress:
            progress(done, len(points))

    try:
        if refused:
            take([c for c, _ in refused], [reason for _, reason in refused])
        if processes > 1:
            ctx = multiprocessing.get_context("spawn")
            pool = None
            try:
                with starting_children() as starter:  # a Ctrl-C while the pool starts is not lost
                    pool = starter.start(lambda: ctx.Pool(processes))
                args = [(request.kernel, request.hardware, problem, c) for c in chunks]
                for chunk, part in zip(chunks, pool.imap(_evaluate_chunk, args), strict=True):
                    take(chunk, part)
                pool.close()
            except BaseException:
                if pool is not None:
                    pool.terminate()  # Ctrl-C: stop at once; what finished is in the store
                raise
            finally:
                if pool is not None:
                    pool.join()
        else:
            for chunk in chunks:
                take(chunk, _evaluate_points(request.kernel, request.hardware, problem, chunk))
    finally:
        if store is not None:
            store.close()
    if stats is not None:
        stats.update(seconds=time.perf_counter() - start, simulated=len(todo), replayed=replayed,
                     processes=max(1, processes), store_error=store.error if store is not None else None)
    return [(c, None if isinstance(v, str) else v.time_s) for c, v in
            zip(points, (outcomes[k] for k in keys), strict=True)]


def _trials_to_within(history: list[float], optimum: float, fraction: float) -> int | None:
    for i, best in enumerate(history, start=1):
        if best <= optimum * (1 + fraction):
            return i
    return None


# ---------------------------------------------------------------------------------------------------------
# One problem
# ---------------------------------------------------------------------------------------------------------
def tune_problem(request: TuneRequest, problem: dict[str, Any],
                 progress: Callable[[str, int, int, float | None], None] | None = None,
                 storage=None, warm_start: Sequence[Mapping[str, Any]] = ()) -> ProblemOutcome:
    """Tune one problem: run the study (resuming it), evaluate the heuristic, and with exhaustive evaluation
    the true optimum of the grid. KeyboardInterrupt propagates after the trials already finished are stored.

    progress(stage, done, total, best_time_s) is called as trials finish. storage: an open storage of
    request.storage, to share one between problems (opening a journal replays it). warm_start: configurations
    (the best of shapes tuned before, for a workload) a new study tries right after the heuristic.
    Raises TuneError for user errors (sampler, storage, --jobs above processes.max_jobs(), a study made for
    another problem or space); WorkerError when a --jobs worker process died (see _run_workers). A
    KeyboardInterrupt or WorkerError carries what the search cost until then as `search_cost` (SearchCost)."""
    if problem_with_jobs := jobs_error(request.jobs):
        raise TuneError(f"--jobs: {problem_with_jobs}")
    space = load_space(request.space_path).on(_profile(request.hardware))
    key = get_tunable(request.kernel).problem_key(problem)
    storage = storage if storage is not None else open_storage(request.storage)
    study = _open_study(request, space, problem, key, storage)
    if progress:
        progress(key, distinct_counts(study, space)[0], request.trials, None)
    cost = SearchCost()
    try:
        if request.jobs <= 1:
            stopped = _optimize(request, space, problem, key, 0,
                                (lambda done, best: progress(key, done, request.trials, best)) if progress else None,
                                storage=storage, warm_start=warm_start, cost=cost)
        else:
            stopped = _run_workers(request, space, problem, key, study, progress, warm_start, cost)
    except (KeyboardInterrupt, WorkerError) as exc:
        exc.search_cost = cost  # what the search cost until then, for the report of what the study holds
        raise
    grid_progress = ((lambda done, total, note="": progress(f"{key}: whole grid{note}", done, total, None))
                     if progress else None)
    return summarise(request, space, problem, key, study, grid_progress, stopped, cost)


def _run_workers(request: TuneRequest, space: SearchSpace, problem: dict[str, Any], key: str, study: optuna.Study,
                 progress,
                 warm_start: Sequence[Mapping[str, Any]] = (), cost: SearchCost | None = None) -> str | None:
    """request.jobs worker processes on one study, started so that a Ctrl-C while they start up is not lost
    (processes.starting_children). On Ctrl-C or SIGTERM of this process, or as soon as one worker dies, the
    others are stopped (_stop_workers) and joined. Returns why the search ended: "timeout" if a worker's
    --timeout ended it, else "grid" or "idle" as a worker saw it (None: none said).

    Raises:
        KeyboardInterrupt: a SIGINT or SIGTERM came; the workers' finished trials are in the study.
        WorkerError: a worker process died (a signal killed it, or it met an error): the message names it and
            how it ended; the others were stopped after their trial in flight.
    """
    ctx = multiprocessing.get_context("spawn")
    # one pipe per worker, not a shared queue: a worker killed while it writes cannot block the others
    pipes = [ctx.Pipe(duplex=False) for _ in range(request.jobs)]
    workers = [ctx.Process(target=_worker, args=(request, request.space_path, problem, key, w, os.getpid(),
                                                 [dict(c) for c in warm_start], pipes[w][1]),
                           daemon=True) for w in range(request.jobs)]
    said: dict[int, str | None] = {}  # worker -> why its search ended
    details: dict[int, str] = {}  # worker -> the error it met
    failure = None
    shown = _StudyProgress(_names(space))
    try:
        with starting_children() as starter:
            for proc, (_reader, writer) in zip(workers, pipes, strict=True):
                if starter.interrupted:
                    break
                starter.start(proc.start)
                writer.close()  # the worker holds its end
        while failure is None and (alive := [proc for proc in workers if proc.is_alive()]):
            multiprocessing.connection.wait([proc.sentinel for proc in alive], timeout=0.3)
            _read_reports(pipes, said, details, cost)
            failure = _worker_failure(workers, details)
            if progress and failure is None:
                progress(key, shown.update(study), request.trials, shown.best)  # update first
    except KeyboardInterrupt:
        _stop_workers(workers)
        _read_reports(pipes, said, details, cost)  # what the stopped workers' searches cost
        raise
    _read_reports(pipes, said, details, cost)
    failure = failure or _worker_failure(workers, details)  # also the last one to end may have died
    if failure is not None:
        stopped = _stop_workers(workers)
        others = (f"; {'the other worker' if stopped == 1 else f'{stopped} other workers'} stopped after the "
                  "trial in flight" if stopped else "")
        raise WorkerError(failure + others)
    return next((reason for reason in ("timeout", "grid", "idle") if reason in said.values()), None)


class _StudyProgress:
    """The distinct feasible configurations of this tool a study holds and their best time, kept as its trials
    finish: the parent of --jobs workers shows them every 0.3 s, where keying every trial each time cost
    O(trials) (distinct_counts). Finished trials do not change; trials still running are looked at again."""

    def __init__(self, names: frozenset[str]):
        self.names = names
        self.looked: set[int] = set()  # numbers of the finished trials counted
        self.feasible: set[str] = set()
        self.best: float | None = None

    def update(self, study: optuna.Study) -> int:
        """The distinct feasible configurations, with the study's trials finished since the last call."""
        for t in study.get_trials(deepcopy=False):
            if t.number in self.looked or not t.state.is_finished():
                continue
            self.looked.add(t.number)
            if t.state == TrialState.COMPLETE and is_tool_trial(t, self.names):
                self.feasible.add(config_key(t.user_attrs["config"]))
                self.best = t.value if self.best is None else min(self.best, t.value)
        return len(self.feasible)


def _read_reports(pipes: list, said: dict[int, str | None], details: dict[int, str],
                  cost: SearchCost | None = None) -> None:
    """Take the (reason, error, SearchCost) each worker sent on its pipe (reason None: it ended without
    sending); the costs are added to `cost`."""
    for w, (reader, _writer) in enumerate(pipes):
        if w in said:
            continue
        try:
            if not reader.poll():
                continue
            said[w], detail, spent = reader.recv()
        except (EOFError, OSError):  # it died before it sent anything
            said[w], detail, spent = None, None, None
        if detail:
            details[w] = detail
        if cost is not None and spent is not None:
            cost.add(spent)


def _worker_failure(workers: list, details: dict[int, str]) -> str | None:
    """How the first worker that ended badly ended ("worker 2 of 2 (pid 123) was killed by SIGKILL");
    None when none did."""
    for w, proc in enumerate(workers):
        code = proc.exitcode
        if code is None or code == 0:
            continue
        who = f"worker {w + 1} of {len(workers)} (pid {proc.pid})"
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            return f"{who} was killed by {name}"
        return f"{who} failed: {details[w]}" if w in details else f"{who} exited with status {code}"
    return None


def _stop_workers(workers: list, grace_s: float = 30.0) -> int:
    """Stop the live workers: SIGTERM, which a worker takes as an interrupt (its trial in flight finishes and
    its finished trials are stored), and which ends one still starting up at once (nothing of it is stored
    yet). Joined within grace_s seconds, else killed. Returns how many were running."""
    alive = [proc for proc in workers if proc.is_alive()]
    for proc in alive:
        proc.terminate()
    deadline = time.monotonic() + grace_s
    for proc in alive:
        proc.join(timeout=max(0.0, deadline - time.monotonic()))
        if proc.is_alive():
            proc.kill()
            proc.join()
    return len(alive)


def summarise(request: TuneRequest, space: SearchSpace, problem: dict[str, Any], key: str,
              study: optuna.Study, grid_progress: Callable[..., None] | None = None,
              stopped: str | None = None, cost: SearchCost | None = None) -> ProblemOutcome:
    """The outcome of a study as stored now: best (never slower than the heuristic), heuristic with its rank
    among the evaluated configurations, trial counts, parameter importance, and where the ground truth is
    known (or is cheap, see _exhaustive_wanted) the true optimum and ranks. stopped: why this run's search
    ended (_optimize's or the workers' answer, or "interrupted"); None (no search ran, or no worker said):
    told from the counts, target or grid, else idle."""
    tunable = get_tunable(request.kernel)
    hw = _profile(request.hardware)
    trials = sorted(study.get_trials(deepcopy=False), key=lambda t: t.number)
    names = _names(space)
    finished = [t for t in trials if t.state in _FINISHED and is_tool_trial(t, names)]
    complete = [t for t in finished if t.state == TrialState.COMPLETE]
    evaluated, seen = distinct_counts(study, space)
    # evaluated + infeasible + repeats = finished: a trial either brought a new configuration (feasible or
    # not) or proposed one the study held already
    counts = {"evaluated": evaluated, "finished": len(finished), "complete": len(complete),
              "infeasible": seen - evaluated, "repeats": len(finished) - seen, "distinct": seen,
              "failed": sum(1 for t in trials if t.state == TrialState.FAIL),
              "running": sum(1 for t in trials if t.state == TrialState.RUNNING),
              "this_run": sum(1 for t in finished if t.user_attrs.get("run") == request.run_id),
              "target": request.trials,
              "foreign": sum(1 for t in trials if t.state in _FINISHED and not is_tool_trial(t, names))}
    if stopped is None or evaluated >= request.trials:
        stopped = _reached(evaluated, seen, request.trials, space) or "idle"
    counts["stopped"] = stopped
    reasons: dict[str, int] = {}
    counted_reasons: set[str] = set()
    for t in finished:
        k = config_key(t.user_attrs["config"])
        if t.state == TrialState.PRUNED and k not in counted_reasons:
            counted_reasons.add(k)
            reason = str(t.user_attrs.get("infeasible", "pruned"))
            reason = reason.split(":")[0] if ":" in reason else reason
            reasons[reason] = reasons.get(reason, 0) + 1
    history: list[float] = []  # best-so-far time after each new feasible configuration
    best_so_far, counted = math.inf, set()
    for t in complete:
        k = config_key(t.user_attrs["config"])
        if k in counted:
            continue
        counted.add(k)
        best_so_far = min(best_so_far, t.value)
        history.append(best_so_far)

    best = None
    if complete:
        top = min(complete, key=lambda t: (t.value, t.number))
        best = {"config": dict(top.user_attrs["config"]), "time_s": top.value,
                "throughput": top.user_attrs.get("throughput"), "trial": top.number, "source": "study"}

    heur_config: dict[str, Any] = {}
    try:
        heur_config = tunable.heuristic(problem, hw)
        ev = tunable.evaluate(problem, heur_config, hw)
        distinct = {config_key(t.user_attrs["config"]): t.value for t in complete}
        rank = 1 + sum(1 for v in distinct.values() if v < ev.time_s * (1 - 1e-9))
        first = next((t.number for t in complete if config_key(t.user_attrs["config"]) == config_key(heur_config)),
                     None)
        heuristic = {"config": heur_config, "time_s": ev.time_s, "throughput": ev.throughput, "rank": rank,
                     "ranked_among": len(distinct | {config_key(heur_config): ev.time_s}),
                     "in_space": space.to_optuna(heur_config) is not None, "trial": first}
        if best is None or ev.time_s < best["time_s"]:  # a heuristic outside the space, or no trial yet
            best = {"config": heur_config, "time_s": ev.time_s, "throughput": ev.throughput, "trial": None,
                    "source": "heuristic"}
    except (Infeasible, ParamError, BufferCapacityError) as exc:  # the paper's rule may not fit a user's profile
        heuristic = {"config": heur_config, "time_s": None, "throughput": None, "rank": None,
                     "ranked_among": None, "infeasible": getattr(exc, "reason", str(exc))}
    speedup = heuristic["time_s"] / best["time_s"] if best and heuristic["time_s"] else None

    counts["replayed"] = sum(1 for t in finished if t.user_attrs.get("run") == request.run_id
                             and t.user_attrs.get("replayed"))
    outcome = ProblemOutcome(dict(problem), key, study.study_name, counts, best, heuristic, speedup, reasons,
                             history=history)
    outcome.cost = cost.as_dict() if cost is not None else None
    if best is not None:
        outcome.deploy = deployment(request.kernel, problem, best["config"], request.hardware)
    wanted, outcome.exhaustive_skipped, about = _exhaustive_wanted(request, space, problem,
                                                                   covered=seen >= space.grid_size)
    if wanted:
        cores = grid_processes(request)

        def shown(done: int, total: int, note: str = "") -> None:  # an automatic grid says what it will cost
            # the estimate divides a one-process sample by the processes: on a busy machine it takes longer
            grid_progress(done, total, note or f", {total:,} points, about {about:.0f} s if {cores} cores are free")

        outcome.exhaustive = exhaustive_report(request, space, problem, history, best, heuristic,
                                               shown if grid_progress and about is not None else grid_progress,
                                               study)
    # importance over the whole grid where it is known (not biased by where the sampler looked)
    if outcome.exhaustive and outcome.exhaustive.get("importance"):
        outcome.importance, outcome.importance_source = outcome.exhaustive["importance"], "grid"
    else:
        outcome.importance = importance(study, space)
        outcome.importance_source = "study" if outcome.importance is not None else None
    return outcome


def deployment(kernel: str, problem: Mapping[str, Any], config: Mapping[str, Any], hardware: str
               ) -> dict[str, Any]:
    """The configuration as something to deploy: `command`, the argument list of the `ascendbench run` command
    that runs it on the problem (tunable.run_command), `shell`, that command quoted for a POSIX shell,
    `fragment`, {kernel, hardware, problem, config} as JSON-ready values, and `note`: why that run's time may
    differ from the tuned one (a kernel whose time depends on its input's values: KernelSpec.data_note), or
    None."""
    import shlex

    tunable = get_tunable(kernel)
    argv = ["ascendbench", *tunable.run_command(problem, config), "--hardware", hardware]
    spec = getattr(tunable, "spec", None)
    note = spec.data_note(config) if spec is not None else None
    return {"command": argv, "shell": shlex.join(argv), "note": note,
            "fragment": {"kernel": kernel, "hardware": hardware, "problem": dict(problem), "config": dict(config)}}


def combine_seeds(outcomes: Sequence[ProblemOutcome]) -> ProblemOutcome:
    """One problem searched with several seeds: the outcome of the seed whose best is fastest, with `seeds`:
    per seed its best time, speed-up over the heuristic, regret and distinct configurations to within 1% of
    the optimum (where the ground truth is known), configurations evaluated and why its search ended, and
    their spread (min, median, max)."""
    rows = []
    for o in outcomes:
        ex = o.exhaustive or {}
        rows.append({"seed": _seed_of(o.study_name), "study_name": o.study_name,
                     "best_time_s": o.best["time_s"] if o.best else None, "speedup": o.speedup,
                     "regret": ex.get("regret"), "trials_to_1pct": ex.get("trials_to_1pct"),
                     "evaluated": o.trials["evaluated"], "distinct": o.trials["distinct"],
                     "infeasible": o.trials["infeasible"], "finished": o.trials["finished"],
                     "stopped": o.trials.get("stopped")})

    def spread(name: str) -> dict[str, float] | None:
        values = [r[name] for r in rows if r[name] is not None]
        if not values:
            return None
        return {"min": min(values), "median": statistics.median(values), "max": max(values)}

    timed = [o for o in outcomes if o.best]
    chosen = min(timed, key=lambda o: o.best["time_s"]) if timed else outcomes[0]
    combined = dataclasses.replace(chosen)
    combined.seeds = {"runs": rows, "spread": {name: spread(name) for name in
                                               ("best_time_s", "speedup", "regret", "trials_to_1pct")}}
    costs = [o.cost for o in outcomes if o.cost]
    if costs:  # the searches of every seed
        total = SearchCost()
        for c in costs:
            total.add(SearchCost(**{f.name: c[f.name] for f in dataclasses.fields(SearchCost)}))
        combined.cost = total.as_dict()
    return combined


def _seed_of(study_name: str) -> int | None:
    tail = study_name.rsplit("/seed-", 1)
    return int(tail[1]) if len(tail) == 2 and tail[1].isdigit() else None


def importance(study: optuna.Study, space: SearchSpace) -> dict[str, float] | None:
    """Parameter importance of the study's feasible trials (Optuna's PED-ANOVA evaluator, which needs no
    extra package), keyed by the space's parameter names; None with fewer than 10 distinct configurations or
    when nothing varies."""
    ours = _names(space)
    complete = [t for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
                if not t.user_attrs.get("repeat") and is_tool_trial(t, ours)]
    if len(complete) < 10:
        return None
    if any(not is_tool_trial(t, ours) for t in study.get_trials(deepcopy=False)):
        # plain Optuna's trials have other parameters (the importance would be theirs): measured without
        own = optuna.create_study(storage=optuna.storages.InMemoryStorage(), direction="minimize")
        own.add_trials([t for t in study.get_trials(deepcopy=False, states=_FINISHED) if is_tool_trial(t, ours)])
        study = own
    return _ped_anova(study, space)


def _ped_anova(study: optuna.Study, space: SearchSpace) -> dict[str, float] | None:
    """Optuna's PED-ANOVA importance of the study's parameters, keyed by the space's parameter names (None when
    it cannot be computed: nothing varies)."""
    names = {p.optuna_name(name): name for name, p in space.parameters.items()}
    try:
        with warnings.catch_warnings():  # experimental in Optuna
            warnings.simplefilter("ignore")
            raw = optuna.importance.get_param_importances(
                study, evaluator=optuna.importance.PedAnovaImportanceEvaluator())
    except (RuntimeError, ValueError, ZeroDivisionError):
        return None
    return {names.get(k, k): float(v) for k, v in raw.items()} or None


# ---------------------------------------------------------------------------------------------------------
# Ground truth: the whole grid, stored and reused
# ---------------------------------------------------------------------------------------------------------


def ground_truth_path(request: TuneRequest, space: SearchSpace, problem: Mapping[str, Any]) -> Path:
    """Where the whole grid of (kernel, problem, hardware profile, timing model, space) is kept: a hash of
    all five, so that a changed profile constant, timing model (tool version and model source,
    evaluations.model_fingerprint) or space is evaluated anew; in a folder `ground-truth` beside a journal
    storage (results/tuning/ground-truth for RDB storages)."""
    hw = _profile(request.hardware)
    doc = {"kernel": request.kernel, "problem": dict(problem), "hardware": hw.constants(),
           "model": model_fingerprint(), "space": space.fingerprint()}
    digest = hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()[:20]
    return _beside_storage(request, "ground-truth") / request.kernel / f"{digest}.json"


def _beside_storage(request: TuneRequest, name: str) -> Path:
    """`name` in the folder of the request's journal file (the default one when none is given), or under
    results/tuning for an RDB storage: where the tuner keeps what it derives from a storage's studies."""
    storage = request.storage if request.storage is not None else str(DEFAULT_STORAGE)
    return (Path("results") / "tuning" if _is_url(storage) else Path(storage).parent) / name


def load_ground_truth(request: TuneRequest, space: SearchSpace, problem: Mapping[str, Any]
                      ) -> list[tuple[dict[str, Any], float | None]] | None:
    """The whole grid kept for the problem, [(configuration, time in s or None where infeasible)] in the
    grid's order; None when it is not kept (or the file does not hold exactly this space's grid)."""
    return _read_ground_truth(request, space, problem)[0]


def _importance_method() -> str:
    """What computed a kept grid importance: one computed otherwise is computed again."""
    return f"PED-ANOVA, Optuna {optuna.__version__}"


def _read_ground_truth(request: TuneRequest, space: SearchSpace, problem: Mapping[str, Any]
                       ) -> tuple[list[tuple[dict[str, Any], float | None]] | None, dict[str, Any] | None]:
    """(load_ground_truth's grid, {"importance": the grid importance kept with it (None: none measurable)} or
    None when the file keeps none computed by this Optuna)."""
    path = ground_truth_path(request, space, problem)
    try:
        doc = json.loads(path.read_text())
        grid = [(dict(c), None if t is None else float(t)) for c, t in doc["grid"]]
    except (OSError, ValueError, KeyError, TypeError):
        return None, None
    # a file that does not hold exactly this space's grid is not trusted (it is evaluated again and replaced)
    if len(grid) != space.grid_size or any(set(c) != set(space.parameters) for c, _ in grid):
        return None, None
    kept = doc.get("importance")
    if (not isinstance(kept, dict) or kept.get("method") != _importance_method()
            or not (kept.get("values") is None or isinstance(kept.get("values"), dict))):
        return grid, None
    return grid, {"importance": kept["values"]}


def _store_ground_truth(request: TuneRequest, space: SearchSpace, problem: Mapping[str, Any],
                        grid: list[tuple[dict[str, Any], float | None]],
                        importance: dict[str, float] | None = None) -> bool:
    """Write atomically (store.io's staging file renamed), so that a killed run leaves no half-written file,
    and its staging file is removed by a later write there, with the grid's importance (grid_importance; kept
    because it takes seconds on a large grid, every report would compute it again). Returns whether it was
    kept."""
    from ascendbench.store.io import atomic_write_text

    path = ground_truth_path(request, space, problem)
    try:
        atomic_write_text(path, json.dumps({"kernel": request.kernel, "problem": dict(problem),
                                            "hardware": request.hardware, "grid": grid,
                                            "importance": {"method": _importance_method(), "values": importance}}))
    except OSError:  # a read-only folder, a file in the way: the ground truth is not kept (the report says so)
        return False
    return True


def _grid_from_study(study: optuna.Study, space: SearchSpace) -> list[tuple[dict[str, Any], float | None]] | None:
    """The whole grid as the study's finished trials give it (None unless every grid point is there)."""
    outcome: dict[str, float | None] = {}
    names = _names(space)
    for t in study.get_trials(deepcopy=False, states=_FINISHED):
        if not is_tool_trial(t, names):
            continue
        outcome.setdefault(config_key(t.user_attrs["config"]),
                           t.value if t.state == TrialState.COMPLETE else None)
    if len(outcome) < space.grid_size:
        return None
    points = space.grid()
    keys = [config_key(c) for c in points]
    if any(k not in outcome for k in keys):
        return None
    return [(c, outcome[k]) for c, k in zip(points, keys, strict=True)]


def _exhaustive_wanted(request: TuneRequest, space: SearchSpace, problem: Mapping[str, Any],
                       covered: bool = False) -> tuple[bool, str | None, float | None]:
    """--exhaustive / --no-exhaustive when given; else yes when the ground truth is stored, the grid is small,
    the study covers the grid (`covered`), or a timed sample says the whole grid takes at most
    AUTO_EXHAUSTIVE_SECONDS here. Returns (wanted, why not, the sample's estimate in seconds when one was
    timed)."""
    if request.exhaustive is not None:
        return request.exhaustive, None if request.exhaustive else "--no-exhaustive", None
    if space.grid_size <= AUTO_EXHAUSTIVE_POINTS or ground_truth_path(request, space, problem).exists():
        return True, None, None
    if covered:
        return True, None, None
    if space.grid_size > MAX_GRID_POINTS:
        return False, f"the grid has {space.grid_size:,} points, more than {MAX_GRID_POINTS:,}", None
    estimate = estimate_grid_seconds(request, space, problem)
    if estimate <= AUTO_EXHAUSTIVE_SECONDS:
        return True, None, estimate
    return False, (f"the whole grid ({space.grid_size:,} points) is estimated at {estimate:.0f} s here, over "
                   f"{AUTO_EXHAUSTIVE_SECONDS:.0f} s: --exhaustive evaluates it (and keeps it)"), estimate


def estimate_grid_seconds(request: TuneRequest, space: SearchSpace, problem: Mapping[str, Any],
                          sample: int = 24) -> float:
    """Seconds the whole grid would take: `sample` grid points not in the evaluation store (evenly spread)
    timed here, scaled to the points the store does not hold (those are replayed in no time) and divided over
    the processes of an exhaustive evaluation."""
    points = space.grid()
    if request.replay:
        store = open_evaluation_store(request, problem)
        store.close()  # its rows stay readable in memory
        points = [c for c in points if config_key(c) not in store.rows]
    step = max(1, len(points) // sample)
    chosen = points[::step][:sample]
    start = time.perf_counter()
    _evaluate_points(request.kernel, request.hardware, dict(problem), chosen)
    per_point = (time.perf_counter() - start) / max(1, len(chosen))
    return per_point * len(points) / grid_processes(request)


IMPORTANCE_SHOWN_POINTS = 1000  # exhaustive_report says it computes a grid importance over this many points or more
TOP_RANKS = 5  # exhaustive_report's `top`: the configurations ranked 1 to 5, ties included ...
MAX_TOP_SHOWN = 50  # ... at most this many (the rest counted in top_left_out)


def grid_importance(feasible: Sequence[tuple[dict[str, Any], float]], space: SearchSpace
                    ) -> dict[str, float] | None:
    """Parameter importance over the whole grid's feasible points (Optuna's PED-ANOVA evaluator on an in-memory
    study holding every point once), keyed by the space's parameter names: unlike the study's importance,
    not biased by where the sampler chose to look. None with fewer than 10 points or when nothing varies."""
    if len(feasible) < 10:
        return None
    distributions = None
    trials = []
    for config, time_s in feasible:
        params = space.to_optuna(config)
        if params is None:
            return None
        if distributions is None:
            fixed = optuna.trial.FixedTrial(params)
            space.suggest(fixed)
            distributions = fixed.distributions
        trials.append(optuna.trial.create_trial(params=params, distributions=distributions, value=time_s))
    study = optuna.create_study(storage=optuna.storages.InMemoryStorage(), direction="minimize")
    study.add_trials(trials)
    return _ped_anova(study, space)


def exhaustive_report(request: TuneRequest, space: SearchSpace, problem: dict[str, Any], history: list[float],
                      best: dict[str, Any] | None, heuristic: dict[str, Any] | None = None,
                      progress: Callable[..., None] | None = None,
                      study: optuna.Study | None = None) -> dict[str, Any]:
    """The true optimum of the grid and how close the study got: regret = best / optimum - 1, the true rank
    (1 = optimal) of the best found and of the heuristic among the grid's feasible points, and the number of
    distinct configurations it took to come within 1% and 5% of the optimum (None: not reached). The grid is
    read from the ground-truth store when it holds it; else taken from the study when the study covers the
    whole grid (workers sharing a study with --sampler grid spread the evaluation over machines); else
    evaluated here. Either of the last two is then stored, with the grid's importance.

    progress(done, total) is called as grid points are evaluated, and progress(total, total, note) before a
    grid importance that takes seconds (IMPORTANCE_SHOWN_POINTS), note saying so."""
    (grid, known), source = _read_ground_truth(request, space, problem), "store"
    if grid is None and study is not None:
        grid, source = _grid_from_study(study, space), "study"
    grid_cost: dict[str, Any] | None = None
    if grid is None:
        grid_cost = {}
        grid, source = evaluate_grid(request, space, problem, progress, grid_cost), "evaluated"
    stored = source == "store"
    feasible = [(c, t) for c, t in grid if t is not None]
    if known is not None:
        grid_importance_ = known["importance"]
    else:
        if progress is not None and len(feasible) >= IMPORTANCE_SHOWN_POINTS:  # seconds on a large grid
            progress(len(grid), len(grid), ": parameter importance")
        grid_importance_ = grid_importance(feasible, space)
    # a ground truth kept without its importance (an older file) gets it
    kept = (stored and known is not None) or _store_ground_truth(request, space, problem, grid, grid_importance_)
    if not feasible:
        return {"points": len(grid), "feasible": 0, "within_1pct": 0, "top": [], "top_left_out": 0,
                "importance": None, "optimum": None, "regret": None, "best_rank": None,
                "heuristic_rank": None, "trials_to_1pct": None, "trials_to_5pct": None, "stored": stored,
                "source": source, "kept": kept, "grid_cost": grid_cost}
    config, opt = min(feasible, key=lambda ct: ct[1])
    tunable = get_tunable(request.kernel)
    throughput = tunable.evaluate(problem, config, _profile(request.hardware)).throughput
    times = sorted(t for _, t in feasible)

    def rank(time_s: float | None) -> int | None:
        return None if time_s is None else 1 + bisect.bisect_left(times, time_s * (1 - 1e-9))

    ranked = sorted(feasible, key=lambda ct: ct[1])
    top = [{"rank": rank(t), "config": c, "time_s": t} for c, t in ranked if rank(t) <= TOP_RANKS]
    return {"points": len(grid), "feasible": len(feasible),
            "within_1pct": bisect.bisect_right(times, opt * 1.01),
            "top": top[:MAX_TOP_SHOWN], "top_left_out": max(0, len(top) - MAX_TOP_SHOWN),
            "importance": grid_importance_,
            "optimum": {"config": config, "time_s": opt, "throughput": throughput},
            "regret": best["time_s"] / opt - 1 if best else None,
            "best_rank": rank(best["time_s"]) if best else None,
            "heuristic_rank": rank((heuristic or {}).get("time_s")),
            "heuristic_regret": heuristic["time_s"] / opt - 1 if heuristic and heuristic.get("time_s") else None,
            "trials_to_1pct": _trials_to_within(history, opt, 0.01),
            "trials_to_5pct": _trials_to_within(history, opt, 0.05), "stored": stored, "source": source,
            "kept": kept, "grid_cost": grid_cost}
