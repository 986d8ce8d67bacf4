"""Atomic file writing: a result file is either complete or absent, never half-written."""

from __future__ import annotations

import os
import re
import secrets
import tempfile
from pathlib import Path

__all__ = ["atomic_save_npy", "atomic_write_bytes", "atomic_write_text", "partial_path", "remove_stale_partials",
           "remove_stale_staging", "staging_prefix", "unreadable_npy"]

NPY_MAGIC = b"\x93NUMPY"  # the first bytes of every .npy file
ZIP_MAGIC = b"PK\x03\x04"  # np.load reads a file that starts so as an .npz archive


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
    remove_stale_staging(path.parent)
    fd, tmp = tempfile.mkstemp(prefix=staging_prefix(), suffix=".tmp", dir=path.parent)
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


def unreadable_npy(path: Path, exc: BaseException, what: str = ".npy array") -> str:
    """Why np.load(path, allow_pickle=False) raised `exc`, as the rest of a sentence that starts with the path:
    "is empty", "is not a .npy file (bad magic ...)", "holds Python objects ...", or "is not a readable <what>
    (NumPy's reason)". NumPy itself calls any file without the .npy magic pickled data and suggests
    allow_pickle, which would be wrong advice for a text file."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(len(NPY_MAGIC))
    except OSError as err:
        return f"cannot be read: {err.strerror or err}"
    if not head:
        return f"is empty (0 bytes), not a {what}"
    if head.startswith(ZIP_MAGIC):
        if ".npz" not in what:
            return f"is not a readable {what} (it is a zip archive, as a .npz is)"
        return f"is not a readable .npz archive ({exc or 'truncated'})"
    if not head.startswith(NPY_MAGIC):
        return (f"is not a {what.rsplit(' ', 1)[0]} file (bad magic: it starts with {head!r}, a .npy file with "
                f"{NPY_MAGIC!r})")
    if "allow_pickle" in str(exc) or "Python objects" in str(exc):  # np.load, or np.load with mmap_mode
        return "holds Python objects (an object array), which are not loaded; save a numeric array"
    return f"is not a readable {what} ({exc or 'truncated'})"


def partial_path(target: Path) -> Path:
    """The hidden file a large output is written to before it is renamed over `target`:
    ``.<target name>.<pid of this process>.<8 hex digits>.partial`` beside it. The pid lets a later run tell a
    file left by a killed writer from one still being written (remove_stale_partials)."""
    target = Path(target)
    return target.with_name(f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}.partial")


def _running(pid: int) -> bool:
    """Whether process `pid` exists on this host (a process of another user counts as running)."""
    if pid <= 0:
        return True  # not a real writer's pid: never treat the file as stale
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


def staging_prefix() -> str:
    """The start of this process's hidden staging files (".ascendbench-<pid>-"): the pid lets a later run tell
    the file of a killed writer from one still being written (remove_stale_staging)."""
    return f".ascendbench-{os.getpid()}-"


def remove_stale_staging(folder: Path) -> list[Path]:
    """Remove the hidden staging files in `folder` (".ascendbench-<pid>-..." as staging_prefix names them) whose
    writer process no longer runs, e.g. after a SIGKILL; other files are kept (see remove_stale_partials)."""
    return _remove_dead(Path(folder), re.compile(r"\.ascendbench-([0-9]+)-[0-9a-z_]+(\.[A-Za-z0-9]+)?"))


def _remove_dead(folder: Path, pattern: re.Pattern) -> list[Path]:
    """Remove the regular files of `folder` whose name fully matches `pattern` (group 1: the writer's pid) and
    whose writer no longer runs. Returns the removed paths; errors are ignored."""
    removed = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        match = pattern.fullmatch(entry.name)
        if match is None or _running(int(match.group(1))):
            continue
        try:
            if entry.is_file(follow_symlinks=False):
                os.unlink(entry.path)
                removed.append(Path(entry.path))
        except OSError:
            pass
    return removed


def remove_stale_partials(target: Path) -> list[Path]:
    """Remove the partial files of `target` (exactly the partial_path pattern for its name, in its folder) whose
    writer process no longer runs, e.g. after a SIGKILL. Files of running writers, other targets' files and
    anything else are kept; a reused pid keeps a stale file (the safe side). Writers on other hosts sharing the
    folder cannot be seen: their pids are taken as this host's. Returns the removed paths; errors are ignored."""
    target = Path(target)
    return _remove_dead(target.parent, re.compile(rf"\.{re.escape(target.name)}\.([0-9]+)\.[0-9a-f]{{8}}\.partial"))
