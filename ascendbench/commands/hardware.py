"""`ascendbench hardware list|show`: the hardware profiles the simulator can use."""

from __future__ import annotations

import re
from typing import Annotated

import typer
from rich.table import Table

from ascendbench.commands.common import (
    JsonOption, complete_from, dump_json, fail, format_bytes, out_console, whole_keys,
)
from ascendbench.hardware import HardwareError, list_profiles, load_profile

# the kind of a source ("estimate, checked 1-5 us: ..."), also behind an inherited prefix
_SOURCE_KIND = re.compile(r"(?:inherited from [\w.-]+: )?(calibrated|derived|estimate)\b")

app = typer.Typer(help="Hardware profiles of the simulated chips (constants with their sources).", no_args_is_help=True)


@app.command("list")
def list_(json_out: JsonOption = False) -> None:
    """List the shipped hardware profiles."""
    profiles = [load_profile(name) for name in list_profiles()]
    if json_out:
        out_console.file.write(dump_json([{"name": p.name, "description": p.description} for p in profiles]) + "\n")
        return
    table = Table(title="hardware profiles")
    table.add_column("name")
    table.add_column("AI cores", justify="right")
    table.add_column("clock", justify="right")
    table.add_column("HBM", justify="right")
    table.add_column("L2", justify="right")
    table.add_column("description")
    for p in profiles:
        table.add_row(p.name, str(p.ai_cores), f"{p.clock_mhz:.0f} MHz", f"{p.hbm_bandwidth_gbps:.0f} GB/s",
                      _l2_text(p), p.description)
    out_console.print(whole_keys(table, "name"))


def _l2_text(p) -> str:
    """The L2 the cache holds and, where it differs, the size the platform file reports to tiling code."""
    cache = format_bytes(p.l2_cache_bytes)
    return cache if p.l2_bytes == p.l2_cache_bytes else f"{cache} (reports {format_bytes(p.l2_bytes)})"


@app.command("show")
def show(
    name: Annotated[str, typer.Argument(help="Profile name or path of a .toml file.",
                                        autocompletion=complete_from(list_profiles))],
    json_out: JsonOption = False,
) -> None:
    """Show every constant of a profile with its source."""
    try:
        profile = load_profile(name)
    except HardwareError as exc:
        fail(str(exc).replace("--hardware: ", "NAME: "))
    if json_out:
        out_console.file.write(dump_json(profile.to_dict()) + "\n")
        return
    table = Table(title=f"{profile.name}: {profile.description}", title_justify="left")
    table.add_column("constant")
    table.add_column("value", justify="right")
    table.add_column("source")
    for key, value in profile.constants().items():
        source = profile.sources.get(key, "")
        kind = _SOURCE_KIND.match(source)
        style = {"calibrated": "yellow", "derived": "cyan", "estimate": "dim"}.get(kind[1]) if kind else None
        table.add_row(key, f"{value:g}" if isinstance(value, float) else str(value), source, style=style)
    out_console.print(whole_keys(table, "constant"))
    out_console.print(f"derived: fp16 cube peak {profile.cube_fp16_peak_tflops:.1f} TFLOPS, achievable HBM "
                      f"{profile.hbm_bandwidth_gbps * profile.hbm_efficiency:.0f} GB/s")
