"""Command-line entry point: wiring only; each command lives in ascendbench/commands/."""

from __future__ import annotations

import typer

from ascendbench import __version__

# Modules that add subcommands to `run` register themselves on import.
from ascendbench.commands import (  # noqa: F401
    hardware,
    hgemm,
    kernels,
    reproduce,
    results,
    run,
    run_batched,
    run_compress,
    run_hgemm,
    run_sample,
    run_segmented,
    run_sort,
    run_split,
    run_topk,
    run_topp,
    tune,
    validate,
)

app = typer.Typer(
    name="ascendbench",
    help="Benchmark scan and HGEMM kernels on a simulated Huawei Ascend NPU (timings from a hardware model, "
         "results checked against NumPy).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
from ascendbench.commands.generic import add_registry_commands

add_registry_commands(run.app, tune.app)  # registry kernels without a command of their own
app.add_typer(run.app, name="run")
app.add_typer(hardware.app, name="hardware")
app.add_typer(hgemm.app, name="hgemm")
app.add_typer(tune.app, name="tune")
app.add_typer(results.app, name="results")
app.command("kernels")(kernels.kernels)
app.command("validate")(validate.validate)
app.command("reproduce")(reproduce.reproduce)


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
    """Console entry point: usage errors from option parsing become one line on stderr with exit status 2,
    and SIGTERM unwinds like Ctrl-C so that no temporary file is left behind."""
    import sys

    from ascendbench import interrupts

    # typer bundles its own click; its exception classes are reached through typer's public ones
    usage_error = typer.BadParameter.__mro__[1]
    click_exception = typer.BadParameter.__mro__[2]
    interrupts.install()
    try:
        # without standalone mode, click returns the exit code of typer.Exit instead of raising it
        code = app(standalone_mode=False)
        if interrupts.received() and code == 130:  # typer turns the KeyboardInterrupt into Exit(130)
            interrupts.exit_for_signal()
        sys.exit(code if isinstance(code, int) else 0)
    except usage_error as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":  # the help text has been printed
            sys.exit(0)
        hint = f" (see `{exc.ctx.command_path} --help`)" if exc.ctx is not None else ""
        print(f"error: {exc.format_message()}{hint}", file=sys.stderr)
        sys.exit(2)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        interrupts.exit_for_signal()
    except click_exception as exc:
        exc.show()
        sys.exit(exc.exit_code)


if __name__ == "__main__":
    main()
