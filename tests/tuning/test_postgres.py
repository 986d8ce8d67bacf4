"""Two `ascendbench tune` processes share one study through PostgreSQL: every trial of both is kept, none twice.

.ci/run starts a PostgreSQL server and exports its URL in ASCENDBENCH_TEST_PG_URL (and ASCENDBENCH_REQUIRE_PG=1,
so that the test cannot skip in CI). Locally the test skips unless the URL is set.
"""

import json
import os
import secrets
import subprocess
import sys

import optuna
import pytest

URL = os.environ.get("ASCENDBENCH_TEST_PG_URL")

if not URL and os.environ.get("ASCENDBENCH_REQUIRE_PG") == "1":
    raise RuntimeError("ASCENDBENCH_REQUIRE_PG=1 but ASCENDBENCH_TEST_PG_URL is not set")

pytestmark = pytest.mark.skipif(not URL, reason="ASCENDBENCH_TEST_PG_URL is not set (a PostgreSQL URL; "
                                                "`.ci/run` starts a server and sets it)")


def test_two_processes_share_one_postgresql_study(tmp_path):
    name = f"ci-{secrets.token_hex(4)}"
    cmd = [sys.executable, "-m", "ascendbench.cli", "tune", "hgemm", "--m", "2048", "--n", "512", "--k", "1024",
           "--trials", "40", "--storage", URL, "--study-name", name, "--json", "--no-save"]
    procs = [subprocess.Popen([*cmd, "--seed", str(seed)], cwd=tmp_path, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for seed in (1, 2)]
    outputs = [p.communicate(timeout=300) for p in procs]
    for p, (_, err) in zip(procs, outputs):
        assert p.returncode == 0, err
    docs = [json.loads(out) for out, _ in outputs]
    assert all("***" not in d["storage"] and d["storage"].startswith("postgresql://") for d in docs)

    study = optuna.load_study(study_name=f"{name}/2048x512x1024", storage=URL)
    trials = study.get_trials()
    numbers = [t.number for t in trials]
    assert sorted(numbers) == list(range(len(trials)))  # none duplicated, none missing
    states = {t.state for t in trials}
    assert states <= {optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED}, states
    runs = {}
    for t in trials:
        runs.setdefault(t.user_attrs["run"], []).append(t.number)
    assert len(runs) == 2  # both processes ran trials
    ran = sorted(d["problems"][0]["trials"]["this_run"] for d in docs)
    assert ran == sorted(len(v) for v in runs.values())  # each process's trials are all in the study
    assert 40 <= len(trials) <= 41  # each stops once the study holds 40 (one may finish its trial in flight)
    assert max(d["problems"][0]["trials"]["finished"] for d in docs) == len(trials)
