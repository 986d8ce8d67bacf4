"""The papers' measurable claims and their evaluation with the simulator (paper figures live only here).

Run `python -m ascendbench.reference.scan_claims` or `python -m ascendbench.reference.hgemm_claims` for a
table of paper vs simulated values. The simulator and the kernels never import this package.
"""


def print_rows(rows: list[dict], id_width: int = 5) -> None:
    """One line per claim: ID, kind, verdict, paper value, simulated value, tolerance, statement."""
    for r in rows:
        paper = f"{r['paper']:.4g}" if isinstance(r["paper"], float) else str(r["paper"])
        sim = f"{r['simulated']:.4g}" if isinstance(r["simulated"], float) else str(r["simulated"])
        print(f"{r['id']:{id_width}s} {r['kind']:11s} {'holds' if r['holds'] else 'MISS ':5s}  paper {paper:>14s}  "
              f"simulated {sim:>16s}  ({r['tolerance']})  {r['claim']}")


def claims_main(argv, description: str, default_hardware: str, evaluate, id_width: int, extra=None) -> int:
    """The command line of a claims module: --hardware, --json, plus `extra(parser)` options whose parsed
    values (other than those two) are passed to evaluate(hw, **options)."""
    import argparse
    import json

    from ascendbench.hardware import load_profile

    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--hardware", default=default_hardware)
    ap.add_argument("--json", action="store_true")
    if extra is not None:
        extra(ap)
    options = vars(ap.parse_args(argv))
    hardware, as_json = options.pop("hardware"), options.pop("json")
    rows = evaluate(load_profile(hardware), **options)
    if as_json:
        print(json.dumps(rows, indent=2))
    else:
        print_rows(rows, id_width)
    return 0
