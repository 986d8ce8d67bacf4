"""A database password given on the command line is written nowhere and printed nowhere (issue 26 item 3):
not in result documents (their command and storage fields), reports, error lines, resume hints, usage errors,
study attributes, nor any other file a tune writes. Each test searches everything the command printed and
every file under its folder for the password.

Without a server: a PostgreSQL URL to a closed port (every form of giving it), and a whole tune whose URL is
served by a journal (what is written and printed is all the tool's). With the server of .ci/run
(ASCENDBENCH_TEST_PG_URL; skipped without it unless ASCENDBENCH_REQUIRE_PG=1): a real tune with two workers.
"""

import json
import os
import secrets
import socket
import subprocess
import sys
from pathlib import Path

import optuna
import pytest

from ascendbench import interrupts
from ascendbench.cli import main
from ascendbench.tuning import session
from ascendbench.tuning import study as study_module

PASSWORD = "Hunter2-S3cret"


def _closed_port() -> int:
    with socket.socket() as s:  # a port the system just handed out and nobody listens on
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _leaks(folder: Path, *texts: str) -> list[str]:
    """Where the password appears: in one of `texts` (by index) or in a file under `folder` (by path)."""
    found = [f"output {i}" for i, text in enumerate(texts) if PASSWORD in text]
    found += [str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file() and PASSWORD.encode() in p.read_bytes()]
    return found


@pytest.fixture
def ascendbench_main(monkeypatch, capsys):
    """run(args, cwd): the console entry point in this process, as `ascendbench ARGS` (sys.argv and all);
    returns (exit status, stdout, stderr). The storage's retry waits are skipped."""
    monkeypatch.setattr(interrupts, "install", lambda: None)  # no process-wide signal handlers in pytest
    monkeypatch.setattr(study_module.time, "sleep", lambda seconds: None)

    def run(args: list[str], cwd: Path) -> tuple[int, str, str]:
        monkeypatch.chdir(cwd)
        monkeypatch.setattr(sys, "argv", ["ascendbench", *args])
        with pytest.raises(SystemExit) as stop:
            main()
        out = capsys.readouterr()
        return stop.value.code, out.out, out.err

    return run


@pytest.mark.parametrize("form", ["separate", "equals"])
def test_an_unreachable_database_is_named_without_its_password(tmp_path, ascendbench_main, form):
    port = _closed_port()
    url = f"postgresql://tuner:{PASSWORD}@127.0.0.1:{port}/studies"
    storage = ["--storage", url] if form == "separate" else [f"--storage={url}"]
    (tmp_path / "out").mkdir()
    code, out, err = ascendbench_main(["tune", "sort", "--n", "1000", "--trials", "2", *storage, "--out",
                                       "out/r.json"], tmp_path)
    assert code == 2 and out == "" and len(err.splitlines()) == 1, err
    assert err.startswith(f"error: --storage: cannot open postgresql://tuner:***@127.0.0.1:{port}/studies: ") or \
        err.startswith(f"error: --storage: no database driver for postgresql://tuner:***@127.0.0.1:{port}/studies ")
    assert _leaks(tmp_path, out, err) == [] and list((tmp_path / "out").iterdir()) == []


@pytest.mark.parametrize("args, start", [
    (["tune", "sort", "--n", "1000", "URL"], "error: Got unexpected extra argument"),
    (["tune", "sort", "--n", "1000", "--jobs", "URL"], "error: --jobs: expected a non-negative integer"),
    (["tune", "sort", "--n", "URL"], "error: --n: "),
])
def test_a_usage_error_quoting_the_url_masks_its_password(tmp_path, ascendbench_main, args, start):
    url = f"postgresql://tuner:{PASSWORD}@127.0.0.1:{_closed_port()}/studies"
    code, out, err = ascendbench_main([url if a == "URL" else a for a in args], tmp_path)
    assert code == 2 and err.startswith(start) and "postgresql://tuner:***@127.0.0.1:" in err, err
    assert _leaks(tmp_path, out, err) == [] and list(tmp_path.iterdir()) == []


def test_a_whole_tune_on_a_password_url_writes_and_prints_no_password(tmp_path, ascendbench_main, monkeypatch):
    url = f"postgresql://tuner:{PASSWORD}@db.example:5432/studies"
    real_open = session.open_storage  # the storage is opened by tuning/session.py
    journal = tmp_path / "served.journal"  # the database's stand-in: what reaches it is the tool's doing
    monkeypatch.setattr(session, "open_storage", lambda storage: real_open(str(journal) if storage == url
                                                                                else storage))
    (tmp_path / "out").mkdir()
    code, out, err = ascendbench_main(["tune", "sort", "--n", "1000", "--trials", "3", "--storage", url,
                                       "--out", "out/r.json"], tmp_path)
    assert code == 0, err
    doc = json.loads((tmp_path / "out" / "r.json").read_text())
    masked = "postgresql://tuner:***@db.example:5432/studies"
    assert doc["storage"] == masked and doc["command"][-3:] == [masked, "--out", "out/r.json"]
    assert f"studies in {masked}" in out
    code, out2, err2 = ascendbench_main(["tune", "sort", "--n", "1000", "--trials", "4", f"--storage={url}",
                                         "--json", "--no-save"], tmp_path)
    assert code == 0 and json.loads(out2)["command"][-3] == f"--storage={masked}", err2
    code, shown, err3 = ascendbench_main(["results", "show", "out/r.json"], tmp_path)
    assert code == 0 and masked in shown
    assert journal.is_file() and _leaks(tmp_path, out, err, out2, err2, shown, err3) == []
    code, _, err4 = ascendbench_main(["tune", "plot", "out/r.json"], tmp_path)  # the result cannot reopen it
    assert code == 2 and err4 == ("error: --storage: the result names a database whose password is not stored; "
                                  "give --storage URL\n")


URL = os.environ.get("ASCENDBENCH_TEST_PG_URL")
if not URL and os.environ.get("ASCENDBENCH_REQUIRE_PG") == "1":
    raise RuntimeError("ASCENDBENCH_REQUIRE_PG=1 but ASCENDBENCH_TEST_PG_URL is not set")


def _with_password(url: str) -> tuple[str, str]:
    """`url` with a password (PASSWORD added after the user when it has none: .ci/run's server trusts local
    connections and ignores it), and that password."""
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    if parsed.password:
        return url, parsed.password
    head, rest = url.split("://", 1)
    user, host = rest.split("@", 1) if "@" in rest else ("postgres", rest)
    return f"{head}://{user}:{PASSWORD}@{host}", PASSWORD


@pytest.mark.skipif(not URL, reason="ASCENDBENCH_TEST_PG_URL is not set (`.ci/run` starts a server and sets it)")
def test_a_postgresql_tune_with_two_workers_writes_and_prints_no_password(tmp_path):
    url, password = _with_password(URL)
    name = f"secrets-{secrets.token_hex(4)}"
    (tmp_path / "out").mkdir()
    proc = subprocess.run([sys.executable, "-m", "ascendbench.cli", "tune", "hgemm", "--m", "256", "--n", "256",
                           "--k", "256", "--trials", "6", "--no-exhaustive", "--jobs", "2", "--study-name", name, f"--storage={url}", "--out", "out/r.json"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((tmp_path / "out" / "r.json").read_text())
    assert "***" in doc["storage"] and doc["problems"][0]["trials"]["evaluated"] >= 6
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert [p.name for p in files if password.encode() in p.read_bytes()] == []
    assert password not in proc.stdout + proc.stderr
    storage = optuna.storages.get_storage(url)
    study_id = storage.get_study_id_from_name(f"{name}/256x256x256")
    trials = storage.get_all_trials(study_id)
    stored = json.dumps([storage.get_study_user_attrs(study_id), storage.get_study_system_attrs(study_id),
                         [[t.user_attrs, t.system_attrs] for t in trials]], default=str)
    assert password not in stored and len(trials) >= 6
