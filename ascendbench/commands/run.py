"""`ascendbench run`: the group. Its `run <kernel>` commands, one per registry kernel, are made by the one command
builder (commands/generic.py, registry_app) from the kernel's parameter model and its RunCommand."""

from __future__ import annotations

import typer

app = typer.Typer(help="Run a kernel on real data through the simulated NPU and verify it.", no_args_is_help=True)
