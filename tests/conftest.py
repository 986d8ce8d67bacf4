"""Every test sees the same terminal width, whatever terminal pytest runs in (or none): 132 columns, the width the
tool uses when its output is not a terminal (commands/common.py). Rich reads COLUMNS when its consoles are made,
which is after this file runs; subprocesses inherit it. Tests of other widths set their own."""

import os

os.environ["COLUMNS"] = "132"
