"""`ascendbench validate`: every published claim of the two papers, paper value beside the simulated one."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from ascendbench.commands.common import (
    JsonOption,
    NoSaveOption,
    Outputs,
    check_target,
    command_line,
    complete_from,
    count_option,
    default_result_path,
    dump_json,
    fail,
    out_console,
    progress_bar,
)
from ascendbench.commands.markdown import MdOption, Report
from ascendbench.reference import RANDOM_SHAPES
from ascendbench.reference.validation import run_validation


def _fmt(value) -> str:
    from ascendbench.reference import format_value

    return format_value(value)


def _print(result, saved_to: Path | None, md: bool = False) -> None:
    report = Report(md)
    t = Table(title=f"claims of the scan and HGEMM papers: paper vs simulated"
                    f"{' (--quick set)' if result.quick else ''}", title_justify="left")
    for name, justify in (("ID", "left"), ("kind", "left"), ("claim", "left"), ("paper", "right"),
                          ("simulated", "right"), ("ratio", "right"), ("tolerance", "left"), ("verdict", "left")):
        t.add_column(name, justify=justify, overflow="fold")
    for r in result.claims:
        if r.holds:
            verdict = "[green]holds[/]"
        elif r.id in result.summary.failing:
            verdict = "[bold red]MISS[/]"
        else:
            verdict = "[yellow]miss[/]"
        shown = "µs" if r.unit == "us" else r.unit  # the claims' data say "us"; the terminal says µs, as elsewhere
        unit = f" {shown}" if shown and shown != "x" else shown
        paper = _fmt(r.paper) + (unit if isinstance(r.paper, (int, float, list)) else "")
        sim = _fmt(r.simulated) + (unit if isinstance(r.simulated, (int, float, list)) else "")
        t.add_row(r.id, r.kind, r.claim, paper, sim, f"{r.ratio:.2f}" if r.ratio is not None else "", r.tolerance,
                  verdict)
    report.table(t, "ID", stack=True)  # at 80 columns: a block per claim, its statement whole-worded
    for chip, profile in result.hardware.items():
        if profile.get("name", chip) != chip:
            report.note(f"the claims of {escape(chip)} evaluated on {escape(str(profile.get('name')))} (--hardware)")
    s = result.summary
    report.note(f"{s.holds}/{s.rows} rows hold in {result.wall_time_s:.1f} s; misses: "
                f"{escape(', '.join(s.misses)) or 'none'}")
    if s.failing:
        report.note(f"[bold red]failing[/] (exact, calibration and shape claims{', and validation with --strict' if result.strict else ''}): "
                    f"{escape(', '.join(s.failing))}")
    else:
        report.note("[green]passed[/]: every exact, calibration and shape claim holds"
                    + (" (and every validation claim: --strict)" if result.strict else ""))
    if saved_to is not None:
        report.note(f"result written to {escape(str(saved_to))}")


def _claim_ids() -> list[str]:
    """The claim IDs --only takes (for shell completion), in the order of claims.toml."""
    from ascendbench.reference.claims import load_claims

    return list(dict.fromkeys(c.claim for c in load_claims()))


def _claim_chips() -> list[str]:
    """The papers' chips the claims were measured on (claims.toml's `hardware`), in first-use order."""
    from ascendbench.reference.claims import load_claims

    return list(dict.fromkeys(c.hardware for c in load_claims() if c.hardware))


def _complete_hardware(incomplete: str) -> list[str]:
    """Shell completion of --hardware: the papers' chips (`ascend-910b4=`), then after '=' the shipped profiles."""
    from ascendbench.hardware import list_profiles

    chip, sep, profile = incomplete.partition("=")
    if not sep:
        return [f"{c}=" for c in _claim_chips() if c.startswith(chip)]
    return [f"{chip}={p}" for p in list_profiles() if p.startswith(profile)] if chip in _claim_chips() else []


def _profiles(given: list[str]) -> dict:
    """--hardware CHIP=PROFILE values as {chip: HardwareProfile}; a bad one fails (exit 2) naming it."""
    from ascendbench.hardware import HardwareError, load_profile

    chips, profiles = _claim_chips(), {}
    for value in given:
        chip, sep, profile = value.partition("=")
        if not sep or not profile:
            fail(f"--hardware: expected CHIP=PROFILE (the paper's chip, then a shipped profile or a .toml path), "
                 f"e.g. ascend-910b4=my-910b4.toml; got {value!r}")
        if chip not in chips:
            fail(f"--hardware: the claims were measured on {' and '.join(chips)}, not {chip!r}")
        if chip in profiles:
            fail(f"--hardware: {chip} is given twice")
        try:
            profiles[chip] = load_profile(profile)
        except HardwareError as exc:
            fail(str(exc))
    return profiles


def validate(
    only: Annotated[list[str] | None, typer.Option("--only", metavar="<ids>",
                                                   autocompletion=complete_from(_claim_ids, separator=","),
                                                   help="Comma-separated claim IDs, e.g. S-4,G-1 (a claim "
                                                   "ID selects all its rows: G-9a = 'G-9a M=8' and 'G-9a M=512'; "
                                                   "any case; may be repeated).")] = None,
    quick: Annotated[bool, typer.Option("--quick", help="The reduced smoke-test set (exact claims, fitted "
                                        "calibration claims and cheap shape claims of every kernel family).")] = False,
    strict: Annotated[bool, typer.Option("--strict", help="Validation claims outside tolerance fail too.")] = False,
    random_shapes: Annotated[int, count_option("--random", help="Shapes of random-5000 evaluated for G-7 "
                                               "(1 ... 5000).")] = RANDOM_SHAPES,
    hardware: Annotated[list[str] | None, typer.Option(
        "--hardware", metavar="<chip=profile>", autocompletion=_complete_hardware,
        help="Evaluate the claims measured on a paper's chip (ascend-910b4, atlas-300t-a2) with another "
             "profile: a shipped name or a .toml, e.g. one `ascendbench correlate` fitted; may be repeated.")] = None,
    out: Annotated[Path | None, typer.Option("--out", help="Result JSON path (default: "
                                             "results/validate/<all|quick|only>/<time>-<id>.json).")] = None,
    no_save: NoSaveOption = False,
    json_out: JsonOption = False,
    md: MdOption = False,
) -> None:
    """Evaluate the papers' claims with the simulator: one row per claim (paper, simulated, ratio, tolerance,
    verdict); --md prints the table as Markdown. Exit status 0 when every exact, calibration and shape claim
    holds (validation misses are shown and fail only with --strict), 1 otherwise, 2 on bad options."""
    from ascendbench.reference.claims import ClaimError, canonical_ids, select_claims

    wall0 = time.perf_counter()
    if json_out and md:
        fail("--md: cannot be combined with --json; choose one")
    ids = None
    if only is not None:
        ids = [w.strip() for part in only for w in part.split(",") if w.strip()]
        if not ids:
            fail("--only: expected comma-separated claim IDs such as S-4,G-1")
        try:
            ids = list(dict.fromkeys(canonical_ids(ids)))  # "g-9a" and "G-9a" are one ID
        except ClaimError as exc:
            fail(f"--only: {exc}; claim IDs are S-W1, S-1 ... S-18 and G-1 ... G-11, some split into rows (G-9a, G-9a M=8); `ascendbench validate` lists them")
        if quick:
            outside = [w for w in ids if not select_claims([w], quick=True)]
            if outside:
                one = len(outside) == 1
                fail(f"--only: {', '.join(outside)} {'is' if one else 'are'} not in the --quick set; drop --quick "
                     f"to evaluate {'it' if one else 'them'}")
    if not 1 <= random_shapes <= RANDOM_SHAPES:
        fail(f"--random: must be between 1 and {RANDOM_SHAPES}, got {random_shapes}")
    if random_shapes != RANDOM_SHAPES and not any(c.claim == "G-7" for c in select_claims(ids, quick=quick)):
        fail("--random: only G-7 evaluates random-5000 shapes, and this selection has no G-7 row")
    if out is not None and no_save:
        fail("--out: cannot be combined with --no-save")
    check_target(out, "out", ".json", {})
    profiles = _profiles(hardware or [])

    progress, report = progress_bar(json_out)
    with progress:
        result = run_validation(ids, quick=quick, strict=strict, random_shapes=random_shapes,
                                progress=lambda stage, done, total: report(f"claim {stage}", done, total),
                                command=command_line(), hardware=profiles)
    result.wall_time_s = time.perf_counter() - wall0
    doc = result.model_dump(mode="json")
    selection = "quick" if quick else ("only" if ids is not None else "all")
    saved_to = None if no_save else (out or default_result_path("validate", selection))
    if saved_to is not None:
        with Outputs() as outputs:
            outputs.write_json("out", saved_to, doc)
    if json_out:
        out_console.file.write(dump_json(doc) + "\n")
    else:
        _print(result, saved_to, md)
    if not result.passed:
        raise typer.Exit(1)
