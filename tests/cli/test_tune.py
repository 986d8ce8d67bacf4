"""`ascendbench tune` through the CLI: reports, result files, user errors, interrupts and resumption."""

import json
import os
import signal
import subprocess
import sys
import time

import optuna
import pytest

from ascendbench.store.schema import TuningResult

SHAPE = ["--m", "1024", "--n", "256", "--k", "512"]


def test_tune_hgemm_one_shape_report_and_result(tmp_path, cli):
    out = cli(["tune", "hgemm", *SHAPE, "--trials", "12", "--no-exhaustive", "--out", "t.json"], tmp_path)
    assert out.exit_code == 0, out.output
    for text in ("tune hgemm: 1 problem", "1024x256x512", "heuristic", "speed-up", "rank", "result written"):
        assert text in out.output, text
    doc = TuningResult.model_validate_json((tmp_path / "t.json").read_text())
    p = doc.problems[0]
    assert p.trials.evaluated == 12 and p.best is not None and p.heuristic.config["m0"] is not None
    assert p.speedup == pytest.approx(p.heuristic.time_s / p.best.time_s)
    assert doc.storage == "results/tuning/studies.journal" and (tmp_path / doc.storage).is_file()
    assert not doc.interrupted and doc.unit == "TFLOPS"


def test_tune_hgemm_every_core_simulates_every_core_in_a_study_of_its_own(tmp_path, cli):
    from ascendbench.hardware import load_profile
    from ascendbench.kernels.hgemm import GemmShape, HgemmParams, simulate_hgemm

    runs = {}
    for flag in ([], ["--every-core"]):
        out = cli(["tune", "hgemm", *SHAPE, "--trials", "3", "--json", "--no-exhaustive", "--out", "t.json", *flag],
                  tmp_path)
        assert out.exit_code == 0, out.output
        runs[bool(flag)] = json.loads(out.stdout)["problems"][0]
    assert runs[False]["key"] == "1024x256x512" and runs[True]["key"] == "1024x256x512 every-core"
    assert runs[True]["problem"]["every_core"] is True and "every_core" not in runs[False]["problem"]
    assert runs[True]["study_name"] != runs[False]["study_name"]
    heuristic = HgemmParams(**runs[True]["heuristic"]["config"])
    every = simulate_hgemm(GemmShape(1024, 256, 512), heuristic, load_profile("atlas-300t-a2"), every_core=True)[0]
    assert runs[True]["heuristic"]["time_s"] == pytest.approx(every.time_s, rel=1e-12)


def test_tune_hgemm_workload_summary_and_claim_g6(tmp_path, cli):
    out = cli(["tune", "hgemm", "--workload", "fig6", "--trials", "6", "--json", "--no-save",
               "--no-exhaustive"], tmp_path)
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    assert len(doc["problems"]) == 3 and doc["summary"]["problems"] == 3
    # counts are written as integers (JSON 3, not 3.0)
    assert all(type(doc["summary"][name]) is int for name in ("problems", "trials_finished", "trials_evaluated"))
    assert doc["summary"]["trials_evaluated"] == sum(p["trials"]["evaluated"] for p in doc["problems"])
    speedups = [p["speedup"] for p in doc["problems"]]
    assert doc["summary"]["max_speedup"] == max(speedups)
    assert doc["summary"]["fraction_heuristic_within_5pct"] == sum(s <= 1.05 for s in speedups) / 3
    (claim,) = doc["claims"]
    assert claim["id"] == "G-6" and claim["holds"] == all(1 / s >= 0.95 for s in speedups)
    assert not list(tmp_path.glob("results/tuning/hgemm/*.json"))


def test_tune_scan_resumes_with_the_same_command(tmp_path, cli):
    args = ["tune", "scan", "--n", "1e6", "--trials", "5", "--json", "--no-save", "--sampler", "random",
            "--no-exhaustive"]
    first = json.loads(cli(args, tmp_path).stdout)
    args[5] = "9"
    second = json.loads(cli(args, tmp_path).stdout)
    assert first["problems"][0]["trials"]["evaluated"] == 5 and second["problems"][0]["trials"]["evaluated"] == 9
    assert second["unit"] == "GB/s" and second["problems"][0]["heuristic"]["config"]["s"] == 128


def test_exhaustive_flag(tmp_path, cli):
    space = tmp_path / "tiny.toml"
    space.write_text('kernel = "scan"\n[parameters.algorithm]\ntype = "categorical"\nchoices = ["mcscan"]\n'
                     'default = "mcscan"\n[parameters.s]\ntype = "categorical"\nchoices = [64, 128]\ndefault = 128\n'
                     '[parameters.blocks]\ntype = "int"\nlow = 10\nhigh = 20\nstep = 10\ndefault = 20\n'
                     '[parameters.chunk]\ntype = "categorical"\nchoices = ["off"]\ndefault = "off"\n')
    out = cli(["tune", "scan", "--n", "1e6", "--space", str(space), "--trials", "2", "--json", "--no-save"], tmp_path)
    assert out.exit_code == 0, out.output
    ex = json.loads(out.stdout)["problems"][0]["exhaustive"]
    assert ex["points"] == 4 and ex["feasible"] == 4
    out = cli(["tune", "scan", "--n", "1e6", "--space", str(space), "--trials", "2", "--no-exhaustive", "--json",
               "--no-save", "--study-name", "x"], tmp_path)
    assert json.loads(out.stdout)["problems"][0]["exhaustive"] is None


@pytest.mark.parametrize("args, message", [
    (["hgemm", *SHAPE, "--trials", "0"], "--trials: must be at least 1, got 0"),
    (["hgemm", *SHAPE, "--sampler", "annealing"], "--sampler: must be one of tpe, random, gp, grid"),
    (["hgemm", *SHAPE, "--jobs", "0"], "--jobs: must be at least 1"),
    (["hgemm", *SHAPE, "--timeout", "-1"], "--timeout: must be a positive number of seconds"),
    (["hgemm", *SHAPE, "--seed", "-3"], "--seed: expected a non-negative integer"),
    (["hgemm", *SHAPE, "--seed", str(2**32)], "--seed: must be an integer from 0 to 2**32 - 1"),
    (["hgemm", "--m", str(2**41), "--n", "5", "--k", "5"], "--m: must be a positive integer up to 2**40"),
    (["hgemm", *SHAPE, "--batch", str(2**41)], "--batch: must be from 1 to 2**40"),
    (["hgemm", *SHAPE, "--storage", "s.journal", "--out", "s.journal"], "--out: must end in .json"),
    (["hgemm", *SHAPE, "--storage", "same.json", "--out", "same.json"], "is also the --storage journal"),
    (["hgemm", *SHAPE, "--storage", "foo://bar"], "--storage: unknown URL scheme 'foo'"),
    (["hgemm", "--workload", "nope"], "error: --workload: unknown workload 'nope'"),
    (["hgemm", "--m", "10"], "--m: give --m, --n and --k together"),
    (["hgemm", *SHAPE, "--workload", "fig6"], "--workload: give one of"),
    (["hgemm", "--problems", "nope"], "--problems: "),
    (["hgemm", *SHAPE, "--space", "missing.toml"], "--space: missing.toml: no such search space file"),
    (["hgemm", *SHAPE, "--out", "r.txt"], "--out: must end in .json"),
    (["hgemm", *SHAPE, "--out", "r.json", "--no-save"], "--out: cannot be combined with --no-save"),
    (["hgemm", *SHAPE, "--hardware", "tpu"], "tpu"),
    (["hgemm", *SHAPE, "--study-name", " "], "--study-name: must not be empty"),
    (["hgemm", *SHAPE, "--storage", "blocker/s.journal"], "--storage: blocker is not a folder"),
    (["hgemm", *SHAPE, "--storage", "postgresql://u:pw@127.0.0.1:1/db"], "--storage: "),
    (["scan", "--n", "-5"], "--n: "),
    (["scan", "--n", "1e6", "--dtype", "fp64"], "--dtype: must be one of fp16, int8, got 'fp64'"),
    (["scan", "--n", "1e6", "--problems", "sizes"], "--n: give --n or --problems, not both"),
    (["scan", "--space", str(__file__)], "--space: "),
    (["scan", "--problems", ""], "--problems: must name a problem set of "),
    (["scan", "--problems", " "], "got ' '; choose from default, sizes"),
    (["sort", "--problems", ""], "--problems: must name a problem set of "),
])
def test_user_errors_are_one_line_exit_2_and_write_nothing(tmp_path, cli, args, message):
    (tmp_path / "blocker").write_text("")
    out = cli(["tune", *args], tmp_path)
    assert out.exit_code == 2, out.output
    lines = out.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], out.output
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").rglob("*.json"))


@pytest.mark.parametrize("edit, message", [
    (("[parameters.chunk]", "[parameters.chunk_size]"), "parameters.chunk: missing; scan needs"),
    (('choices = ["mcscan", "mcscan-ul1"]', 'choices = ["mcscan", "foo"]'), "parameters.algorithm: 'foo'"),
    (('type = "log-int"\nlow = 16\nhigh = 128', 'type = "categorical"\nchoices = [16, "x", 128]'),
     "parameters.s: 'x' is not a value scan takes"),
    # a huge int range, not bounded by the profile's cores, is fine for sampling but not for a grid
    (('high = 24\nbounded_by = "ai_cores"', "high = 1000000000000"), None),
])
def test_space_values_are_checked_against_the_kernel(tmp_path, cli, edit, message):
    from ascendbench.tuning.space import space_path

    text = space_path("scan").read_text().replace(*edit)
    (tmp_path / "s.toml").write_text(text)
    out = cli(["tune", "scan", "--n", "1e6", "--space", "s.toml", "--trials", "2", "--no-save", "--json"], tmp_path)
    if message is None:
        assert out.exit_code == 0, out.output
        huge = cli(["tune", "scan", "--n", "1e6", "--space", "s.toml", "--exhaustive"], tmp_path)
        assert huge.exit_code == 2 and "--exhaustive: the grid of s.toml has" in huge.output
    else:
        assert out.exit_code == 2 and message in out.output, out.output
        assert not (tmp_path / "results").exists()  # refused before any study was made


def test_hgemm_space_file_for_scan_is_refused(tmp_path, cli):
    from ascendbench.tuning.space import space_path

    out = cli(["tune", "scan", "--n", "1e6", "--space", str(space_path("hgemm"))], tmp_path)
    assert out.exit_code == 2 and "is a space for 'hgemm', not 'scan'" in out.output


def _tune_process(tmp_path, *extra):
    return subprocess.Popen([sys.executable, "-m", "ascendbench.cli", "tune", "hgemm", "--m", "4096", "--n", "4096",
                             "--k", "4096", "--trials", "100000", "--study-name", "long", *extra],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finished(tmp_path):
    journal = tmp_path / "results" / "tuning" / "studies.journal"
    if not journal.exists():
        return 0
    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(journal)))
    try:
        study = optuna.load_study(study_name="long/4096x4096x4096", storage=storage)
    except KeyError:
        return 0
    complete = study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))
    return len({json.dumps(t.user_attrs["config"], sort_keys=True) for t in complete})  # what --trials counts


def _wait_for_trials(tmp_path, count, proc, limit_s=60.0):
    deadline = time.monotonic() + limit_s
    while _finished(tmp_path) < count:
        assert proc.poll() is None and time.monotonic() < deadline, "the tuner did not get going"
        time.sleep(0.2)


@pytest.mark.parametrize(("sig", "code", "line"), [(signal.SIGINT, 130, "interrupted"),
                                                   (signal.SIGTERM, 143, "terminated")])
def test_ctrl_c_writes_the_result_so_far_and_says_how_to_resume(tmp_path, sig, code, line):
    proc = _tune_process(tmp_path, "--out", "r.json")
    _wait_for_trials(tmp_path, 5, proc)
    proc.send_signal(sig)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    assert "resume with: ascendbench tune hgemm" in err and "--study-name long" in err
    assert err.strip().splitlines()[-1] == line and "Traceback" not in err
    doc = TuningResult.model_validate_json((tmp_path / "r.json").read_text())
    kept = _finished(tmp_path)
    assert doc.interrupted and doc.problems[0].trials.evaluated == kept >= 5
    assert doc.problems[0].trials.stopped == "interrupted"
    cost = doc.problems[0].cost  # what the search cost until the interrupt
    assert cost is not None and cost.simulated + cost.replayed >= 5 and cost.model_s > 0
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary or staging file left


def test_sigkill_loses_at_most_the_trial_in_flight_and_the_next_run_resumes(tmp_path):
    proc = _tune_process(tmp_path, "--no-save")
    _wait_for_trials(tmp_path, 5, proc)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    kept = _finished(tmp_path)
    assert kept >= 5
    resumed = subprocess.run([sys.executable, "-m", "ascendbench.cli", "tune", "hgemm", "--m", "4096", "--n", "4096",
                              "--k", "4096", "--trials", str(kept + 3), "--study-name", "long", "--json", "--no-exhaustive",
                              "--no-save"], cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    assert resumed.returncode == 0, resumed.stderr
    trials = json.loads(resumed.stdout)["problems"][0]["trials"]
    assert trials["evaluated"] == kept + 3  # the killed run's finished trials are counted, not redone
    # the trial in flight at the kill never reached the storage: nothing is left running or failed
    assert trials["running"] == 0 and trials["failed"] == 0


def test_tune_batched_scan_evaluates_its_small_space_whole(tmp_path, cli):
    out = cli(["tune", "batched-scan", "--batch", "64", "--length", "1024", "--sampler", "grid", "--trials", "8",
               "--json", "--no-save"], tmp_path)
    assert out.exit_code == 0, out.output
    (p,) = json.loads(out.stdout)["problems"]
    assert p["trials"]["distinct"] == 8 and p["exhaustive"]["points"] == 8 and p["exhaustive"]["regret"] == 0
    assert p["heuristic"]["config"] == {"algorithm": "scanu", "s": 128}
    bad = cli(["tune", "batched-scan", "--batch", "4"], tmp_path)
    assert bad.exit_code == 2 and "--batch: give --batch and --length together" in bad.output


def test_error_messages_are_not_read_as_markup(tmp_path, cli, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a))
    out = cli(["tune", "hgemm", *SHAPE, "--sampler", "gp"], tmp_path)
    assert out.exit_code == 2 and "pip install -e '.[gp]'" in out.output


def test_tune_plot_draws_history_importance_parallel_and_workload(tmp_path, cli):
    out = cli(["tune", "hgemm", "--problems", "fig6", "--trials", "12", "--no-exhaustive", "--out", "r.json"],
              tmp_path)
    assert out.exit_code == 0, out.output
    drawn = cli(["tune", "plot", "r.json", "--out-dir", "figs", "--format", "png", "--format", "svg"], tmp_path)
    assert drawn.exit_code == 0, drawn.output
    names = sorted(p.name for p in (tmp_path / "figs").iterdir())
    for kind in ("history", "importance", "parallel"):
        assert sum(n.endswith(f"-{kind}.png") for n in names) == 3 == sum(n.endswith(f"-{kind}.svg") for n in names)
    assert "workload.png" in names and "workload.svg" in names
    assert not [n for n in names if "-seeds." in n]  # one seed: no figure of seeds
    assert (tmp_path / "figs" / "workload.svg").read_text().lstrip().startswith("<?xml")
    assert not [n for n in names if n.startswith(".")]  # no staging file left
    png = (tmp_path / "figs" / "workload.png").read_bytes()
    assert round(int.from_bytes(png[png.index(b"pHYs") + 4:][:4], "big") * 0.0254) == 150  # the default dpi
    bad = cli(["tune", "plot", "r.json", "--format", "gif"], tmp_path)
    assert bad.exit_code == 2 and "--format: must be one of png, svg, pdf" in bad.output
    bad = cli(["tune", "plot", "r.json", "--dpi", "1000", "--out-dir", "figs2"], tmp_path)
    assert bad.exit_code == 2 and "--dpi: must be between 50 and 600 dots per inch, got 1000" in bad.output
    assert not (tmp_path / "figs2").exists()
    missing = cli(["tune", "plot", "nope.json"], tmp_path)
    assert missing.exit_code == 2 and "cannot read 'nope.json'" in missing.output


def test_several_seeds_report_their_spread(tmp_path, cli):
    out = cli(["tune", "hgemm", *SHAPE, "--trials", "10", "--seeds", "3", "--seed", "5", "--exhaustive", "--json",
               "--no-save"], tmp_path)
    assert out.exit_code == 0, out.output
    (p,) = json.loads(out.stdout)["problems"]
    runs = p["seeds"]["runs"]
    assert [r["seed"] for r in runs] == [5, 6, 7]
    assert len({r["study_name"] for r in runs}) == 3 and all(r["study_name"].endswith(f"/seed-{r['seed']}")
                                                           for r in runs)
    assert p["best"]["time_s"] == min(r["best_time_s"] for r in runs)
    speedups = sorted(r["speedup"] for r in runs)
    assert p["seeds"]["spread"]["speedup"] == {"min": speedups[0], "median": speedups[1], "max": speedups[2]}
    assert all(r["evaluated"] == 10 and r["regret"] >= 0 for r in runs)
    text = cli(["tune", "hgemm", *SHAPE, "--trials", "10", "--seeds", "3", "--seed", "5", "--no-save"], tmp_path)
    assert "spread over seeds for 1024x256x512: 3 seeds" in text.output
    bad = cli(["tune", "hgemm", *SHAPE, "--seeds", "0"], tmp_path)
    assert bad.exit_code == 2 and "--seeds: must be from 1 to 100, got 0" in bad.output


def test_tune_plot_draws_each_seeds_best_so_far(tmp_path, cli):
    out = cli(["tune", "hgemm", *SHAPE, "--trials", "6", "--seeds", "2", "--no-exhaustive", "--out", "r.json"],
              tmp_path)
    assert out.exit_code == 0, out.output
    drawn = cli(["tune", "plot", "r.json", "--out-dir", "figs", "--format", "png"], tmp_path)
    assert drawn.exit_code == 0, drawn.output
    assert (tmp_path / "figs" / "1024x256x512-seeds.png").read_bytes().startswith(b"\x89PNG")
    assert "wrote figs/1024x256x512-seeds.png" in drawn.output


def test_tune_plot_refuses_a_missing_journal_and_leaves_nothing(tmp_path, cli):
    out = cli(["tune", "hgemm", *SHAPE, "--trials", "3", "--no-exhaustive", "--out", "r.json"], tmp_path)
    assert out.exit_code == 0, out.output
    bad = cli(["tune", "plot", "r.json", "--storage", "nothere.journal", "--out-dir", "p0"], tmp_path)
    assert bad.exit_code == 2 and "--storage: no journal file 'nothere.journal'" in bad.output
    assert not (tmp_path / "nothere.journal").exists() and not (tmp_path / "p0").exists()


def test_a_search_ended_by_timeout_says_so(tmp_path, cli):
    out = cli(["tune", "hgemm", "--m", "2048", "--n", "2048", "--k", "2048", "--trials", "100000", "--timeout", "0.5",
               "--no-exhaustive", "--no-save"], tmp_path)
    assert out.exit_code == 0, out.output
    assert "of 100000 configurations: stopped by --timeout" in " ".join(out.stdout.split())
    # with --seeds, each seed's search that ended short says so (the table shows the fastest seed only)
    out = cli(["tune", "hgemm", *SHAPE, "--trials", "100000", "--timeout", "0.3", "--seeds", "2", "--no-exhaustive",
               "--no-save", "--study-name", "s"], tmp_path)
    text = " ".join(out.stdout.split())
    assert "1024x256x512 seed 0: " in text and "1024x256x512 seed 1: " in text
    assert text.count("of 100000 configurations: stopped by --timeout") == 2
    # worker processes say why they stopped
    out = cli(["tune", "hgemm", *SHAPE, "--trials", "100000", "--timeout", "1", "--jobs", "2", "--no-exhaustive",
               "--no-save", "--json", "--study-name", "j"], tmp_path)
    assert json.loads(out.stdout)["problems"][0]["trials"]["stopped"] == "timeout"


def test_a_search_that_saw_the_whole_grid_says_how_much_of_it_fits(tmp_path, cli):
    space = tmp_path / "tiny.toml"
    space.write_text('kernel = "scan"\n[parameters.algorithm]\ntype = "categorical"\nchoices = ["mcscan"]\n'
                     'default = "mcscan"\n[parameters.s]\ntype = "categorical"\nchoices = [64, 128]\ndefault = 128\n'
                     '[parameters.blocks]\ntype = "int"\nlow = 10\nhigh = 20\nstep = 10\ndefault = 20\n'
                     '[parameters.chunk]\ntype = "categorical"\nchoices = ["off"]\ndefault = "off"\n')
    out = cli(["tune", "scan", "--n", "1e6", "--space", str(space), "--trials", "50", "--no-save"], tmp_path)
    assert out.exit_code == 0, out.output
    assert "4 of 50 configurations: every point of the grid has been seen (4 points, 0 of them do not fit)" in (
        " ".join(out.stdout.split()))


def test_a_storage_failure_during_tuning_is_one_line_and_keeps_the_trials(tmp_path, cli, monkeypatch):
    from ascendbench.tuning import session  # where the command's search runs

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(session, "tune_problem", full)
    out = cli(["tune", "hgemm", *SHAPE, "--trials", "5", "--no-exhaustive"], tmp_path)
    assert out.exit_code == 1 and "Traceback" not in out.output
    line = " ".join(out.output.split())
    assert line.startswith("tune: the storage or a result file failed: [Errno 28] No space left on device; the "
                           "finished trials are kept in results/tuning/studies.journal; resume with:")
    assert not list(tmp_path.glob("results/tuning/hgemm/*.json"))


JOURNAL = "results/tuning/studies.journal"


def _evaluated(out):
    return json.loads(out.stdout)["problems"][0]["trials"]["evaluated"]


def test_a_journal_whose_last_record_is_torn_is_mended_with_a_note_and_tuning_goes_on(tmp_path, cli):
    # as a full disk or a kill in the middle of an append left it in earlier versions: the next append was
    # glued onto the partial line, and every later run failed (JSONDecodeError, "Should not reach.")
    out = cli(["tune", "hgemm", *SHAPE, "--trials", "3", "--no-exhaustive", "--no-save", "--json"], tmp_path)
    assert out.exit_code == 0, out.output
    journal = tmp_path / JOURNAL
    data = journal.read_bytes()
    last = data.rindex(b"\n", 0, len(data) - 1) + 1
    journal.write_bytes(data[:last + (len(data) - last) // 2])
    out = cli(["tune", "hgemm", *SHAPE, "--trials", "5", "--no-exhaustive", "--no-save", "--json"], tmp_path)
    assert out.exit_code == 0, out.output
    aside = [p.name for p in journal.parent.glob("studies.journal.torn-*")]
    assert len(aside) == 1
    notes = [line for line in out.stderr.splitlines() if line.startswith("note:")]
    assert notes == [f"note: the last record of the journal {JOURNAL} was cut short (a full disk, or a write killed "
                     f"part way): its {(len(data) - last) // 2} bytes are set aside in results/tuning/{aside[0]}; every "
                     "whole record is kept"]
    assert _evaluated(out) == 5
    assert all(json.loads(line) for line in journal.read_bytes().splitlines())


def test_a_write_that_fills_the_file_size_limit_leaves_the_journal_whole_and_the_resume_command_works(tmp_path, cli):
    import resource
    import shlex

    out = cli(["tune", "hgemm", *SHAPE, "--trials", "3", "--no-exhaustive", "--no-save"], tmp_path)
    assert out.exit_code == 0, out.output
    journal = tmp_path / JOURNAL
    limit = journal.stat().st_size + 4000  # room for a few trials: then a write stops part way (EFBIG)

    def small_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails instead of killing the process

    full = subprocess.run([sys.executable, "-m", "ascendbench.cli", "tune", "hgemm", *SHAPE, "--trials", "40",
                           "--no-exhaustive", "--no-save"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300, preexec_fn=small_files, check=False)
    assert full.returncode == 1, full.stderr
    assert "[Errno 27] File too large" in full.stderr and "Traceback" not in full.stderr
    assert journal.read_bytes().endswith(b"\n") and journal.stat().st_size <= limit  # the partial write taken back
    assert all(json.loads(line) for line in journal.read_bytes().splitlines())
    command = shlex.split(full.stderr.split("resume with: ", 1)[1].splitlines()[0])
    assert command[:2] == ["ascendbench", "tune"]
    resumed = cli([*command[1:], "--json"], tmp_path)
    assert resumed.exit_code == 0, resumed.output
    assert _evaluated(resumed) == 40 and "note:" not in resumed.stderr


def test_a_lock_left_by_a_killed_tuner_is_broken_at_once(tmp_path, cli, monkeypatch):
    from ascendbench.tuning import study as study_module

    monkeypatch.setattr(study_module, "LOCK_GRACE_SECONDS", 3600)  # only the owner check can break it in time
    out = cli(["tune", "hgemm", *SHAPE, "--trials", "2", "--no-exhaustive", "--no-save"], tmp_path)
    assert out.exit_code == 0, out.output
    journal = (tmp_path / JOURNAL).resolve()
    pid = os.fork()
    if pid == 0:  # a tuner killed while it held the lock
        try:
            study_module.JournalLock(str(journal)).acquire()
            os.kill(os.getpid(), signal.SIGKILL)
        finally:
            os._exit(1)
    os.waitpid(pid, 0)
    assert journal.with_name("studies.journal.lock").exists()
    out = cli(["tune", "hgemm", *SHAPE, "--trials", "4", "--no-exhaustive", "--no-save", "--json"], tmp_path)
    assert out.exit_code == 0, out.output
    assert [line for line in out.stderr.splitlines() if line] == [
        f"note: broke the journal lock {journal}.lock: its owner, process {pid} on this machine, is gone (killed "
        "while it held the lock)"]
    assert _evaluated(out) == 4 and not journal.with_name("studies.journal.lock").exists()


def test_trials_of_plain_optuna_in_a_study_are_named_in_one_line(tmp_path, cli):
    out = cli(["tune", "hgemm", *SHAPE, "--trials", "2", "--no-exhaustive", "--no-save", "--study-name", "s"],
              tmp_path)
    assert out.exit_code == 0, out.output
    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(tmp_path / JOURNAL)))
    optuna.load_study(study_name="s/1024x256x512", storage=storage).optimize(lambda t: t.suggest_float("x", 0, 1),
                                                                            n_trials=3)
    out = cli(["tune", "hgemm", *SHAPE, "--trials", "4", "--no-exhaustive", "--no-save", "--study-name", "s"],
              tmp_path)
    assert out.exit_code == 0, out.output
    assert ("1024x256x512: left out 3 trials of its study that ascendbench did not make (no configuration "
            "of its space in their 'config' user attribute: plain Optuna, optuna-dashboard)") in " ".join(out.stdout.split())


@pytest.mark.parametrize(("config", "value", "jobs"), [
    ("notadict", 1e-13, "1"), ("notadict", 1e-13, "2"),  # a string
    ({"algorithm": "bogus", "s": 7}, 1e-13, "1"),  # a dict without this tool's parameters
    ({}, 1e-14, "1"),  # empty: it must not be taken as the best
])
def test_trials_of_plain_optuna_with_a_config_of_their_own_are_left_out(tmp_path, cli, config, value, jobs):
    from ascendbench.tuning.space import load_space, space_path

    scan = ["tune", "scan", "--n", "1e6", "--sampler", "tpe", "--no-exhaustive", "--study-name", "s"]
    assert cli([*scan, "--trials", "2", "--no-save"], tmp_path).exit_code == 0
    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(tmp_path / JOURNAL)))
    (name,) = optuna.get_all_study_names(storage)
    plain = optuna.load_study(study_name=name, storage=storage)
    trial = plain.ask()
    trial.set_user_attr("config", config)
    plain.tell(trial, value)
    out = cli([*scan, "--trials", "12", "--jobs", jobs, "--out", "r.json"], tmp_path)
    assert out.exit_code == 0, out.output
    p = json.loads((tmp_path / "r.json").read_text())["problems"][0]
    assert p["trials"]["foreign"] == 1 and p["trials"]["evaluated"] >= 12  # two workers may both end one over
    assert p["best"]["time_s"] > value and set(p["best"]["config"]) == set(load_space(space_path("scan")).parameters)
    assert p["speedup"] < 100 and "0.0 µs" not in out.stdout
    drawn = cli(["tune", "plot", "r.json", "--out-dir", "figs", "--format", "png"], tmp_path)
    assert drawn.exit_code == 0, drawn.output
    assert sorted(path.name.rsplit("-", 1)[1] for path in (tmp_path / "figs").iterdir()) == [
        "history.png", "importance.png", "parallel.png"]
