import json

from typer.testing import CliRunner

from ascendbench.cli import app
from ascendbench.hardware import load_profile

runner = CliRunner()


def test_hardware_list_and_json():
    out = runner.invoke(app, ["hardware", "list"])
    assert out.exit_code == 0 and "ascend-910b4" in out.output and "atlas-300t-a2" in out.output
    doc = json.loads(runner.invoke(app, ["hardware", "list", "--json"]).stdout)
    assert [p["name"] for p in doc] == ["ascend-910b1", "ascend-910b2", "ascend-910b3", "ascend-910b4", "atlas-300t-a2"]


def test_hardware_show_gives_values_and_sources():
    out = runner.invoke(app, ["hardware", "show", "ascend-910b4"])
    assert out.exit_code == 0 and "hbm_bandwidth_gbps" in out.output and "scan paper" in out.output
    doc = json.loads(runner.invoke(app, ["hardware", "show", "ascend-910b4", "--json"]).stdout)
    assert doc["constants"]["ai_cores"] == {"value": 20, "source": "scan paper §6: 20 cube units"}
    assert doc["constants"]["hbm_efficiency"] == {"value": 0.6625, "source": load_profile("ascend-910b4").sources["hbm_efficiency"]}
    assert "cache_tiling_soc_spec.h" in doc["constants"]["hbm_efficiency"]["source"]


def test_hardware_show_unknown_is_a_user_error():
    out = runner.invoke(app, ["hardware", "show", "nope"])
    assert out.exit_code == 2 and "unknown profile 'nope'" in out.output and "Traceback" not in out.output


def test_version():
    out = runner.invoke(app, ["--version"])
    assert out.exit_code == 0 and out.output.strip() == "ascendbench 0.1.0"


def test_show_colours_a_source_by_its_kind_also_when_inherited():
    from ascendbench.commands.hardware import _SOURCE_KIND

    kinds = {source: (m[1] if (m := _SOURCE_KIND.match(source)) else None) for source in (
        "estimate, checked 1-5 us: the device's start", "derived: benchmarks/derive_nd2nz.py",
        "inherited from atlas-300t-a2: estimate, checked 50-400 cycles: a flag", "calibrated: S-4",
        "inherited from atlas-300t-a2: pypto cost model", "CANN cost model (estimated elsewhere)")}
    assert list(kinds.values()) == ["estimate", "derived", "estimate", "calibrated", None, None]


def test_list_gives_l2_as_its_source_does_and_the_size_reported_to_tiling_where_it_differs():
    from ascendbench.commands.hardware import _l2_text
    from ascendbench.hardware import load_profile

    assert _l2_text(load_profile("ascend-910b4")) == "168 MiB (reports 96 MiB)"
    assert _l2_text(load_profile("ascend-910b3")) == "192 MB"
    assert _l2_text(load_profile("ascend-910b2")) == "192 MiB"
