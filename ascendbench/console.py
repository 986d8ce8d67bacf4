"""The `ascendbench` console script: Ctrl-C and SIGTERM are taken before the command-line machinery loads.

Importing ascendbench.cli loads typer and click (0.1-0.2 s, longer on a loaded machine); a Ctrl-C in that
time used to end in a KeyboardInterrupt traceback from `import typer`. This module imports only the package's
light `__init__` and `ascendbench.interrupts` before installing their handlers, so such a signal ends the
process with one line ("interrupted" / "terminated") and 130 / 143, as it does later."""

from __future__ import annotations

from ascendbench import interrupts


def main() -> None:
    """Install the signal handlers, then run ascendbench.cli.main (which installs them again)."""
    interrupts.install()
    try:
        from ascendbench.cli import main as cli_main
    except KeyboardInterrupt:
        interrupts.exit_for_signal()
    cli_main()


if __name__ == "__main__":
    main()
