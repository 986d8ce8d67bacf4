"""Ctrl-C and SIGTERM for the command and the scripts (benchmarks/, python -m ascendbench.reference.*): one
line on stderr ("interrupted" / "terminated") and the status a shell reports for the signal (130 / 143), no
traceback. SIGTERM unwinds like Ctrl-C, so that finally-blocks remove temporary files."""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable
from typing import NoReturn

__all__ = ["Interrupts", "run_script"]


class Interrupts:
    """The signals received since `install`; `exit` ends the process as the first one asks."""

    def __init__(self) -> None:
        self.received: list[int] = []

    def install(self) -> Interrupts:
        def on_signal(signum, frame):
            self.received.append(signum)
            raise KeyboardInterrupt

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        return self

    def exit(self) -> NoReturn:
        term = signal.SIGTERM in self.received
        print("terminated" if term else "interrupted", file=sys.stderr)
        sys.exit(128 + signal.SIGTERM if term else 130)


def run_script(main: Callable[[], int | None]) -> int:
    """Run a script's main(): its exit status, or the signal's (see the module docstring)."""
    interrupts = Interrupts().install()
    try:
        return main() or 0
    except KeyboardInterrupt:
        interrupts.exit()
