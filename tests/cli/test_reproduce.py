"""`ascendbench reproduce`: list, one cheap figure (PNG + JSON data checked), errors."""

import json
from pathlib import Path

import pytest

from ascendbench.commands.reproduce import load_figure_doc
from ascendbench.hardware import load_profile
from ascendbench.kernels import SCAN_KERNELS, ScanParams
from ascendbench.reference.figures import FIGURES
from ascendbench.store.documents import parse_result

ROOT = Path(__file__).resolve().parents[2]

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
    # the plotted values are the simulator's phase times (seconds, in the axis' ms) at the plotted sizes
    hw = load_profile("ascend-910b4")
    n = int(series["MCScan phase I"]["x"][-1].replace(",", ""))
    sim = SCAN_KERNELS["mcscan-ul1"].simulate(n, ScanParams(), hw)
    assert doc["data"]["ylabel"] == "time (ms)" and {s["unit"] for s in series.values()} == {"ms"}
    assert series["MCScanUL1 phase II"]["y"][-1] == pytest.approx(sim.phases_s["phase II"] * 1e3)
    assert all(s["origin"] == "simulated" for s in series.values())
    assert doc["data"]["paper"]["claims"] == [] and "S-9" in doc["data"]["paper"]["reason"]
    # the tool reads its own figure file: results show / list take it as a valid figure result
    assert type(parse_result(doc)).__name__ == "FigureResult"
    shown = cli(["results", "show", str(data)], tmp_path)
    assert shown.exit_code == 0 and "not a valid" not in shown.output, shown.output


@pytest.mark.parametrize("path", sorted((ROOT / "docs" / "figures").glob("*.json")), ids=lambda p: p.stem)
def test_the_figures_shipped_in_docs_are_current_figure_files(path):
    # docs/fidelity.md shows them; `reproduce --from` must redraw them and `results` must read them
    doc = load_figure_doc(path)
    assert type(parse_result(doc)).__name__ == "FigureResult" and doc["figure"] == path.stem


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


def test_from_redraws_the_saved_series_without_simulating(cli, tmp_path, monkeypatch):
    from dataclasses import replace

    from ascendbench.reference import figures, hgemm_claims

    r = cli(["reproduce", "hgemm-fig11", "--out-dir", "figs"], tmp_path)
    assert r.exit_code == 0, r.output
    saved = json.loads((tmp_path / "figs" / "hgemm-fig11.json").read_text())

    def no_simulation(*args, **kwargs):
        raise AssertionError("simulated again")

    for fid, fig in list(FIGURES.items()):
        monkeypatch.setitem(FIGURES, fid, replace(fig, compute=no_simulation))
    monkeypatch.setattr(hgemm_claims, "hpl_tflops", no_simulation)
    drawn = []
    render = figures.render
    monkeypatch.setattr(figures, "render", lambda fig, data: drawn.append((fig, data)) or render(fig, data))
    r = cli(["reproduce", "--from", "figs/hgemm-fig11.json", "--out-dir", "again", "--format", "png", "--format",
             "svg", "--dpi", "80", "--json"], tmp_path)
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)[0]["figures"] == ["again/hgemm-fig11.png", "again/hgemm-fig11.svg"]
    assert sorted(p.name for p in (tmp_path / "again").iterdir()) == ["hgemm-fig11.png", "hgemm-fig11.svg"]
    assert round(_png_dpi((tmp_path / "again" / "hgemm-fig11.png").read_bytes())) == 80
    [(fig, data)] = drawn
    assert data == saved["data"] and (fig.id, fig.caption) == ("hgemm-fig11", saved["caption"])
    # the same series, drawn: the simulated line and the paper's two levels
    figure = render(fig, data)
    try:
        lines = {line.get_label(): line for line in figure.axes[0].get_lines()}
        sim = saved["data"]["series"][0]
        assert list(lines[sim["label"]].get_ydata()) == sim["y"]
    finally:
        import matplotlib.pyplot as plt

        plt.close(figure)
    # by default next to the JSON
    r = cli(["reproduce", "--from", "figs/hgemm-fig11.json", "--format", "pdf"], tmp_path)
    assert r.exit_code == 0 and (tmp_path / "figs" / "hgemm-fig11.pdf").read_bytes()[:5] == b"%PDF-"


@pytest.mark.parametrize("content, message", [
    (None, "--from: cannot read 'f.json': No such file or directory"),
    ("{not json", "--from: 'f.json' is not JSON"),
    ('{"kind": "result"}', "--from: 'f.json' is not a figure's data"),
    ('{"kind": "figure", "schema_version": 1, "figure": "fig6.4", "data": {}}',
     "--from: 'f.json' has schema version 1; this version draws 2 (run `ascendbench reproduce fig6.4` again)"),
    ('{"kind": "figure", "schema_version": 2, "figure": "fig6.4", "data": {"kind": "lines"}}',
     "--from: 'f.json' is not a valid figure file: paper: Field required"),
])
def test_from_a_bad_json_is_one_line_exit_2_and_writes_nothing(cli, tmp_path, content, message):
    if content is not None:
        (tmp_path / "f.json").write_text(content)
    r = cli(["reproduce", "--from", "f.json", "--out-dir", "out"], tmp_path)
    assert r.exit_code == 2 and r.stderr.strip().startswith(f"error: {message}"), r.output
    assert len(r.stderr.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ([] if content is None else ["f.json"])


@pytest.mark.parametrize("edit, message", [
    (lambda series: series.update(label="$\\foo{$"), "(ValueError: \\foo{ ^ ParseFatalException: Unknown symbol"),
    (lambda series: series.update(x=[1e308] * len(series["x"])), "(RuntimeWarning: overflow encountered"),
    (lambda series: series.update(y=["a"] * len(series["y"])), "series 'MCScan s=32' has y values that are not"),
    (lambda series: series.update(label=None) or series.pop("y"), "its data cannot be drawn (KeyError: 'y')"),
], ids=["tex-label", "overflow", "text-y", "no-y"])
def test_from_data_that_fails_only_when_drawn_is_one_line_exit_2(cli, tmp_path, edit, message):
    doc = json.loads((ROOT / "docs" / "figures" / "fig6.1.json").read_text())
    edit(doc["data"]["series"][0])
    (tmp_path / "f.json").write_text(json.dumps(doc))
    r = cli(["reproduce", "--from", "f.json", "--out-dir", "out"], tmp_path)
    assert r.exit_code == 2 and len(r.stderr.strip().splitlines()) == 1 and message in r.stderr, r.output
    assert "Warning" not in r.stderr.replace("RuntimeWarning: overflow", "")  # no warning printed besides
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.json"]


@pytest.mark.parametrize("edit, message", [
    (lambda doc: doc.update(figure="nope"), "is the data of 'nope', which is no figure of this version"),
    (lambda doc: doc["data"].update(kind="weird"), "data kind 'weird' is none of lines, scatter, bars"),
    (lambda doc: doc.pop("caption"), "is not a valid figure file: caption: Field required"),
], ids=["figure", "kind", "caption"])
def test_from_a_figure_file_edited_into_another_is_refused(cli, tmp_path, edit, message):
    doc = json.loads((ROOT / "docs" / "figures" / "fig6.1.json").read_text())
    edit(doc)
    (tmp_path / "f.json").write_text(json.dumps(doc))
    r = cli(["reproduce", "--from", "f.json", "--out-dir", "out"], tmp_path)
    assert r.exit_code == 2 and r.stderr.startswith("error: --from: 'f.json'") and message in r.stderr, r.output
    assert len(r.stderr.strip().splitlines()) == 1 and sorted(p.name for p in tmp_path.iterdir()) == ["f.json"]


def test_from_and_a_figure_id_together_or_neither_are_refused(cli, tmp_path):
    r = cli(["reproduce", "fig6.4", "--from", "f.json"], tmp_path)
    assert r.exit_code == 2 and "give a figure ID or --from, not both" in r.stderr
    r = cli(["reproduce"], tmp_path)
    assert r.exit_code == 2 and "FIGURE: missing" in r.stderr
    assert list(tmp_path.iterdir()) == []
