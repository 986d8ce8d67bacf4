"""`ascendbench kernels`: the registry, one row per kernel (what `run`, `tune` and `ascendbench.run` take)."""

from __future__ import annotations

from rich.table import Table

from ascendbench.commands.common import JsonOption, dump_json, out_console, whole_keys


def kernels(json_out: JsonOption = False) -> None:
    """List every kernel of the registry: its family, variants (or algorithms), tuned parameters and source."""
    from ascendbench.kernels.registry import REGISTRY, choices

    rows = []
    for spec in REGISTRY.values():
        rows.append({
            "name": spec.name, "family": spec.family, "title": spec.title, "source": spec.source,
            "run": f"ascendbench run {spec.command or spec.name}",
            "variants": [str(v) for v in choices(spec.name, "variant") or choices(spec.name, "algorithm")],
            "tuned": list(spec.tuned()), "parameters": list(spec.Params.model_fields),
        })
    if json_out:
        out_console.file.write(dump_json(rows) + "\n")
        return
    t = Table(title="kernels: `ascendbench run <name>` (or as `run` says), `ascendbench tune <name>` where "
                    "parameters are tuned, ascendbench.run(name, ...)", title_justify="left")
    t.add_column("name")
    t.add_column("run")
    t.add_column("what")
    t.add_column("variants / algorithms")
    t.add_column("tuned")
    for r in rows:
        t.add_row(r["name"], r["run"].removeprefix("ascendbench "), f"{r['title']} [dim]({r['source']})[/]",
                  ", ".join(r["variants"]) or "-", ", ".join(r["tuned"]) or "-")
    out_console.print(whole_keys(t, "name"))
