"""`ascendbench reproduce`: list, one cheap figure (PNG + JSON data checked), errors."""

import json

import pytest

from ascendbench.hardware import load_profile
from ascendbench.kernels import SCAN_KERNELS, ScanParams
from ascendbench.reference.figures import FIGURES

# Every figure and table the issue asks for.
EXPECTED = {"fig4.2", "fig6.1", "fig6.2", "fig6.3", "fig6.4", "fig6.5", "fig6.6", "fig6.7", "fig6.8", "figB.2",
            "figB.3", "figB.4", "hgemm-fig4", "hgemm-fig5", "hgemm-fig6", "hgemm-fig10", "hgemm-fig11", "table4",
            "table5"}


def test_list_names_every_figure_with_its_source(cli, tmp_path):
    r = cli(["reproduce", "list", "--json"], tmp_path)
    assert r.exit_code == 0
    rows = json.loads(r.stdout)
    assert {row["id"] for row in rows} == EXPECTED == set(FIGURES)
    assert all(row["source"].startswith(("scan paper", "HGEMM paper")) for row in rows)
    assert list(tmp_path.iterdir()) == []


def test_phase_breakdown_figure_png_and_data(cli, tmp_path):
    r = cli(["reproduce", "fig6.4", "--out-dir", "figs"], tmp_path)
    assert r.exit_code == 0, r.output
    png, data = tmp_path / "figs" / "fig6.4.png", tmp_path / "figs" / "fig6.4.json"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    doc = json.loads(data.read_text())
    assert doc["figure"] == "fig6.4" and doc["kind"] == "figure" and doc["hardware"] == ["ascend-910b4"]
    series = {s["label"]: s for s in doc["data"]["series"]}
    assert set(series) == {"MCScan phase I", "MCScan phase II", "MCScanUL1 phase I", "MCScanUL1 phase II"}
    # the plotted values are the simulator's phase times (ms) at the plotted sizes
    hw = load_profile("ascend-910b4")
    n = int(series["MCScan phase I"]["x"][-1].replace(",", ""))
    sim = SCAN_KERNELS["mcscan-ul1"].simulate(n, ScanParams(), hw)
    assert series["MCScanUL1 phase II"]["y"][-1] == pytest.approx(sim.phases["phase II"] * 1e3)
    assert all(s["origin"] == "simulated" for s in series.values())


def test_unknown_figure_is_one_line_exit_2(cli, tmp_path):
    r = cli(["reproduce", "fig9.9"], tmp_path)
    assert r.exit_code == 2 and "unknown figure 'fig9.9'" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_out_dir_that_is_a_file_is_refused(cli, tmp_path):
    (tmp_path / "f").write_text("x")
    r = cli(["reproduce", "fig6.4", "--out-dir", "f"], tmp_path)
    assert r.exit_code == 2 and "--out-dir" in r.stderr


def test_empty_out_dir_is_refused_not_taken_as_the_current_folder(cli, tmp_path):
    r = cli(["reproduce", "fig6.4", "--out-dir", ""], tmp_path)
    assert r.exit_code == 2 and "--out-dir: must name a folder" in r.stderr
    assert list(tmp_path.iterdir()) == []


def _png_dpi(data: bytes) -> float:
    """Dots per inch in a PNG's pHYs chunk (pixels per metre, as matplotlib writes it)."""
    at = data.index(b"pHYs") + 4
    return int.from_bytes(data[at:at + 4], "big") * 0.0254


def test_default_is_one_png_at_150_dpi(cli, tmp_path):
    r = cli(["reproduce", "table5", "--out-dir", "figs", "--json"], tmp_path)
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)[0]["figures"] == ["figs/table5.png"]
    assert sorted(p.name for p in (tmp_path / "figs").iterdir()) == ["table5.json", "table5.png"]
    assert round(_png_dpi((tmp_path / "figs" / "table5.png").read_bytes())) == 150


def test_svg_pdf_and_png_at_the_dpi_asked_for(cli, tmp_path):
    r = cli(["reproduce", "table5", "--out-dir", "figs", "--format", "svg", "--format", "pdf", "--format", "png",
             "--format", "svg", "--dpi", "300"], tmp_path)
    assert r.exit_code == 0, r.output
    figs = tmp_path / "figs"
    assert sorted(p.name for p in figs.iterdir()) == ["table5.json", "table5.pdf", "table5.png", "table5.svg"]
    svg = (figs / "table5.svg").read_text()
    assert svg.lstrip().startswith("<?xml") and "<dc:date>" not in svg  # no date: same data, same bytes
    assert (figs / "table5.pdf").read_bytes()[:5] == b"%PDF-"
    assert round(_png_dpi((figs / "table5.png").read_bytes())) == 300


@pytest.mark.parametrize("args, message", [
    (["--format", "gif"], "--format: must be one of png, svg, pdf, got 'gif'"),
    (["--dpi", "10"], "--dpi: must be between 50 and 600 dots per inch, got 10"),
    (["--dpi", "601"], "--dpi: must be between 50 and 600 dots per inch, got 601"),
])
def test_bad_format_or_dpi_is_one_line_exit_2_and_writes_nothing(cli, tmp_path, args, message):
    r = cli(["reproduce", "table5", "--out-dir", "figs", *args], tmp_path)
    assert r.exit_code == 2 and r.stderr.strip() == f"error: {message}", r.output
    assert list(tmp_path.iterdir()) == []
