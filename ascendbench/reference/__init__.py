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


def claims_main(argv, description: str, default_hardware: str, evaluate, id_width: int, extra=None) -> int:
    """The command line of a claims module: --hardware, --json, plus `extra(parser)` options whose parsed
    values (other than those two) are passed to evaluate(hw, **options)."""
    import argparse
    import json

    from ascendbench.hardware import HardwareError, load_profile

    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--hardware", default=default_hardware)
    ap.add_argument("--json", action="store_true")
    if extra is not None:
        extra(ap)
    options = vars(ap.parse_args(argv))
    hardware, as_json = options.pop("hardware"), options.pop("json")
    try:
        hw = load_profile(hardware)
    except HardwareError as exc:
        ap.error(str(exc))  # usage and one line, status 2
    rows = evaluate(hw, **options)
    if as_json:
        print(json.dumps(rows, indent=2))
    else:
        print_rows(rows, id_width)
    return 0
