"""Ctrl-C and SIGTERM for the command and the scripts (benchmarks/, python -m ascendbench.reference.*): one
line on stderr ("interrupted" / "terminated") and the status a shell reports for the signal (130 / 143), no
traceback. SIGTERM unwinds like Ctrl-C, so that finally-blocks remove temporary files."""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable
from typing import NoReturn

__all__ = ["exit_for_signal", "install", "note", "received", "run_script"]

_RECEIVED: list[int] = []  # every SIGINT / SIGTERM of the process, whichever handler took it


def note(signum: int) -> None:
    """Record a signal that a handler of its own took (tune's stop-after-the-trial handler), so that the
    process still ends as exit_for_signal says."""
    _RECEIVED.append(signum)


def received() -> bool:
    """Whether a SIGINT or SIGTERM has come."""
    return bool(_RECEIVED)


def install() -> None:
    """Make SIGINT and SIGTERM raise KeyboardInterrupt, recording which came."""

    def on_signal(signum, frame):
        note(signum)
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)


def exit_for_signal() -> NoReturn:
    """End the process: "terminated" and 143 if a SIGTERM came, else "interrupted" and 130."""
    term = signal.SIGTERM in _RECEIVED
    print("terminated" if term else "interrupted", file=sys.stderr)
    sys.exit(128 + signal.SIGTERM if term else 130)


def run_script(main: Callable[[], int | None]) -> int:
    """Run a script's main(): its exit status, or the signal's (see the module docstring)."""
    install()
    try:
        return main() or 0
    except KeyboardInterrupt:
        exit_for_signal()
