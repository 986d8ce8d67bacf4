"""Four `ascendbench tune` processes started at the same instant share one study through PostgreSQL: none fails
(creating the study and writing its attributes race), every trial of each is kept, none twice.

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


def test_four_processes_started_together_share_one_postgresql_study(tmp_path):
    name = f"ci-{secrets.token_hex(4)}"
    cmd = [sys.executable, "-m", "ascendbench.cli", "tune", "hgemm", "--m", "2048", "--n", "512", "--k", "1024",
           "--trials", "40", "--storage", URL, "--study-name", name, "--json", "--no-save"]
    procs = [subprocess.Popen([*cmd, "--seed", str(seed)], cwd=tmp_path, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for seed in (1, 2, 3, 4)]
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
    assert len(runs) == 4  # every process ran trials
    ran = sorted(d["problems"][0]["trials"]["this_run"] for d in docs)
    assert ran == sorted(len(v) for v in runs.values())  # each process's trials are all in the study
    complete = [t for t in trials if t.state == optuna.trial.TrialState.COMPLETE]
    distinct = {json.dumps(t.user_attrs["config"], sort_keys=True) for t in complete}
    # each stops once the study holds 40 distinct feasible configurations (the others may finish theirs)
    assert 40 <= len(distinct) <= 43
    assert max(d["problems"][0]["trials"]["evaluated"] for d in docs) == len(distinct)
    assert sum(1 for t in trials if t.user_attrs.get("heuristic")) >= 1  # trial 0: the heuristic
