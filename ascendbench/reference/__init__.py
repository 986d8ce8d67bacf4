"""The papers' measurable claims and their evaluation with the simulator (paper figures live only here).

claims.toml holds every claim (paper value, tolerance, kind), hgemm_tables.toml the HGEMM paper's tables;
claims.py loads them and runs one evaluator per claim. `ascendbench validate` prints them all;
`python -m ascendbench.reference.scan_claims` (hgemm_claims, operator_claims, sampling_claims, row_scan_claims)
prints one module's. The simulator and the kernels never import this package.
"""

RANDOM_SHAPES = 5000  # claim G-7: the HGEMM paper's 5000 random shapes (workload random-5000)


def format_value(value) -> str:
    """A paper or simulated value as printed: 4 significant digits, ranges as "low-high"."""
    if isinstance(value, list):
        return "-".join(format_value(v) for v in value)
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def print_rows(rows: list[dict], id_width: int = 5) -> None:
    """One line per claim: ID, kind, verdict, paper value, simulated value, tolerance, statement."""
    for r in rows:
        paper, sim = format_value(r["paper"]), format_value(r["simulated"])
        print(f"{r['id']:{id_width}s} {r['kind']:11s} {'holds' if r['holds'] else 'MISS ':5s}  paper {paper:>14s}  "
              f"simulated {sim:>16s}  ({r['tolerance']})  {r['claim']}")


def run_app(app, argv, prog_name: str):
    """Run a typer app as a script's command line (argv: the arguments, None for sys.argv[1:]) and return its
    exit status. A usage error (an unknown option, a value out of range) is one line on stderr naming the
    option, exit status 2 (SystemExit), as `ascendbench` prints it; Ctrl-C and SIGTERM raise KeyboardInterrupt
    for interrupts.run_script."""
    import sys

    import typer

    from ascendbench import interrupts

    usage_error = typer.BadParameter.__mro__[1]  # click's UsageError, reached through typer's public classes
    try:
        code = app(args=argv, prog_name=prog_name, standalone_mode=False)
    except usage_error as exc:
        print(f"error: {exc.format_message()}", file=sys.stderr)
        raise SystemExit(2) from None
    except typer.Exit as exc:
        code = exc.exit_code
    except typer.Abort:  # click's form of a KeyboardInterrupt
        raise KeyboardInterrupt from None
    if code == 130 and interrupts.received():  # typer's form of one: Exit(130), nothing printed
        raise KeyboardInterrupt
    return code if isinstance(code, int) else 0


def claims_main(argv, module: str, description: str, default_hardware: str, evaluate, id_width: int,
                extra=()) -> int:
    """The command line of a claims module (`python -m MODULE`): --hardware, --json, plus the typer options
    `extra` (inspect.Parameter objects) whose values are passed to evaluate(hw, **options)."""
    import inspect
    import json
    import sys

    import typer

    from ascendbench.hardware import HardwareError, load_profile

    def command(hardware: str, as_json: bool, **options) -> int:
        try:
            hw = load_profile(hardware)
        except HardwareError as exc:
            print(f"error: {exc}", file=sys.stderr)  # one line, status 2
            raise SystemExit(2) from None
        rows = evaluate(hw, **options)
        if as_json:
            print(json.dumps(rows, indent=2))
        else:
            print_rows(rows, id_width)
        return 0

    keyword = inspect.Parameter.KEYWORD_ONLY
    command.__signature__ = inspect.Signature([
        inspect.Parameter("hardware", keyword, annotation=str, default=typer.Option(
            default_hardware, "--hardware", help="a shipped profile (ascendbench hardware list) or a .toml file")),
        inspect.Parameter("as_json", keyword, annotation=bool, default=typer.Option(
            False, "--json", help="print the rows as JSON")),
        *extra])
    command.__annotations__ = {}  # typer reads the types from the signature
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, help=description)
    app.command()(command)
    return run_app(app, argv, f"python -m {module}")
