"""Named HGEMM workloads (ascendbench/workloads/hgemm.toml): counts, sources, determinism and file errors."""

import numpy as np
import pytest

from ascendbench.workloads import Workload, list_workloads, load_workload

NAMES = ["llama2-qk", "fig6", "opt-ffn", "hpl-mxp", "random-5000"]


def test_list_workloads():
    assert list_workloads() == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_every_workload_loads(name):
    w = load_workload(name)
    assert isinstance(w, Workload) and w.name == name and w.description and "HGEMM paper §" in w.source
    assert w.shapes and all(len(s) == 4 and all(type(v) is int and v >= 1 for v in s) for s in w.shapes)
    assert all(s[3] == 1 for s in w.shapes)  # every shipped workload has batch 1


def test_llama2_qk():
    assert load_workload("llama2-qk").shapes == ((2048, 128, 2048, 1),)


def test_fig6_equal_flops():
    w = load_workload("fig6")
    assert len(w.shapes) == 3 and "our choice" in w.source
    assert {2 * m * n * k for m, n, k, _ in w.shapes} == {2 * 2048**3}
    (m1, n1, k1, _), (m2, n2, k2, _), (m3, n3, k3, _) = w.shapes
    assert m1 == n1 == k1 and m2 > max(n2, k2) and k3 > max(m3, n3)  # regular, M-dominant, K-dominant


def test_opt_ffn():
    w = load_workload("opt-ffn")
    assert [s[0] for s in w.shapes] == [8, 16, 32, 64, 128, 256, 512]
    assert {(n, k) for _, n, k, _ in w.shapes} == {(28672, 7168)}


def test_hpl_mxp():
    w = load_workload("hpl-mxp")
    assert len(w.shapes) == 42 and "our sampling" in w.source
    assert all(m == n and m % 128 == 0 and k % 128 == 0 and 128 <= m <= 25600 and 128 <= k <= 768
               for m, n, k, _ in w.shapes)
    assert len(set(w.shapes)) == 42


def test_random_5000():
    w = load_workload("random-5000")
    assert len(w.shapes) == 5000
    values = [v for s in w.shapes for v in s[:3]]
    assert min(values) >= 256 and max(values) <= 10000
    assert min(values) < 300 and max(values) > 9950  # the whole range is used
    assert load_workload("random-5000").shapes == w.shapes  # deterministic across calls
    expected = np.random.default_rng(0).integers(256, 10001, size=(5000, 3))
    assert np.array_equal(np.array([s[:3] for s in w.shapes]), expected)


def test_unknown_workload():
    with pytest.raises(ValueError, match=r"^--workload: unknown workload 'x'; choose from llama2-qk, fig6, "):
        load_workload("x")


def write(tmp_path, text):
    path = tmp_path / "w.toml"
    path.write_text(text)
    return path


def test_batch_and_explicit_shapes_from_a_users_file(tmp_path):
    path = write(tmp_path, '[a]\ndescription = "d"\nsource = "s"\nbatch = 8\nshapes = [[256, 4096, 512]]\n'
                           '[b]\ndescription = "d"\nsource = "s"\n'
                           '[b.grid]\nm = [1, 2]\nn = [3]\nk = [4, 5]\n')
    assert list_workloads(path) == ["a", "b"]
    assert load_workload("a", path).shapes == ((256, 4096, 512, 8),)
    assert load_workload("b", path).shapes == ((1, 3, 4, 1), (1, 3, 5, 1), (2, 3, 4, 1), (2, 3, 5, 1))


@pytest.mark.parametrize("body, key", [
    ('source = "s"\nshapes = [[1, 2, 3]]', "[a].description"),
    ('description = "d"\nsource = "s"\nshapes = [[1, 2, 3], [1, 0, 3]]', "[a].shapes[1]"),
    ('description = "d"\nsource = "s"\nshapes = [[1, 2]]', "[a].shapes[0]"),
    ('description = "d"\nsource = "s"\nbatch = 0\nshapes = [[1, 2, 3]]', "[a].batch"),
    ('description = "d"\nsource = "s"', "[a]: needs exactly one of shapes, grid, random"),
    ('description = "d"\nsource = "s"\nsizes = [[1, 2, 3]]', "[a].sizes: unknown key"),
    ('description = "d"\nsource = "s"\n[a.grid]\nm = [1]\nk = [1]', "[a].grid.n"),
    ('description = "d"\nsource = "s"\n[a.random]\nseed = 0\ncount = 5\nlow = 10\nhigh = 5',
     "[a].random.high"),
    ('description = "d"\nsource = "s"\n[a.random]\nseed = 0\nlow = 1\nhigh = 5', "[a].random.count"),
])
def test_malformed_file_names_the_key(tmp_path, body, key):
    path = write(tmp_path, "[a]\n" + body + "\n")
    with pytest.raises(ValueError) as info:
        load_workload("a", path)
    assert f"{path}: {key}" in str(info.value)


def test_invalid_toml(tmp_path):
    path = write(tmp_path, "[a\n")
    with pytest.raises(ValueError, match="is not valid TOML"):
        load_workload("a", path)
