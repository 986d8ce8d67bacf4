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
