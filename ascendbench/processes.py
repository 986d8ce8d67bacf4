"""Worker processes (tune --jobs, run hgemm --jobs, exhaustive grids): how many may start, and starting them
so that no Ctrl-C is lost and none prints a traceback.

A terminal's Ctrl-C reaches the whole process group. The parent used to ignore SIGINT while it started its
children (so that they inherited the ignored SIGINT): a Ctrl-C in that time was lost, and the SIGINT the
parent later sent to a child still starting up (importing NumPy and Optuna, about a second) was ignored too,
so the run went on to its target. Now:

- while starting children, the parent takes SIGINT and SIGTERM with a handler that only records them (an
  exception raised inside multiprocessing's start-up would leave a child nobody joins), stops starting more
  and raises KeyboardInterrupt once they are started;
- each child starts with SIGINT *blocked* (held pending, not discarded) and SIGTERM at its default: a group
  SIGTERM, or the SIGTERM its parent sends to stop it, ends a child still starting at once (it has touched
  nothing yet), and a worker unblocks SIGINT as soon as its own handler is in place (child_started), so that
  a Ctrl-C that came meanwhile is acted on then. Pool workers never unblock it: their parent terminates them.
"""
from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from ascendbench.interrupts import note

__all__ = ["JOBS_PER_CORE", "Starter", "child_started", "imap_in_workers", "jobs_error", "max_jobs",
           "starting_children", "usable_cores"]

JOBS_PER_CORE = 4  # --jobs above this many per usable core only thrash (the model is CPU-bound, no I/O waits)
_T = TypeVar("_T")
_POLL_S = 0.1  # how long a recorded Ctrl-C may wait for imap_in_workers to act on it


def usable_cores() -> int:
    """CPU cores this process may run on (its affinity mask where the OS has one, else the CPU count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def max_jobs() -> int:
    """The most worker processes a --jobs may ask for: JOBS_PER_CORE per usable core."""
    return JOBS_PER_CORE * usable_cores()


def jobs_error(jobs: int) -> str | None:
    """Why `jobs` worker processes are refused, to follow "--jobs: " ("must be at most 8 (...), got 9"); None
    when they are allowed (1 to max_jobs())."""
    if jobs < 1:
        return f"must be at least 1, got {jobs}"
    if jobs > max_jobs():
        return (f"must be at most {max_jobs()} ({JOBS_PER_CORE} per core this process may use, "
                f"{usable_cores()} here), got {jobs:,}")
    return None


class Starter:
    """Starts child processes inside starting_children(). `interrupted`: a SIGINT or SIGTERM has come (start
    no more; the context raises KeyboardInterrupt when it ends)."""

    def __init__(self, signals: list[int]):
        self._signals = signals

    @property
    def interrupted(self) -> bool:
        return bool(self._signals)

    def start(self, launch: Callable[[], _T]) -> _T:
        """launch() (a Process.start, a Pool(...)) with SIGINT blocked in this thread, so that the children
        it forks inherit it blocked; its result."""
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            return launch()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)  # a SIGINT held meanwhile is recorded now


@contextlib.contextmanager
def _signals_recorded() -> Iterator[list[int]]:
    """SIGINT and SIGTERM only recorded meanwhile (interrupts.note(), and in the yielded list), in the main
    thread; elsewhere nothing changes (handlers can only be set there)."""
    came: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield came
        return

    def record(signum: int, _frame: Any) -> None:
        came.append(signum)
        note(signum)

    old = {sig: signal.signal(sig, record) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield came
    finally:
        for sig, previous in old.items():
            signal.signal(sig, previous)


@contextlib.contextmanager
def starting_children() -> Iterator[Starter]:
    """Start child processes without losing a Ctrl-C (see the module docstring). Yields a Starter; raises
    KeyboardInterrupt on leaving when a SIGINT or SIGTERM came meanwhile (the caller stops the children it
    started), after interrupts.note() recorded it for the exit status."""
    from multiprocessing import resource_tracker

    # started lazily by the first child otherwise, and its own start unblocks SIGINT in this thread
    resource_tracker.ensure_running()
    with _signals_recorded() as came:
        yield Starter(came)
    if came:
        raise KeyboardInterrupt


def child_started(handler: Callable[[int, Any], None]) -> None:
    """In a child started by a Starter, first thing: take SIGINT and SIGTERM with `handler`, then unblock
    SIGINT (a Ctrl-C held since the child was forked reaches the handler now)."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, handler)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def imap_in_workers(function: Callable[[Any], _T], tasks: list, jobs: int) -> Iterator[_T]:
    """function(task) for every task, in the order they finish, from `jobs` spawned worker processes (a Pool,
    not a ProcessPoolExecutor: on Ctrl-C the executor's shutdown ran every queued task first; terminate()
    stops at once). The pool starts inside starting_children(), so a Ctrl-C while it starts is not lost, and
    it is terminated when the caller stops early or anything is raised; callers close the generator when they
    stop (contextlib.closing), so that this happens then and not at garbage collection.

    While the pool runs, SIGINT and SIGTERM are only recorded, and KeyboardInterrupt is raised here between
    results (within _POLL_S): raised inside the pool's own code (a second Ctrl-C, or the copy `timeout -s INT`
    sends to the process group after the one to the parent, arriving in Pool.terminate()), it left the pool
    halfway stopped, its workers never stopped and the join waiting for them for ever."""
    import multiprocessing

    pool = None
    with _signals_recorded() as came:
        try:
            with starting_children() as starter:
                pool = starter.start(lambda: multiprocessing.get_context("spawn").Pool(jobs))
            results = pool.imap_unordered(function, tasks)
            while not came:
                try:
                    item = results.next(timeout=_POLL_S)
                except multiprocessing.TimeoutError:
                    continue
                except StopIteration:
                    break
                yield item
            if came:
                raise KeyboardInterrupt
            pool.close()
            pool.join()
        except BaseException:
            if pool is not None:
                pool.terminate()
                pool.join()
            raise
    if came:  # during the last join
        raise KeyboardInterrupt
