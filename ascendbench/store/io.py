"""Atomic file writing: a result file is either complete or absent, never half-written."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["atomic_save_npy", "atomic_write_bytes", "atomic_write_text"]


def _umask_mode() -> int:
    """Permissions a plain open() would give a new file (mkstemp's temporaries are 0600)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def _atomic(path: Path, write) -> None:
    """Call write(file) on a temporary file in the target folder, fsync it, give it the permissions of a
    plain new file, then rename it over `path`; on any failure or interrupt the temporary file is removed."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # A short temporary name: one built from a long target name would exceed the file-name limit.
    fd, tmp = tempfile.mkstemp(prefix=".ascendbench-", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, _umask_mode())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write `data` to `path` atomically (a temporary file, then a rename)."""
    _atomic(path, lambda fh: fh.write(data))


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_save_npy(path: Path, array) -> None:
    """np.save to `path` atomically (streamed to the temporary file: large arrays are not held twice)."""
    import numpy as np

    _atomic(path, lambda fh: np.save(fh, array))
