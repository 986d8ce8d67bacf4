"""`ascendbench correlate`: the shipped sample, the JSON document, every bad input (one line naming the row and
the column, exit 2, nothing written), and --fit recovering perturbed constants (an HBM rate 20% lower, a host
window 30 us longer) with --write-profile's profile usable by `run`."""

import json
from pathlib import Path

import pytest

from ascendbench import correlate as lib
from ascendbench.hardware import load_profile
from ascendbench.store.correlation import CorrelationResult

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "docs" / "correlate" / "sample_measurements.csv"


def test_sample_file_table_json_and_saved_document(cli, tmp_path):
    r = cli(["correlate", str(SAMPLE), "--no-save"], tmp_path)
    assert r.exit_code == 0, r.output
    for text in ("Table 5 proposed M=8", "550.90", "marginal costs", "variant=gemm-example"):
        assert text in r.stdout, text
    assert not (tmp_path / "results").exists()
    r = cli(["correlate", str(SAMPLE), "--json", "--out", "c.json", "--plot", "c.png"], tmp_path)
    assert r.exit_code == 0, r.output
    doc = CorrelationResult.model_validate(json.loads(r.stdout))
    assert doc == CorrelationResult.model_validate_json((tmp_path / "c.json").read_text())
    assert (tmp_path / "c.png").stat().st_size > 10_000
    assert doc.summary.count == 14 and set(doc.summary.by_kernel) == {"hgemm"}
    assert doc.rows[0].measured_us == 550.9 and doc.rows[0].params == {
        "variant": "proposed", "m": 8, "n": 28672, "k": 7168, "alpha": 0.5, "beta": 0.5, "warm_l2": True,
        "every_core": True}
    # the rows run as validate runs G-9: the same simulated time
    from ascendbench.hardware import load_profile
    from ascendbench.reference.hgemm_claims import OPT_FFN, time_us
    assert doc.rows[0].simulated_us == pytest.approx(time_us(load_profile("atlas-300t-a2"), (8, *OPT_FFN)), rel=1e-9)
    assert doc.rows[0].ratio == pytest.approx(doc.rows[0].simulated_us / 550.9)
    # proposed (alpha = beta = 0.5) and GemmExample (C = A @ B) solve different problems: nothing to rank
    assert len(doc.marginal) == 12 and doc.ranking == [] and doc.flags == []
    assert doc.measurements["file"] == "sample_measurements.csv" and doc.fit is None


HEADER = "kernel,n,s,window,measured_us\n"


@pytest.mark.parametrize("body, expected", [
    ("scan,2**20,,,10\nscn,2**20,,,10\n", "row 2, column kernel: unknown kernel 'scn' (did you mean 'scan'?)"),
    ("scan,2**20,,,10\nsort,1000,128,,10\n", "row 2, column s: not a parameter of sort"),
    ("scan,2**20,,,\n", "row 1, column measured_us: missing"),
    ("scan,2**20,,,-3\n", "row 1, column measured_us: must be a positive number"),
    ("scan,2**20,,,0\n", "row 1, column measured_us: must be a positive number"),
    ("scan,2**20,17,,10\n", "row 1, column s: must be one of 16, 32, 64, 128"),
    ("scan,-5,,,10\n", "row 1, column n: expected a non-negative integer"),
    ("scan,,,,10\n", "row 1, column n: is required"),
    ("scan,2**20,,device,10\n", "row 1, column window: must be kernel or host"),
    ("scan,2**20,,,10\nscan,2**20,,,10\n", "row 2: identical to row 1 in every column"),
    ("scan,2**20,,,5e-324\n", "row 1, column measured_us: '5e-324' is outside 0.001 to 1e+12 microseconds"),
    ("scan,2**20,,,1e300\n", "row 1, column measured_us: '1e300' is outside"),
])
def test_bad_rows_name_the_row_and_column_and_write_nothing(cli, tmp_path, body, expected):
    (tmp_path / "m.csv").write_text(HEADER + body)
    r = cli(["correlate", "m.csv", "--out", "c.json"], tmp_path)
    assert r.exit_code == 2, r.output
    assert expected in r.output and len(r.output.strip().splitlines()) == 1, r.output
    assert not (tmp_path / "c.json").exists() and not (tmp_path / "results").exists()


@pytest.mark.parametrize("name, content, expected", [
    ("missing.csv", None, "file not found"),
    ("bad.jsonl", '{"kernel": "scan"\n', "row 1: not a JSON object"),
    ("bin.csv", b"\xff\xfe\x00kernel", "not UTF-8 text"),
    ("nohead.csv", "kernel,n\nscan,10\n", "column measured_us: missing from the header"),
    ("hw.csv", "kernel,n,hardware,measured_us\nscan,2**20,ascend-9999,10\n",
     "row 1, column hardware: unknown profile 'ascend-9999'"),
    ("twice.csv", "kernel, n ,n,measured_us\nscan,2**20,2**22,10\n", "column n: appears twice in the header"),
    ("twice.jsonl", '{"kernel": "scan", "n": 1048576, "n": 4, "measured_us": 10}\n',
     "row 1, column n: appears twice in the object"),
    ("near.csv", "kernel,n,measure_us\nscan,2**20,10\n", "(is 'measure_us' meant?)"),
])
def test_unreadable_files(cli, tmp_path, name, content, expected):
    if isinstance(content, bytes):
        (tmp_path / name).write_bytes(content)
    elif content is not None:
        (tmp_path / name).write_text(content)
    r = cli(["correlate", name], tmp_path)
    assert r.exit_code == 2 and expected in r.output
    assert not (tmp_path / "results").exists()


def _generate(tmp_path, hw, rows, name="m.csv"):
    """A measurements file whose times are the simulator's on profile `hw` (the "real" chip)."""
    lines = ["kernel,algorithm,n,m,k,window,measured_us"]
    sim = lib.RowSimulator()
    for kernel, algorithm, n, m, k, window in rows:
        line = f"{kernel},{algorithm},{n},{m},{k},{window}"
        (row,) = lib.read_measurements(_tmp_csv(tmp_path, line + ",1"), hardware="ascend-910b4")
        kernel_us, window_us = sim.time_us(row, hw)
        lines.append(f"{line},{kernel_us + window_us!r}")
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def _tmp_csv(tmp_path, line):
    path = tmp_path / "one.csv"
    path.write_text("kernel,algorithm,n,m,k,window,measured_us\n" + line + "\n")
    return path


HBM_ROWS = [("scan", "memcpy", n, "", "", "") for n in (2**20, 2**21, 2**22, 2**23)] + [
    ("hgemm", "", 512, m, 512, "") for m in (8192, 16384)]


def test_fit_recovers_an_hbm_rate_20_percent_lower_and_writes_a_usable_profile(cli, tmp_path):
    base = load_profile("ascend-910b4")
    truth = base.hbm_efficiency * 0.8
    _generate(tmp_path, base.replace(hbm_efficiency=truth), HBM_ROWS)
    r = cli(["correlate", "m.csv", "--hardware", "ascend-910b4", "--fit", "--free", "hbm_efficiency", "--json",
             "--no-save", "--write-profile", "fitted.toml"], tmp_path)
    assert r.exit_code == 0, r.output
    fit = json.loads(r.stdout)["fit"]
    assert fit["constants"]["hbm_efficiency"]["before"] == base.hbm_efficiency
    assert fit["constants"]["hbm_efficiency"]["after"] == pytest.approx(truth, rel=0.02)
    assert fit["cv_error_after"] < 0.005 < 0.05 < fit["cv_error_before"] and fit["folds"] == 5 and fit["accepted"]
    fitted = load_profile(str(tmp_path / "fitted.toml"))
    assert fitted.hbm_efficiency == pytest.approx(truth, rel=0.02) and fitted.name == "fitted"
    assert fitted.sources["hbm_efficiency"].startswith("calibrated: ascendbench correlate --fit on m.csv (sha256 ")
    assert "6 rows" in fitted.sources["hbm_efficiency"] and str(tmp_path) not in (tmp_path / "fitted.toml").read_text()
    assert fitted.replace(hbm_efficiency=base.hbm_efficiency).constants() == base.constants()  # the others as were
    r = cli(["run", "sort", "--n", "4096", "--hardware", "fitted.toml", "--no-save"], tmp_path)
    assert r.exit_code == 0, r.output
    # the fitted profile now marks the constant calibrated: --fit alone fits it again
    r = cli(["correlate", "m.csv", "--hardware", "fitted.toml", "--fit", "--json", "--no-save"], tmp_path)
    assert r.exit_code == 0, r.output
    assert list(json.loads(r.stdout)["fit"]["constants"]) == ["hbm_efficiency"]


def test_fit_recovers_a_host_window_30_us_longer(cli, tmp_path):
    base = load_profile("ascend-910b4")
    rows = [("scan", a, n, "", "", "host") for a in ("mcscan", "memcpy") for n in (2**16, 2**18, 2**20)]
    _generate(tmp_path, base.replace(host_launch_us=base.host_launch_us + 30), rows)
    r = cli(["correlate", "m.csv", "--fit", "--free", "host_launch_us", "--folds", "3", "--json", "--no-save",
             "--hardware", "ascend-910b4"], tmp_path)
    assert r.exit_code == 0, r.output
    fit = json.loads(r.stdout)["fit"]
    assert fit["constants"]["host_launch_us"]["after"] == pytest.approx(base.host_launch_us + 30, rel=0.02)
    assert fit["cv_error_after"] < 0.005 and fit["cv_error_before"] > 0.1 and fit["folds"] == 3


def test_fit_refusals(cli, tmp_path):
    _generate(tmp_path, load_profile("ascend-910b4"), HBM_ROWS[:1])
    r = cli(["correlate", "m.csv", "--fit", "--hardware", "ascend-910b4"], tmp_path)
    assert r.exit_code == 2 and "nothing to fit" in r.output and "--free" in r.output
    r = cli(["correlate", "m.csv", "--fit", "--free", "hbm_efficiency,gm_read_bytes_per_cycle"], tmp_path)
    assert r.exit_code == 2 and "1 row for 2 constants" in r.output
    (tmp_path / "two.csv").write_text("kernel,n,m,k,measured_us\nscan,2**20,,,20\nhgemm,64,64,64,20\n")
    r = cli(["correlate", "two.csv", "--fit", "--free", "hbm_efficiency"], tmp_path)
    assert r.exit_code == 2 and "several profiles (ascend-910b4, atlas-300t-a2)" in r.output
    r = cli(["correlate", "m.csv", "--fit", "--free", "hbm_eficiency"], tmp_path)
    assert r.exit_code == 2 and "did you mean 'hbm_efficiency'" in r.output
    r = cli(["correlate", "m.csv", "--free", "hbm_efficiency"], tmp_path)
    assert r.exit_code == 2 and "add --fit" in r.output
    assert not (tmp_path / "results").exists()


def test_results_list_and_show_read_a_correlation_document(cli, tmp_path):
    r = cli(["correlate", str(SAMPLE), "--out", "c.json"], tmp_path)
    assert r.exit_code == 0, r.output
    listed = cli(["results", "list", ".", "--json"], tmp_path)
    (row,) = json.loads(listed.stdout)
    assert row["kind"] == "correlation" and row["valid"] and row["problems"] == 0
    shown = cli(["results", "show", "c.json"], tmp_path)
    assert shown.exit_code == 0 and "Table 5 GemmExample M=512" in shown.stdout and "5,617.02" in shown.stdout
