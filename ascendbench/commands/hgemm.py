"""`ascendbench hgemm select`: the HGEMM paper's self-adaptive tiling selector (§4.2.3), step by step."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from ascendbench.commands.common import (
    HardwareOption,
    JsonOption,
    choice_option,
    count_option,
    dump_json,
    fail,
    out_console,
    whole_keys,
)
from ascendbench.hardware import HardwareError, load_profile
from ascendbench.kernels.hgemm import MAX_DIM, GemmShape, HgemmParams, tile_misfit
from ascendbench.kernels.hgemm_tiling import FALLBACK, NoTileFits, select_tiling

app = typer.Typer(help="HGEMM kernels of the HGEMM paper: tiling selection.", no_args_is_help=True)

DEFAULT_HGEMM_HARDWARE = "atlas-300t-a2"


@app.command("select")
def select(
    m: Annotated[int, count_option("--m", help="Rows of A and C (M), 1 to 2**40.")],
    n: Annotated[int, count_option("--n", help="Columns of B and C (N), 1 to 2**40.")],
    k: Annotated[int, count_option("--k", help="Columns of A, rows of B (K, the reduction), 1 to 2**40.")],
    batch: Annotated[int, count_option("--batch", help="GEMMs of this size in the batch, 1 to 2**40.")] = 1,
    hardware: HardwareOption = DEFAULT_HGEMM_HARDWARE,
    selector: Annotated[str, choice_option("--selector", choices=("paper", "learned"), help="paper (§4.2.3) or "
                                           "learned (a tile ranking learned from solved shapes by "
                                           "benchmarks/learn_selector.py).")] = "paper",
    json_out: JsonOption = False,
) -> None:
    """Choose M0 x N0 x K0 with the HGEMM paper's selector (§4.2.3); the threshold is the chip's ai_cores.

    Prints every candidate tried, K0 of Table 2 larger first and M0 x N0 of Table 1 smaller first, with
    aicore_num = ceil(M/M0)·ceil(N/N0)·batch and acc_loop = ceil(K/K0), then the tiling chosen. A tile that
    does not fit the profile's buffers (as run hgemm checks them) is passed over. With --selector learned:
    the learned model's prediction for the shape and the tile it trusts, step by step.
    """
    for name, value in (("m", m), ("n", n), ("k", k), ("batch", batch)):
        if value > MAX_DIM:  # the same bound as run hgemm (values below 1 get the selector's own message)
            fail(f"--{name}: must be from 1 to 2**40, got {value}")
    try:
        profile = load_profile(hardware)
    except HardwareError as exc:
        fail(str(exc))
    shape, params = GemmShape(m, n, k, batch), HgemmParams()  # run hgemm's defaults: the paper's kernel

    def misfit(m0: int, n0: int, k0: int) -> str | None:
        return tile_misfit(m0, n0, k0, shape, params, profile)

    try:
        decision = select_tiling(m, n, k, batch=batch, threshold=profile.ai_cores, fits=misfit)
    except NoTileFits as exc:
        fail(f"--hardware: {str(exc).removeprefix('fits: ')}; give run hgemm --m0, --n0 and --k0 that fit")
    except ValueError as exc:
        name, _, rest = str(exc).partition(": ")
        if name == "threshold":
            fail(f"--hardware: ai_cores of {profile.name} {rest}")
        fail(f"--{name}: {rest}")
    if selector == "learned":  # the paper's tile is its fallback
        paper = (decision.m0, decision.n0, decision.k0)
        _select_learned(m, n, k, batch, profile.name, json_out, misfit, paper)
        return
    if json_out:
        doc = {"hardware": profile.name, **decision.to_dict()}
        out_console.file.write(dump_json(doc) + "\n")
        return
    table = Table(title=f"M x N x K = {m} x {n} x {k}, batch {batch}, threshold {decision.threshold} "
                        f"(ai_cores of {profile.name})", title_justify="left")
    table.add_column("K0", justify="right")
    table.add_column("index_mn", justify="right")
    table.add_column("M0xN0", justify="right")
    table.add_column("aicore_num", justify="right")
    table.add_column("acc_loop", justify="right")
    table.add_column("verdict")
    for step in decision.trace:
        dash = "-"
        if step.index_mn is None:
            verdict, style = f"skipped: K0 {step.k0} is not below 2K = {2 * k}", "dim"
        elif step.accepted:
            verdict, style = (f"accepted: {step.aicore_num} blocks, fewer than the {decision.threshold} AI cores",
                              "bold green")
        elif step.aicore_num < decision.threshold:
            verdict, style = f"does not fit: {step.misfit}", "yellow"
        else:
            verdict, style = (f"rejected: {step.aicore_num} blocks, not fewer than the {decision.threshold} AI "
                              "cores", None)
        table.add_row(str(step.k0), dash if step.index_mn is None else str(step.index_mn),
                      dash if step.m0 is None else f"{step.m0}x{step.n0}",
                      dash if step.aicore_num is None else str(step.aicore_num),
                      dash if step.acc_loop is None else str(step.acc_loop), verdict, style=style)
    out_console.print(whole_keys(table, "K0", "M0xN0"))
    out_console.print(_SELECTOR_RULE.format(threshold=decision.threshold), style="dim", highlight=False)
    out_console.print(f"M0xN0xK0 = {decision.tile}, aicore_num {decision.aicore_num}, acc_loop "
                      f"{decision.acc_loop} (source: {decision.source})", highlight=False)
    if decision.source == "fallback" and decision.fallback_misfit is None:
        out_console.print("no K0 of Table 2 admits a tiling under the threshold that fits: the paper's "
                          "256x128x128 (§4.2.3)", highlight=False)
    elif decision.source == "fallback":
        fallback = "x".join(map(str, FALLBACK))
        out_console.print(f"no K0 of Table 2 admits a tiling under the threshold that fits, and the paper's "
                          f"fallback {fallback} does not fit ({decision.fallback_misfit}): the fitting "
                          "candidate with the fewest aicore_num", highlight=False)


# the verdicts' rule in words, under the trace (kernels/hgemm_tiling.select_tiling)
_SELECTOR_RULE = ("the paper's self-adaptive tiling selector (HGEMM §4.2.3) takes the first tile whose "
                  "aicore_num, the blocks the tiling launches (one per AI core), is below the threshold, the chip's "
                  "{threshold} AI cores; it tries only the K0 of Table 2 below 2K")


def _select_learned(m: int, n: int, k: int, batch: int, hardware: str, json_out: bool, misfit,
                    paper: tuple[int, int, int]) -> None:
    from ascendbench.tuning.selector import SelectorError, load_selector

    try:
        learned = load_selector(hardware)
    except SelectorError as exc:
        fail(f"--selector: {exc}")
    tile, trace, source = learned.select(m, n, k, paper)
    if why := misfit(*tile):  # a profile of that name with other buffers: the selector was not learned on it
        fail(f"--selector: the learned selector's tile {tile[0]}x{tile[1]}x{tile[2]} does not fit this profile's "
             f"buffers ({why}); use --selector paper")
    if batch != 1:
        trace.append(f"batch {batch}: the selector was learned on single GEMMs; each of the batch uses the tile")
    held_out = learned.trained_on.get("held_out") or {}
    if json_out:
        out_console.file.write(dump_json({"hardware": hardware, "selector": "learned", "tile": list(tile),
                                          "source": source, "trace": trace,
                                          "trained_on": learned.trained_on}) + "\n")
        return
    out_console.print(f"M x N x K = {m} x {n} x {k}, batch {batch}: learned selector of {hardware} "
                      f"(trained on {learned.trained_on.get('shapes', '?')} solved shapes)", highlight=False)
    for line in trace:
        out_console.print(f"  {line}", highlight=False)
    out_console.print(f"M0xN0xK0 = {tile[0]}x{tile[1]}x{tile[2]} (source: {source})", highlight=False)
    for name, what in (("random", "random"), ("llm", "LLM-layer")):
        if held := held_out.get(name):
            out_console.print(f"on {held['shapes']} held-out {what} shapes: {held['geomean_speedup_over_paper']:.3f}x "
                              f"over the paper's selector (geometric mean; worst {held['worst']['speedup']:.3f}x)",
                              highlight=False)
