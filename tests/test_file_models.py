"""Hardware profiles and workload files are checked by pydantic models (issue 16 item 12): a bad field gets one
line naming the file, the field and what it allows, as the hand-written checks said before."""

import pytest

from ascendbench.hardware import HardwareError, load_profile
from ascendbench.workloads import WorkloadError, load_workload


def _profile(tmp_path, key, value):
    text = (load_profile.__globals__["_profiles_dir"]() / "ascend-910b4.toml").read_text()
    lines = [f"{key} = {value}" if line.split(" = ", 1)[0] == key else line for line in text.splitlines()]
    path = tmp_path / "mine.toml"
    path.write_text("\n".join(lines))
    return str(path)


@pytest.mark.parametrize("key, value, message", [
    ("ai_cores", "true", "field 'ai_cores' must be a number, got True"),
    ("ai_cores", '"20"', "field 'ai_cores' must be a number, got '20'"),
    ("ai_cores", "2000", "field 'ai_cores' must be at most 1024, got 2000"),
    ("ai_cores", '{ value = 2.5, source = "x" }', "field 'ai_cores' must be an integer, got 2.5"),
    ("clock_mhz", "inf", "field 'clock_mhz' must be finite"),
    ("clock_mhz", "[1500]", "field 'clock_mhz' must be a number, got [1500]"),
    ("l2_bytes", "-1", "field 'l2_bytes' must be non-negative, got -1"),
    ("ub_bytes", "0", "field 'ub_bytes' must be positive, got 0"),
    ("unaligned_efficiency", "1.25", "field 'unaligned_efficiency' must be at most 1, got 1.25"),
    ("kernel_launch_us", "2e15", "field 'kernel_launch_us' must be at most 1e+15, got 2000000000000000.0"),
    ("name", "3", "field 'name' is missing or not a string"),
    ("l0c_bytes", '{ source = "x" }', "field 'l0c_bytes' must be a number, got None"),
])
def test_a_bad_profile_field(tmp_path, key, value, message):
    path = _profile(tmp_path, key, value)
    with pytest.raises(HardwareError) as info:
        load_profile(path)
    assert str(info.value) == f"hardware profile {path}: {message}"


def test_profile_values_keep_their_types_and_sources(tmp_path):
    hw = load_profile(_profile(tmp_path, "ai_cores", '{ value = 8.0, source = "mine" }'))
    assert hw.ai_cores == 8 and type(hw.ai_cores) is int and hw.sources["ai_cores"] == "mine"
    assert type(hw.clock_mhz) is float and hw == load_profile("ascend-910b4").replace(ai_cores=8)
    plain = load_profile(_profile(tmp_path, "ai_cores", "12"))
    assert plain.ai_cores == 12 and plain.sources["ai_cores"] == ""


HEAD = '[a]\ndescription = "d"\nsource = "s"\n'


@pytest.mark.parametrize("body, message", [
    ("shapes = [[1, 2, 3], [1, 0, 3]]", "[a].shapes[1][1]: expected an integer >= 1, got 0"),
    ("shapes = [[1, 2]]", "[a].shapes[0]: expected [M, N, K], got [1, 2]"),
    ("shapes = []", "[a].shapes: expected a non-empty list of [M, N, K], got []"),
    ("batch = true\nshapes = [[1, 2, 3]]", "[a].batch: expected an integer >= 1, got True"),
    ("batch = 2.0\nshapes = [[1, 2, 3]]", "[a].batch: expected an integer >= 1, got 2.0"),
    ("shapes = [[1, 2, 3]]\ngrid = { k = [1], m_equals_n = [2] }",
     "[a]: needs exactly one of shapes, grid, random, got shapes, grid"),
    ("sizes = 1", "[a].sizes: unknown key; expected description, source, batch and one of shapes, grid, random"),
    ("grid = { k = [1], m_equals_n = [2], m = [3] }",
     "[a].grid.m_equals_n: give either m_equals_n or m and n, not both"),
    ("grid = { m = [1], n = [1] }", "[a].grid.k: expected a non-empty list of integers >= 1, got None"),
    ("grid = { m = [1, 0], n = [1], k = [2] }", "[a].grid.m[1]: expected an integer >= 1, got 0"),
    ("grid = { m = [1], n = [1], k = [1], z = 1 }", "[a].grid.z: unknown key; expected m, n, k or m_equals_n, k"),
    ("grid = 3", "[a].grid: expected a table with m, n, k or m_equals_n, k, got 3"),
    ("random = { seed = -1, count = 1, low = 1, high = 2 }", "[a].random.seed: expected an integer >= 0, got -1"),
    ("random = { seed = 0, count = 5, low = 10, high = 5 }", "[a].random.high: must be at least low (10), got 5"),
    ("random = { seed = 0, low = 1, high = 5 }", "[a].random.count: expected an integer >= 1, got None"),
])
def test_a_bad_workload_field(tmp_path, body, message):
    path = tmp_path / "w.toml"
    path.write_text(HEAD + body + "\n")
    with pytest.raises(WorkloadError) as info:
        load_workload("a", path)
    assert str(info.value) == f"{path}: {message}"


@pytest.mark.parametrize("text, message", [
    ('[a]\nsource = "s"\nshapes = [[1, 2, 3]]\n', "[a].description: expected a non-empty string, got None"),
    ('[a]\ndescription = " "\nsource = "s"\nshapes = [[1, 2, 3]]\n',
     "[a].description: expected a non-empty string, got ' '"),
    ('[a]\ndescription = "d"\nsource = 5\nshapes = [[1, 2, 3]]\n', "[a].source: expected a non-empty string, got 5"),
])
def test_workload_texts(tmp_path, text, message):
    path = tmp_path / "w.toml"
    path.write_text(text)
    with pytest.raises(WorkloadError) as info:
        load_workload("a", path)
    assert str(info.value) == f"{path}: {message}"


def test_grid_forms_and_random_shapes(tmp_path):
    path = tmp_path / "w.toml"
    path.write_text(HEAD + "grid = { m_equals_n = [1, 2], k = [3] }\n"
                    '[b]\ndescription = "d"\nsource = "s"\nbatch = 2\n'
                    "random = { seed = 7, count = 2, low = 5, high = 5 }\n")
    assert load_workload("a", path).shapes == ((1, 1, 3, 1), (2, 2, 3, 1))
    assert load_workload("b", path).shapes == ((5, 5, 5, 2), (5, 5, 5, 2))
