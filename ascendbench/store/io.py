"""Atomic file writing: a result file is either complete or absent, never half-written."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import secrets
import socket
import tempfile
from pathlib import Path

__all__ = ["atomic_save_npy", "atomic_write_bytes", "atomic_write_text", "partial_path", "process_space_tag",
           "remove_leftovers", "remove_stale_partials", "remove_stale_staging", "staging_prefix", "unreadable_npy"]

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
    remove_leftovers(path.parent)
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
    ``.ascendbench-<pid>-<tag>-<8 hex digits>.<target name>.partial`` beside it (staging_prefix; the target's
    name shortened to 100 bytes, so that the name fits any folder). A later write in that folder removes it
    once its writer no longer runs (remove_leftovers)."""
    target = Path(target)
    return target.with_name(f"{staging_prefix()}{secrets.token_hex(4)}.{_shortened(target.name, 100)}.partial")


def _shortened(name: str, limit: int) -> str:
    """`name` cut to at most `limit` bytes of its file-system encoding (whole characters)."""
    while len(os.fsencode(name)) > limit:
        name = name[:-1]
    return name


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


@functools.cache
def process_space_tag() -> str:
    """Eight hex digits naming the space in which this process's pid means something: a hash of the host name,
    the machine id and the pid namespace (a container has its own, so two containers, or two hosts sharing a
    folder, get different tags even where their host names agree). A file whose name carries another tag is
    never judged by its pid (remove_leftovers keeps it)."""
    parts = [socket.gethostname()]
    for source in ("/etc/machine-id", "/var/lib/dbus/machine-id"):
        with contextlib.suppress(OSError):
            parts.append(Path(source).read_text().strip())
            break
    with contextlib.suppress(OSError, AttributeError):
        parts.append(os.readlink("/proc/self/ns/pid"))  # Linux; the init namespace's is the same after a reboot
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogateescape")).hexdigest()[:8]


def staging_prefix() -> str:
    """The start of this process's hidden staging and partial files, ".ascendbench-<pid>-<tag>-" (tag:
    process_space_tag): the pid and the tag let a later run tell the file of a killed writer from one still
    being written (remove_leftovers)."""
    return f".ascendbench-{os.getpid()}-{process_space_tag()}-"


# Exactly the names the previous version (no tag; its pids are taken as this host's) wrote, nothing looser: a
# user's file such as ".ascendbench-2025-notes.txt" or ".dataset.4000000.deadbeef.partial" is never removed.
# - _atomic's mkstemp(prefix=".ascendbench-<pid>-", suffix=".tmp"): 8 characters of tempfile's alphabet;
# - Outputs.write's ".ascendbench-<pid>-<token_hex(4)><target suffix>", of the targets it staged (--out and
#   --trace .json, --output-file .npy or .npz, figures .png, .svg or .pdf);
# - partial_path's ".<target name>.<pid>.<token_hex(4)>.partial", used for run scan's --output-file (a .npy).
_OLD_STAGING = re.compile(r"\.ascendbench-([0-9]+)-"
                          r"(?:[a-z0-9_]{8}\.tmp|[0-9a-f]{8}\.(?:json|npy|npz|png|svg|pdf))")
_OLD_PARTIAL = re.compile(r"\..+\.npy\.([0-9]+)\.[0-9a-f]{8}\.partial", re.DOTALL)


def _writer_pid(name: str) -> int | None:
    """The pid of the process that wrote the hidden file `name` of this tool, on this host and in this pid
    namespace; None for any other file (another tag's, a user's, a name of no known form)."""
    if name.startswith(".ascendbench-"):
        mine = re.fullmatch(rf"\.ascendbench-([0-9]+)-{process_space_tag()}-.+", name, re.DOTALL)
        match = mine or _OLD_STAGING.fullmatch(name)
    else:
        match = _OLD_PARTIAL.fullmatch(name)
    return int(match.group(1)) if match else None


def remove_leftovers(folder: Path) -> list[tuple[Path, int]]:
    """Remove the hidden staging and partial files in `folder` whose writer no longer runs (left by a SIGKILL,
    an out-of-memory kill or a crash: such a writer runs no clean-up), whatever output they were for.

    A file is removed only when its name is one this tool makes (staging_prefix, partial_path, or the names of
    earlier versions) and its pid is not a running process of this host and pid namespace. Files of running
    writers, of other hosts or containers (another tag), and every other file are kept; a reused pid keeps a
    stale file (the safe side).

    Args:
        folder: the folder to clean (not its subfolders).

    Returns:
        (path, size in bytes) of each removed file. Errors (an unreadable folder, a file removed meanwhile)
        are ignored: cleaning never stops a write.
    """
    removed = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        pid = _writer_pid(entry.name)
        if pid is None or _running(pid):
            continue
        try:
            if entry.is_file(follow_symlinks=False):
                size = entry.stat(follow_symlinks=False).st_size
                os.unlink(entry.path)
                removed.append((Path(entry.path), size))
        except OSError:
            pass
    return removed


def remove_stale_staging(folder: Path) -> list[Path]:
    """remove_leftovers(folder), the removed paths only."""
    return [path for path, _ in remove_leftovers(Path(folder))]


def remove_stale_partials(target: Path) -> list[Path]:
    """remove_leftovers in `target`'s folder (every dead writer's file there, not only `target`'s), the removed
    paths only."""
    return remove_stale_staging(Path(target).parent)
