"""Kept evaluations: every configuration the tuner simulated, per problem, so that a re-run, another seed or
another sampler replays it instead of simulating it again (as Kernel Tuner's simulation mode replays a cache
file).

One SQLite file (Python's sqlite3, WAL journal: several worker processes on one machine read and add at once;
a killed writer loses at most its last uncommitted row and never tears the file) beside the studies' journal
(`evaluations.sqlite`), or results/tuning/evaluations.sqlite for an RDB storage. A row is keyed by

- the problem's digest: kernel, problem, the hardware profile's name and every constant, the tool version and a
  digest of the timing model's source (`model_fingerprint`), so that a changed constant or an edited model is
  simulated anew and old rows are simply never read again;
- the configuration (`config_key`: JSON with sorted keys).

Its value is the simulated time (seconds) and throughput, or the kernel's reason when the configuration is
infeasible. The timing model is deterministic (no noise, no seed), so a replayed value is the value a
simulation would give. A store that cannot be opened or written (read-only folder, a file in the way) is
skipped: the tuner simulates everything, and the report says that nothing was kept.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import sqlite3
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ascendbench.hardware import HardwareProfile
from ascendbench.kernels.tunable import Evaluation

FILE_NAME = "evaluations.sqlite"
# the timing model's source: what decides a simulated time besides the profile's constants
_MODEL_PACKAGES = ("sim", "kernels", "hardware")


@functools.lru_cache(maxsize=1)
def model_fingerprint() -> str:
    """The tool version and a SHA-256 (20 hex digits) of the timing model's source files (ascendbench/sim,
    kernels and hardware, .py and .toml), in path order. An edit of the model changes it; so does an upgrade."""
    from ascendbench import __version__

    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256(__version__.encode())
    for package in _MODEL_PACKAGES:
        for path in sorted((root / package).rglob("*")):
            if path.suffix in (".py", ".toml") and path.is_file():
                digest.update(path.relative_to(root).as_posix().encode())
                digest.update(path.read_bytes())
    return f"{__version__}+{digest.hexdigest()[:20]}"


def problem_digest(kernel: str, problem: Mapping[str, Any], hw: HardwareProfile) -> str:
    """The key of one problem's evaluations (see the module docstring)."""
    doc = {"kernel": kernel, "problem": dict(problem), "hardware": hw.name, "constants": hw.constants(),
           "model": model_fingerprint()}  # the name too: an infeasible reason names the profile
    return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()[:32]


Outcome = Evaluation | str  # a simulated evaluation, or the kernel's reason the configuration is infeasible


class EvaluationStore:
    """The kept evaluations of one problem (see the module docstring), read whole when opened.

    `get(key)` answers from memory, else from the file; `put(key, outcome)` adds a row (committed at once, so
    that other processes see it and a kill loses nothing finished). `available` is False when the file could
    not be opened or written: every call is then a no-op and `error` says why."""

    def __init__(self, path: Path, digest: str, unit: str):
        self.path, self.digest, self.unit = path, digest, unit
        self.rows: dict[str, Outcome] = {}
        self.error: str | None = None
        self._db: sqlite3.Connection | None = None
        db = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if path.exists() and not os.access(path, os.W_OK):
                # replayed from as it stands (immutable: no -wal or -shm file is made beside it), nothing kept
                db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
                self._read(db)
                self.error = f"{path}: not writable: replayed from, nothing kept"
                return
            db = sqlite3.connect(path, timeout=10.0, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")  # WAL: durable across a process kill, cheap per commit
            db.execute("CREATE TABLE IF NOT EXISTS evaluations (problem TEXT NOT NULL, config TEXT NOT NULL, "
                       "time_s REAL, throughput REAL, infeasible TEXT, PRIMARY KEY (problem, config))")
            self._read(db)
            self._db, db = db, None
        except (OSError, sqlite3.Error) as exc:
            self.error = f"{path}: {exc}"
        finally:
            if db is not None:
                db.close()

    def _read(self, db: sqlite3.Connection) -> None:
        for config, time_s, throughput, infeasible in db.execute(
                "SELECT config, time_s, throughput, infeasible FROM evaluations WHERE problem = ?", (self.digest,)):
            self.rows[config] = infeasible if infeasible is not None else Evaluation(time_s, throughput, self.unit)

    @property
    def available(self) -> bool:
        return self._db is not None

    def get(self, key: str) -> Outcome | None:
        """The kept outcome of a configuration: read when the store was opened, or added since by another
        process (a --jobs worker that evaluated it meanwhile: looked up in the file, about 30 us)."""
        hit = self.rows.get(key)
        if hit is None and self._db is not None:
            try:
                row = self._db.execute("SELECT time_s, throughput, infeasible FROM evaluations WHERE problem = ? "
                                       "AND config = ?", (self.digest, key)).fetchone()
            except sqlite3.Error:
                row = None
            if row is not None:
                hit = self.rows[key] = row[2] if row[2] is not None else Evaluation(row[0], row[1], self.unit)
        return hit

    def put(self, key: str, outcome: Outcome) -> None:
        self.put_many([(key, outcome)])

    def put_many(self, items: Iterable[tuple[str, Outcome]]) -> None:
        """Add outcomes not kept yet, in one transaction."""
        new = [(k, o) for k, o in items if k not in self.rows]
        if not new or self._db is None:
            return
        rows = [(self.digest, k, None, None, o) if isinstance(o, str) else (self.digest, k, o.time_s, o.throughput,
                                                                             None) for k, o in new]
        try:
            with self._db:
                self._db.execute("BEGIN")
                self._db.executemany("INSERT OR IGNORE INTO evaluations VALUES (?, ?, ?, ?, ?)", rows)
        except sqlite3.Error as exc:  # a full disk, a folder made read-only: keep tuning, keep nothing more
            self.error = f"{self.path}: {exc}"
            self.close()
            return
        self.rows.update(new)

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def __getstate__(self) -> dict[str, Any]:  # a store is opened again in each worker process
        raise TypeError("EvaluationStore is not sent to other processes: open it there")
