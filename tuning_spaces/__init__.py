"""The search spaces of `ascendbench tune` as data: one TOML file per kernel (see README.md here).

A package only so that the files ship in the wheel and are read with importlib.resources; no code lives here.
"""
