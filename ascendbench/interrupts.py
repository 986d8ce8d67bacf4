"""Ctrl-C and SIGTERM for the command and the scripts (benchmarks/, python -m ascendbench.reference.*): one
line on stderr ("interrupted" / "terminated") and the status a shell reports for the signal (130 / 143), no
traceback. SIGTERM unwinds like Ctrl-C, so that finally-blocks remove temporary files."""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable
from typing import NoReturn

__all__ = ["Interrupts", "note", "run_script"]

_RECEIVED: list[int] = []  # every SIGINT / SIGTERM of the process, whichever handler took it


def note(signum: int) -> None:
    """Record a signal that a handler of its own took (tune's stop-after-the-trial handler), so that the
    process still ends with the status and line of the first signal."""
    _RECEIVED.append(signum)


class Interrupts:
    """The signals received (by this handler or reported with `note`); `exit` ends the process as the first
    one asks."""

    @property
    def received(self) -> list[int]:
        return _RECEIVED

    def install(self) -> Interrupts:
        def on_signal(signum, frame):
            note(signum)
            raise KeyboardInterrupt

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        return self

    def exit(self) -> NoReturn:
        term = signal.SIGTERM in _RECEIVED
        print("terminated" if term else "interrupted", file=sys.stderr)
        sys.exit(128 + signal.SIGTERM if term else 130)


def run_script(main: Callable[[], int | None]) -> int:
    """Run a script's main(): its exit status, or the signal's (see the module docstring)."""
    interrupts = Interrupts().install()
    try:
        return main() or 0
    except KeyboardInterrupt:
        interrupts.exit()
