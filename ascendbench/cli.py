"""Command-line entry point: wiring only; each command lives in ascendbench/commands/.

The command modules import NumPy, Optuna, pydantic and matplotlib; they are imported when their command runs
(or its --help is asked for), so `ascendbench --version`, `ascendbench --help` and shell completion of the
command names stay fast."""

from __future__ import annotations

import importlib

import typer
from typer.core import TyperCommand, TyperGroup

from ascendbench import __version__

# name: (module, attribute: a typer app or a command function, the start of its help for `ascendbench --help`)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "run": ("ascendbench.commands.run", "app", "Run a kernel on real data through the simulated NPU and verify it."),
    "hardware": ("ascendbench.commands.hardware", "app",
                 "Hardware profiles of the simulated chips (constants with their sources)."),
    "hgemm": ("ascendbench.commands.hgemm", "app", "HGEMM kernels of the HGEMM paper: tiling selection."),
    "tune": ("ascendbench.commands.tune", "app",
             ("Search kernel configurations with Optuna on the timing model and compare the best with the papers' "
              "heuristics.")),
    "results": ("ascendbench.commands.results", "app",
                "List, show and compare result files (runs and tuning results)."),
    "validate": ("ascendbench.commands.validate", "validate",
                 ("Evaluate the papers' claims with the simulator: one row per claim (paper, simulated, ratio, "
                  "tolerance, verdict).")),
    "correlate": ("ascendbench.commands.correlate", "correlate",
                  "Compare measured kernel times with the simulator: per row the simulated time and the ratio"),
    "reproduce": ("ascendbench.commands.reproduce", "reproduce",
                  "Redraw the scan paper's and the HGEMM paper's figures and tables from the simulator."),
    "kernels": ("ascendbench.commands.kernels", "kernels",
                ("List every kernel of the registry: its family, variants (or algorithms), tuned parameters and "
                 "source.")),
}
def _converted(target, name: str):
    """The click command of a typer app or command function, mounted on a wrapper as add_typer would mount it on
    the top-level app (a typer app converted on its own would get completion options of its own)."""
    wrapper = typer.Typer(add_completion=False)
    wrapper.callback()(lambda: None)
    if isinstance(target, typer.Typer):
        wrapper.add_typer(target, name=name)
    else:
        wrapper.command(name)(target)
    return typer.main.get_command(wrapper).commands[name]


class LazyRunGroup(TyperGroup):
    """`run`: a subcommand is made (commands/generic.py) when it is resolved; listings make them all."""

    complete = False

    def _load_all(self) -> None:
        if self.complete:
            return
        from ascendbench.commands.generic import registry_app

        for name, command in _converted(registry_app("run"), "run").commands.items():
            self.commands.setdefault(name, command)
        self.complete = True

    def list_commands(self, ctx) -> list[str]:
        self._load_all()
        return super().list_commands(ctx)

    def get_command(self, ctx, cmd_name: str):
        if cmd_name not in self.commands:
            from ascendbench.commands import generic

            made = generic.run_commands(cmd_name)  # the registry kernel's command, made from its model
            if not made:
                self._load_all()
            else:
                single = typer.Typer(add_completion=False)
                single.registered_commands.append(made[0])
                single.callback()(lambda: None)
                self.commands[cmd_name] = typer.main.get_command(single).commands[cmd_name]
        return super().get_command(ctx, cmd_name)


def load_command(name: str):
    """The click command of `name` (a key of COMMANDS), importing its module (`run`: only the subcommand's)."""
    module_name, attribute, _ = COMMANDS[name]
    module = importlib.import_module(module_name)
    target = getattr(module, attribute)
    if name == "tune":  # and `tune <kernel>` for the registry's other kernels with a search space
        from ascendbench.commands.generic import registry_app

        target = registry_app(name)
    command = _converted(target, name)
    if name == "run":
        command.__class__ = LazyRunGroup  # run.app holds no command: each is made when it is asked for
    return command


class LazyGroup(TyperGroup):
    """The top-level group: a command's module is imported when the command is resolved; listings (--help,
    completion of command names) show the help start kept in COMMANDS instead."""

    listing = False

    def list_commands(self, ctx) -> list[str]:
        return [*super().list_commands(ctx), *COMMANDS]

    def get_command(self, ctx, cmd_name: str):
        if cmd_name in self.commands or cmd_name not in COMMANDS:
            return super().get_command(ctx, cmd_name)
        if self.listing:
            return TyperCommand(cmd_name, help=COMMANDS[cmd_name][2])
        self.commands[cmd_name] = load_command(cmd_name)
        return self.commands[cmd_name]

    def format_help(self, ctx, formatter) -> None:
        self.listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self.listing = False

    def shell_complete(self, ctx, incomplete: str):
        self.listing = True
        try:
            return super().shell_complete(ctx, incomplete)
        finally:
            self.listing = False


app = typer.Typer(
    name="ascendbench",
    cls=LazyGroup,
    help="Benchmark and autotune scan, sort, top-k/top-p and HGEMM kernels on a simulated Huawei Ascend NPU "
         "(timings from a hardware model, results checked against NumPy).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    # every command's context inherits this from the top-level one, so -h works on each subcommand too
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"ascendbench {__version__}")
        raise typer.Exit()


@app.callback()
def main_options(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version."),
) -> None:
    """ascendbench"""


def main() -> None:
    """Console entry point: usage errors from option parsing become one line on stderr with exit status 2,
    and SIGTERM unwinds like Ctrl-C so that no temporary file is left behind. Whatever it prints of the
    command line (a usage error quoting an argument, the traceback of an unexpected error) has URL passwords
    as *** (ascendbench.redact)."""
    import sys

    from ascendbench import interrupts
    from ascendbench.redact import redact

    # typer bundles its own click; its exception classes are reached through typer's public ones
    usage_error = typer.BadParameter.__mro__[1]
    click_exception = typer.BadParameter.__mro__[2]
    interrupts.install()
    try:
        # without standalone mode, click returns the exit code of typer.Exit instead of raising it
        # prog_name: completion scripts and usage lines name the installed command, also under python -m
        code = app(standalone_mode=False, prog_name="ascendbench")
        if interrupts.received() and code == 130:  # typer turns the KeyboardInterrupt into Exit(130)
            interrupts.exit_for_signal()
        sys.exit(code if isinstance(code, int) else 0)
    except usage_error as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":  # the help text has been printed
            sys.exit(0)
        hint = f" (see `{exc.ctx.command_path} --help`)" if exc.ctx is not None else ""
        print(redact(f"error: {exc.format_message()}{hint}"), file=sys.stderr)
        sys.exit(2)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        interrupts.exit_for_signal()
    except click_exception as exc:
        print(redact(f"Error: {exc.format_message()}"), file=sys.stderr)  # as exc.show() prints it
        sys.exit(exc.exit_code)
    except Exception:  # a bug: Python's own traceback, exit status 1, with the exception's text masked
        import traceback

        sys.stderr.write(redact(traceback.format_exc()))
        sys.exit(1)


if __name__ == "__main__":
    main()
