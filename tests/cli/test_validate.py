"""`ascendbench validate`: rows, --only, --json, saved result, exit statuses (0 / 1 / 2), the --quick smoke test."""

import dataclasses
import json
import signal
import subprocess
import sys
import time

import pytest

from ascendbench.reference import claims as claims_module
from ascendbench.store.validation import ValidationResult


def _doc(result):
    return json.loads(result.stdout)


def test_only_two_claims_json(cli, tmp_path):
    r = cli(["validate", "--only", "S-4,G-1", "--json", "--no-save"], tmp_path)
    assert r.exit_code == 0, r.output
    doc = _doc(r)
    ValidationResult.model_validate(doc)
    rows = {c["id"]: c for c in doc["claims"]}
    assert list(rows) == ["S-4", "G-1"]
    assert rows["S-4"]["paper"] == 0.375 and rows["S-4"]["kind"] == "calibration"
    assert rows["S-4"]["simulated"] == pytest.approx(0.375, rel=0.15)
    assert rows["S-4"]["ratio"] == pytest.approx(rows["S-4"]["simulated"] / 0.375)
    assert rows["G-1"]["simulated"] == "128x128x256" and rows["G-1"]["holds"]
    assert doc["passed"] and doc["summary"] == {"rows": 2, "holds": 2, "misses": [], "failing": []}
    assert set(doc["hardware"]) == {"ascend-910b4", "atlas-300t-a2"}
    assert not (tmp_path / "results").exists()


def test_hardware_evaluates_a_papers_chip_claims_on_another_profile(cli, tmp_path):
    from ascendbench.hardware import load_profile

    base = _doc(cli(["validate", "--only", "S-1", "--json", "--no-save"], tmp_path))
    r = cli(["validate", "--only", "S-1", "--hardware", "ascend-910b4=ascend-910b2", "--json", "--no-save"], tmp_path)
    assert r.exit_code == 0, r.output
    doc = _doc(r)
    assert doc["hardware"]["ascend-910b4"] == load_profile("ascend-910b2").to_dict()
    assert doc["claims"][0]["simulated"] != base["claims"][0]["simulated"]  # the 910B2's clock and cores
    text = cli(["validate", "--only", "S-1", "--hardware", "ascend-910b4=ascend-910b2", "--no-save"], tmp_path)
    assert "the claims of ascend-910b4 evaluated on ascend-910b2 (--hardware)" in text.stdout


def test_claims_md_id_selects_every_row_and_the_result_is_saved(cli, tmp_path):
    r = cli(["validate", "--only", "G-9a"], tmp_path)
    assert r.exit_code == 0, r.output
    assert "G-9a M=8" in r.stdout and "G-9a M=512" in r.stdout and "550.9 µs" in r.stdout and " us " not in r.stdout
    saved = list((tmp_path / "results" / "validate" / "only").glob("*.json"))
    assert len(saved) == 1
    doc = ValidationResult.model_validate_json(saved[0].read_text())
    assert [c.id for c in doc.claims] == ["G-9a M=8", "G-9a M=512"]
    listed = cli(["results", "list", "--json"], tmp_path)
    assert listed.exit_code == 0 and [r["kind"] for r in json.loads(listed.stdout)] == ["validation"]


def test_out_file_equals_json_stdout(cli, tmp_path):
    r = cli(["validate", "--only", "G-2", "--json", "--out", "v.json"], tmp_path)
    assert r.exit_code == 0
    assert json.loads((tmp_path / "v.json").read_text()) == _doc(r)


@pytest.mark.parametrize("args, message", [
    (["--only", "S-4,S-99"], "--only: unknown claim ID 'S-99'"),
    (["--only", "G-9"], "--only: unknown claim ID 'G-9' (did you mean G-9a, G-9b?)"),
    (["--only", ","], "--only: expected"),
    (["--random", "0"], "--random: must be between 1 and 5000"),
    (["--out", "v.txt"], "--out: must end in .json"),
    (["--out", "v.json", "--no-save"], "--out: cannot be combined"),
    (["--only", "S-1", "--quick"], "--only: S-1 is not in the --quick set; drop --quick to evaluate it"),
    (["--only", "G-1,S-1,S-3", "--quick"], "--only: S-1, S-3 are not in the --quick set; drop --quick"),
    (["--only", "G7"], "--only: unknown claim ID 'G7' (did you mean G-7, "),
    (["--only", "g9a"], "--only: unknown claim ID 'g9a' (did you mean G-9a?)"),
    (["--only", "G-9a M=16"], "(did you mean G-9b M=16, "),
    (["--only", "S-4", "--random", "10"], "--random: only G-7 evaluates random-5000 shapes"),
    (["--quick", "--random", "10"], "--random: only G-7 evaluates random-5000 shapes"),
    (["--only", "S-1", "--hardware", "ascend-910b2"], "--hardware: expected CHIP=PROFILE"),
    (["--only", "S-1", "--hardware", "ascend-910b2=ascend-910b4"], "--hardware: the claims were measured on "
                                                                   "ascend-910b4 and atlas-300t-a2, not "),
    (["--only", "S-1", "--hardware", "ascend-910b4=nope.toml"], "--hardware: unknown profile 'nope.toml'"),
    (["--only", "S-1", "--hardware", "ascend-910b4=ascend-910b2", "--hardware", "ascend-910b4=ascend-910b3"],
     "--hardware: ascend-910b4 is given twice"),
])
def test_bad_options_one_line_exit_2_nothing_written(cli, tmp_path, args, message):
    r = cli(["validate", *args], tmp_path)
    assert r.exit_code == 2
    assert message in r.stderr and len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.output
    assert list(tmp_path.iterdir()) == []


def test_ids_match_in_any_case_and_repeated_only_options_add_up(cli, tmp_path):
    r = cli(["validate", "--only", "g-9a,G-9A", "--only", "s-4", "--json", "--no-save"], tmp_path)
    assert r.exit_code == 0, r.output
    doc = _doc(r)
    assert doc["only"] == ["G-9a", "S-4"]
    assert [c["id"] for c in doc["claims"]] == ["S-4", "G-9a M=8", "G-9a M=512"]


def _patched(monkeypatch, row_id, **changes):
    """The claims data with one row changed (e.g. an impossible paper value), so that a verdict flips."""
    rows = tuple(dataclasses.replace(c, **changes) if c.id == row_id else c for c in claims_module.load_claims())
    monkeypatch.setattr(claims_module, "load_claims", lambda: rows)


def test_calibration_miss_fails_the_exit_status(cli, tmp_path, monkeypatch):
    _patched(monkeypatch, "S-4", paper=0.9)
    r = cli(["validate", "--only", "S-4", "--json", "--no-save"], tmp_path)
    assert r.exit_code == 1
    doc = _doc(r)
    assert doc["summary"]["failing"] == ["S-4"] and not doc["passed"]


def test_validation_miss_fails_only_with_strict(cli, tmp_path, monkeypatch):
    _patched(monkeypatch, "S-4", paper=0.9, kind="validation")
    r = cli(["validate", "--only", "S-4", "--json", "--no-save"], tmp_path)
    assert r.exit_code == 0
    assert _doc(r)["summary"]["misses"] == ["S-4"] and _doc(r)["summary"]["failing"] == []
    r = cli(["validate", "--only", "S-4", "--json", "--no-save", "--strict"], tmp_path)
    assert r.exit_code == 1 and _doc(r)["summary"]["failing"] == ["S-4"]


def test_report_shows_the_miss(cli, tmp_path, monkeypatch):
    _patched(monkeypatch, "G-2", paper="129, 8")
    r = cli(["validate", "--only", "G-2,G-1", "--json", "--no-save"], tmp_path)
    assert r.exit_code == 1 and _doc(r)["summary"]["failing"] == ["G-2"]
    _patched(monkeypatch, "S-2", paper=20.0)
    r = cli(["validate", "--only", "S-2", "--no-save"], tmp_path)
    assert r.exit_code == 1
    assert "MISS" in r.stdout and "failing" in r.stdout and "S-2" in r.stdout


def test_at_80_columns_no_word_is_split(cli, tmp_path, columns):
    """Too narrow for the table with whole words: a block per claim, every word of its cells whole."""
    columns(80)
    r = cli(["validate", "--quick", "--only", "G-10,S-9,G-1,S-2", "--out", "v.json"], tmp_path)
    assert r.exit_code == 0, r.output
    claims = json.loads((tmp_path / "v.json").read_text())["claims"]
    lines = r.stdout.splitlines()
    words = set(r.stdout.split())
    for c in claims:
        for text in (c["claim"], c["tolerance"]):
            assert set(text.split()) <= words, text  # every word whole (rich's fold split "candida te")
        assert f"{c['id']}  kind {c['kind']}" in r.stdout
    assert max(len(line) for line in lines) <= 80 and "┃" not in r.stdout  # no table squeezed into 80 columns
    g10 = next(i for i, line in enumerate(lines) if line.startswith("G-10"))
    assert lines[g10 + 1].split()[0] == "claim" and lines[g10 + 3].split()[0] == "paper"  # statement on 2 lines


@pytest.mark.slow
def test_quick_smoke_set_passes_and_covers_every_family(cli, tmp_path):
    r = cli(["validate", "--quick", "--json", "--no-save"], tmp_path)
    assert r.exit_code == 0, [c["id"] for c in _doc(r)["claims"] if not c["holds"]]
    doc = _doc(r)
    assert doc["quick"] and doc["passed"]
    assert {c["family"] for c in doc["claims"]} == set(claims_module.FAMILIES)


@pytest.mark.parametrize(("sig", "code", "line"), [(signal.SIGINT, 130, "interrupted"),
                                                   (signal.SIGTERM, 143, "terminated")])
def test_a_signal_ends_the_run_with_one_line_and_the_shell_status(tmp_path, sig, code, line):
    proc = subprocess.Popen([sys.executable, "-m", "ascendbench.cli", "validate", "--out", "v.json"], cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    time.sleep(3)  # past the imports, inside the claims
    proc.send_signal(sig)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == code and err.strip().splitlines()[-1] == line and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []  # no result, no temporary file


def test_md_prints_a_markdown_table_of_the_rows(cli, tmp_path):
    from tests.cli.test_results import md_tables

    r = cli(["validate", "--only", "G-1,G-9a", "--md", "--no-save"], tmp_path)
    assert r.exit_code == 0, r.output
    doc = _doc(cli(["validate", "--only", "G-1,G-9a", "--json", "--no-save"], tmp_path))
    (table,) = md_tables(r.stdout)
    assert table[0] == ["ID", "kind", "claim", "paper", "simulated", "ratio", "tolerance", "verdict"]
    assert [row[:3] + row[5:] for row in table[1:]] == [
        [c["id"], c["kind"], c["claim"], f"{c['ratio']:.2f}" if c["ratio"] is not None else "", c["tolerance"],
         "holds" if c["holds"] else "miss"] for c in doc["claims"]]
    assert table[2][3] == "550.9 µs"  # G-9a M=8, the paper's time in its unit
    assert r.stdout.startswith("**claims of the scan and HGEMM papers: paper vs simulated**\n\n| ID |")
    assert "\n\n3/3 rows hold in " in r.stdout and "\n\npassed: every exact, calibration and shape claim holds\n" in r.stdout
    both = cli(["validate", "--only", "G-1", "--md", "--json"], tmp_path)
    assert both.exit_code == 2 and both.output == "error: --md: cannot be combined with --json; choose one\n"
