"""The scripts outside the CLI (benchmarks/, python -m ascendbench.reference.*) end on Ctrl-C and SIGTERM with
one line and the shell's status, as the CLI does."""

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("script", [[str(ROOT / "benchmarks" / "sensitivity.py"), "--hardware", "ascend-910b4"],
                                    ["-m", "ascendbench.reference.hgemm_claims"]])
@pytest.mark.parametrize(("sig", "code", "line"), [(signal.SIGINT, 130, "interrupted"),
                                                   (signal.SIGTERM, 143, "terminated")])
def test_a_signal_ends_a_script_with_one_line_and_the_shell_status(tmp_path, script, sig, code, line):
    proc = subprocess.Popen([sys.executable, *script], cwd=tmp_path, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    time.sleep(3)  # past the imports, inside the simulations (each script runs for 10 s or more)
    proc.send_signal(sig)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == code and err.strip().splitlines()[-1] == line and "Traceback" not in err


@pytest.mark.parametrize(("args", "message"), [
    (["-m", "ascendbench.reference.scan_claims", "--hardware", "nope"], "--hardware: unknown profile 'nope'"),
    (["-m", "ascendbench.reference.hgemm_claims", "--random", "0"], "Invalid value for '--random': 0 is not a count from 1 to 5000"),
    (["-m", "ascendbench.reference.hgemm_claims", "--random", "-1"], "Invalid value for '--random': -1 is not a count from 1 to 5000"),
])
def test_bad_script_options_are_refused_without_a_traceback(tmp_path, args, message):
    done = subprocess.run([sys.executable, *args], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and message in done.stderr.strip().splitlines()[-1] and "Traceback" not in done.stderr
