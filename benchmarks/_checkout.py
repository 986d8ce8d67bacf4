"""Make a benchmark script import the ascendbench package of the checkout it lives in.

`python benchmarks/x.py` puts benchmarks/ first on sys.path, so `import ascendbench` would otherwise find an
installed copy (e.g. another worktree's editable install) and measure, or for calibrate.py write, that one.
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
