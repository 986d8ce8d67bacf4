"""The papers' measurable claims and their evaluation with the simulator (paper figures live only here).

Run `python -m ascendbench.reference.scan_claims` or `python -m ascendbench.reference.hgemm_claims` for a
table of paper vs simulated values. The simulator and the kernels never import this package.
"""
