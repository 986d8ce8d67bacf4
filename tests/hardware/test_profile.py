import dataclasses
import shutil
import tomllib

import pytest

from ascendbench.hardware import HardwareError, list_profiles, load_profile
from ascendbench.hardware import profile as profile_module
from ascendbench.hardware.profile import _constant_fields, _profiles_dir


def _shipped_copy(tmp_path):
    """A copy of the shipped profiles folder, to load with _profiles_dir pointed at it."""
    folder = tmp_path / "profiles"
    folder.mkdir()
    for name in list_profiles():
        shutil.copyfile(str(_profiles_dir() / f"{name}.toml"), folder / f"{name}.toml")
    return folder


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
           "gm_read_bytes_per_cycle", "nd2nz_unaligned_efficiency"}
    for f in _constant_fields():
        source = hw.sources[f.name]
        if f.name not in own:
            assert source == f"inherited from atlas-300t-a2: {atlas.sources[f.name]}", (name, f.name)
            assert getattr(hw, f.name) == getattr(atlas, f.name), (name, f.name)
            assert type(getattr(hw, f.name)) is type(getattr(atlas, f.name)), (name, f.name)
        assert not source.startswith("calibrated"), (name, f.name)  # nothing fitted on another chip's claim
    # the per-core rates of CANN's GEMM cost model for 192 MiB L2 parts (cache_tiling_soc_spec.h)
    assert (hw.l2_read_bytes_per_cycle, hw.gm_read_bytes_per_cycle) == (128.0, 37.0)
    assert "cache_tiling_soc_spec.h" in hw.sources["gm_read_bytes_per_cycle"]


# What each 910B variant's file sets itself: a platform fact, a measurement on it, a derivation.
_FILE_SETS = {
    "ascend-910b1": {"ai_cores", "aiv_per_core", "clock_mhz", "l2_bytes", "l2_cache_bytes",
                     "gm_read_bytes_per_cycle", "nd2nz_unaligned_efficiency"},
    "ascend-910b3": {"ai_cores", "aiv_per_core", "clock_mhz", "l2_bytes", "l2_cache_bytes",
                     "gm_read_bytes_per_cycle", "nd2nz_unaligned_efficiency"},
}
_FILE_SETS["ascend-910b2"] = _FILE_SETS["ascend-910b1"] | {"hbm_efficiency"}


@pytest.mark.parametrize("name", sorted(_FILE_SETS))
def test_910b_variant_files_hold_only_their_own_constants(name):
    data = tomllib.loads((_profiles_dir() / f"{name}.toml").read_text())
    assert data["inherits"] == "atlas-300t-a2"
    assert set(data) - {"inherits", "name", "description"} == _FILE_SETS[name]
    hw, atlas = load_profile(name), load_profile("atlas-300t-a2")
    for f in _constant_fields():
        if f.name in data:
            assert getattr(hw, f.name) == data[f.name]["value"]
            assert hw.sources[f.name] == data[f.name]["source"]
            assert not hw.sources[f.name].startswith("inherited"), (name, f.name)
        else:
            assert hw.sources[f.name] == "inherited from atlas-300t-a2: " + atlas.sources[f.name], f.name
            assert getattr(hw, f.name) == getattr(atlas, f.name), (name, f.name)
    # the result JSON documents every constant with its own source
    doc = hw.to_dict()["constants"]
    assert doc["l0a_bytes"] == {"value": 65536,
                                "source": "inherited from atlas-300t-a2: " + atlas.sources["l0a_bytes"]}


def test_a_change_in_the_parent_reaches_the_variant(tmp_path, monkeypatch):
    folder = _shipped_copy(tmp_path)
    atlas = folder / "atlas-300t-a2.toml"
    atlas.write_text(atlas.read_text().replace("l2_hit_latency_cycles = { value = 50.0",
                                               "l2_hit_latency_cycles = { value = 60.0"))
    monkeypatch.setattr(profile_module, "_profiles_dir", lambda: folder)
    variants = ("ascend-910b1", "ascend-910b2", "ascend-910b3")
    assert [load_profile(n).l2_hit_latency_cycles for n in variants] == [60.0] * 3
    assert load_profile("ascend-910b4").l2_hit_latency_cycles == 50.0


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


def _child(tmp_path, body, inherits='"atlas-300t-a2"'):
    path = tmp_path / "mine.toml"
    path.write_text(f'inherits = {inherits}\nname = "mine"\ndescription = "an Atlas with 8 cores"\n{body}\n')
    return str(path)


def test_user_profile_inherits_a_shipped_one(tmp_path):
    hw = load_profile(_child(tmp_path, 'ai_cores = { value = 8, source = "my board" }\nclock_mhz = 1500'))
    atlas = load_profile("atlas-300t-a2")
    assert (hw.name, hw.ai_cores, hw.clock_mhz, hw.sources["ai_cores"]) == ("mine", 8, 1500.0, "my board")
    assert hw.constants() == atlas.replace(ai_cores=8, clock_mhz=1500.0).constants()
    assert hw.sources["ub_bytes"] == f"inherited from atlas-300t-a2: {atlas.sources['ub_bytes']}"
    # a user file may inherit a profile that itself inherits: the chain shows in the source
    hw = load_profile(_child(tmp_path, "", inherits='"ascend-910b2"'))
    assert hw.ai_cores == 24 and hw.sources["ai_cores"].startswith("inherited from ascend-910b2: HARDWARE.md")
    assert hw.sources["ub_bytes"] == ("inherited from ascend-910b2: inherited from atlas-300t-a2: "
                                      + atlas.sources["ub_bytes"])


@pytest.mark.parametrize("inherits, body, message", [
    ('"no-such-chip"', "", "inherits 'no-such-chip', which is not a shipped profile; use one of ascend-910b1, "),
    ('"atlas-300t-a2.toml"', "", "inherits 'atlas-300t-a2.toml', which is not a shipped profile"),
    ("3", "", "inherits 3, which is not a shipped profile"),
    ('"atlas-300t-a2"', "ai_core = 8", "unknown key 'ai_core' (did you mean 'ai_cores'?)"),
    ('"atlas-300t-a2"', "colour = 8", "unknown key 'colour' (not a constant of a profile)"),
    ('"atlas-300t-a2"', "ai_cores = 0", "field 'ai_cores' must be positive, got 0"),
])
def test_bad_inherits_names_the_file(tmp_path, inherits, body, message):
    path = _child(tmp_path, body, inherits)
    with pytest.raises(HardwareError) as info:
        load_profile(path)
    assert str(info.value).startswith(f"hardware profile {path}: {message}")
    assert "\n" not in str(info.value)


def test_an_unknown_key_is_refused_without_inherits_too(tmp_path):
    path = _write_profile(tmp_path)
    path.write_text(path.read_text().replace("hbm_efficiency = ", "hbm_eficiency = "))
    with pytest.raises(HardwareError) as info:
        load_profile(str(path))
    assert str(info.value) == (f"hardware profile {path}: unknown key 'hbm_eficiency' "
                               "(did you mean 'hbm_efficiency'?)")


def test_a_cycle_of_inherits_is_refused(tmp_path, monkeypatch):
    folder = _shipped_copy(tmp_path)
    atlas = folder / "atlas-300t-a2.toml"
    atlas.write_text('inherits = "ascend-910b2"\n' + atlas.read_text())
    monkeypatch.setattr(profile_module, "_profiles_dir", lambda: folder)
    with pytest.raises(HardwareError) as info:
        load_profile("ascend-910b2")
    assert str(info.value) == ("hardware profile atlas-300t-a2.toml: inherits 'ascend-910b2', a cycle: "
                               "ascend-910b2 -> atlas-300t-a2 -> ascend-910b2")
    (folder / "self.toml").write_text('inherits = "self"\nname = "self"\ndescription = "d"\n')
    with pytest.raises(HardwareError) as info:
        load_profile("self")
    assert str(info.value) == "hardware profile self.toml: inherits 'self', a cycle: self -> self"


def test_a_calibrated_parent_constant_is_not_inherited(tmp_path, monkeypatch):
    folder = _shipped_copy(tmp_path)
    atlas = folder / "atlas-300t-a2.toml"
    atlas.write_text(atlas.read_text().replace(
        'l2_hit_latency_cycles = { value = 50.0, source = "',
        'l2_hit_latency_cycles = { value = 55.0, source = "calibrated: G-8 (test); '))
    monkeypatch.setattr(profile_module, "_profiles_dir", lambda: folder)
    assert load_profile("atlas-300t-a2").l2_hit_latency_cycles == 55.0
    for name in ("ascend-910b1", "ascend-910b2", "ascend-910b3"):
        with pytest.raises(HardwareError) as info:
            load_profile(name)
        assert str(info.value) == (f"hardware profile {name}.toml: field 'l2_hit_latency_cycles' is calibrated in "
                                   "atlas-300t-a2 (fitted on that chip's claims) and is not inherited; set it in "
                                   "this file")
    # a user file inheriting the Atlas is refused the same way, and loads once it sets the constant itself
    with pytest.raises(HardwareError, match="field 'l2_hit_latency_cycles' is calibrated in atlas-300t-a2"):
        load_profile(_child(tmp_path, ""))
    hw = load_profile(_child(tmp_path, 'l2_hit_latency_cycles = { value = 40.0, source = "my measurement" }'))
    assert (hw.l2_hit_latency_cycles, hw.sources["l2_hit_latency_cycles"]) == (40.0, "my measurement")
