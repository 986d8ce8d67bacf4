import os

import pytest
from typer.testing import CliRunner

from ascendbench.cli import app


@pytest.fixture
def cli():
    """invoke(args, cwd): run the CLI with typer's CliRunner in folder `cwd`."""
    runner = CliRunner()

    def invoke(args, cwd):
        old = os.getcwd()
        os.chdir(cwd)
        try:
            return runner.invoke(app, args)
        finally:
            os.chdir(old)

    return invoke


@pytest.fixture
def columns(monkeypatch):
    """columns(n): the report console (stdout) is n columns wide for this test, as COLUMNS=n makes it; the
    tests that read a report's layout set it, so that they do not depend on the terminal they run in."""
    from ascendbench.commands import common

    def set_width(n: int) -> None:
        monkeypatch.setattr(common.out_console, "width", n)

    return set_width
