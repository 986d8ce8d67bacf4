import dataclasses

import pytest

from ascendbench.hardware import HardwareError, list_profiles, load_profile
from ascendbench.hardware.profile import _constant_fields


def test_shipped_profiles_load_and_every_constant_has_a_source():
    assert list_profiles() == ["ascend-910b1", "ascend-910b2", "ascend-910b3", "ascend-910b4", "atlas-300t-a2"]
    for name in list_profiles():
        hw = load_profile(name)
        for f in _constant_fields():
            assert hw.sources[f.name].strip(), f"{name}: {f.name} has no source"


def test_scan_paper_machine_matches_public_facts():
    hw = load_profile("ascend-910b4")
    assert (hw.ai_cores, hw.aiv_cores, hw.hbm_bandwidth_gbps) == (20, 40, 800.0)
    assert (hw.l0a_bytes, hw.l0b_bytes, hw.l0c_bytes, hw.l1_bytes, hw.ub_bytes) == (65536, 65536, 131072, 524288, 196608)
    hgemm = load_profile("atlas-300t-a2")
    assert hgemm.cube_fp16_peak_tflops == pytest.approx(280, rel=1e-3)  # HGEMM paper Table 3


@pytest.mark.parametrize("name, cores, mhz, l2", [
    ("ascend-910b1", 24, 1850.0, 192 * 2**20),
    ("ascend-910b2", 24, 1800.0, 192 * 2**20),
    ("ascend-910b3", 20, 1800.0, 192_000_000),
])
def test_910b_family_profiles_carry_their_platform_facts(name, cores, mhz, l2):
    # HARDWARE.md's platform facts per variant; everything else is inherited and says so in its source.
    hw = load_profile(name)
    assert (hw.ai_cores, hw.aiv_cores, hw.clock_mhz, hw.l2_bytes, hw.l2_cache_bytes) == (cores, 2 * cores, mhz, l2, l2)
    assert hw.cube_fp16_peak_tflops == pytest.approx(cores * 4096 * 2 * mhz * 1e6 / 1e12)
    atlas = load_profile("atlas-300t-a2")
    own = {"ai_cores", "aiv_per_core", "clock_mhz", "l2_bytes", "l2_cache_bytes", "hbm_efficiency",
           "l2_read_bytes_per_cycle", "gm_read_bytes_per_cycle", "hbm_bandwidth_gbps"}
    for f in _constant_fields():
        source = hw.sources[f.name]
        if f.name not in own and not source.startswith("derived:"):
            assert source.startswith("inherited from atlas-300t-a2"), (name, f.name)
            assert getattr(hw, f.name) == getattr(atlas, f.name), (name, f.name)
        assert not source.startswith("calibrated"), (name, f.name)  # nothing fitted on another chip's claim
    # the per-core rates of CANN's GEMM cost model for 192 MiB L2 parts (cache_tiling_soc_spec.h)
    assert (hw.l2_read_bytes_per_cycle, hw.gm_read_bytes_per_cycle) == (128.0, 37.0)
    assert "cache_tiling_soc_spec.h" in hw.sources["gm_read_bytes_per_cycle"]


def test_profile_is_frozen():
    hw = load_profile()
    with pytest.raises(dataclasses.FrozenInstanceError):
        hw.ai_cores = 4  # type: ignore[misc]


def _write_profile(tmp_path, drop=None, override=None):
    text = (load_profile.__globals__["_profiles_dir"]() / "ascend-910b4.toml").read_text()
    lines = []
    for line in text.splitlines():
        key = line.split(" = ", 1)[0]
        if key == drop:
            continue
        if override and key == override[0]:
            line = f"{key} = {{ value = {override[1]}, source = \"test\" }}"
        lines.append(line)
    path = tmp_path / "mine.toml"
    path.write_text("\n".join(lines))
    return path


def test_user_profile_by_path(tmp_path):
    hw = load_profile(str(_write_profile(tmp_path, override=("ai_cores", 8))))
    assert hw.ai_cores == 8


@pytest.mark.parametrize(
    "drop, override, message",
    [
        ("l2_bytes", None, "field 'l2_bytes' is missing"),
        (None, ("hbm_bandwidth_gbps", -5), "field 'hbm_bandwidth_gbps' must be non-negative"),
        (None, ("ai_cores", 0), "field 'ai_cores' must be positive"),
        (None, ("ai_cores", 2.5), "field 'ai_cores' must be an integer"),
        (None, ("hbm_efficiency", 1.5), "field 'hbm_efficiency' must be at most 1"),
        (None, ("clock_mhz", '"fast"'), "field 'clock_mhz' must be a number"),
    ],
)
def test_bad_user_profile_names_the_field(tmp_path, drop, override, message):
    with pytest.raises(HardwareError) as info:
        load_profile(str(_write_profile(tmp_path, drop, override)))
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_unknown_profile_lists_the_known_ones():
    with pytest.raises(HardwareError, match="ascend-910b4, atlas-300t-a2"):
        load_profile("no-such-chip")


def test_invalid_toml(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("ai_cores = = 3")
    with pytest.raises(HardwareError, match="not valid TOML"):
        load_profile(str(bad))
