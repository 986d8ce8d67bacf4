"""Command-line entry point: wiring only; each command lives in ascendbench/commands/."""

from __future__ import annotations

import typer

from ascendbench import __version__
from ascendbench.commands import hardware, hgemm, run, run_hgemm  # noqa: F401 (run_hgemm registers `run hgemm`)

app = typer.Typer(
    name="ascendbench",
    help="Benchmark scan and HGEMM kernels on a simulated Huawei Ascend NPU (timings from a hardware model, "
         "results checked against NumPy).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.add_typer(run.app, name="run")
app.add_typer(hardware.app, name="hardware")
app.add_typer(hgemm.app, name="hgemm")


def _version(value: bool) -> None:
    if value:
        typer.echo(__version__)
        raise typer.Exit()


@app.callback()
def main_options(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version."),
) -> None:
    """ascendbench"""


def main() -> None:
    app()


if __name__ == "__main__":
    main()
