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
