"""Search spaces as data: the shipped files, and clear errors for malformed ones."""

import optuna
import pytest

from ascendbench.tuning.space import SearchSpace, SpaceError, load_space, space_path


def test_shipped_spaces_load_with_the_issue_ranges():
    hgemm = load_space(space_path("hgemm"))
    assert hgemm.kernel == "hgemm"
    assert {16, 32, 64, 128, 256} <= set(hgemm.parameters["m0"].values())  # Table 1
    assert hgemm.parameters["k0"].values() == [8, 16, 32, 64, 128, 256, 512, 1024]  # Table 2 plus 8 ... 64
    assert hgemm.parameters["split_k"].values() == [1, 2, 4, 8]
    assert hgemm.grid_size == 8 * 8 * 8 * 4 * 2 * 2 * 2
    assert hgemm.problem_sets["default"].workloads == ["fig6", "llama2-qk"]
    scan = load_space(space_path("scan"))
    assert scan.parameters["chunk"].values()[0] == "off" and scan.parameters["chunk"].values()[1] == 16384
    assert scan.parameters["algorithm"].values() == ["mcscan", "mcscan-ul1"]
    assert scan.problem_sets["default"].n == [100_000_000]


def test_suggest_maps_exponents_and_indices_back_to_values():
    space = load_space(space_path("hgemm"))
    # m0, n0: ordered choices [16, 32, 48, 64, 96, 128, 192, 256] searched by index; k0, split_k: log2
    params = {"m0_index": 5, "n0_index": 3, "log2_k0": 7, "log2_split_k": 1, "shuffle_k": True,
              "padding": False, "double_buffer": True}
    config = {"m0": 128, "n0": 64, "k0": 128, "split_k": 2, "shuffle_k": True, "padding": False,
              "double_buffer": True}
    assert space.suggest(optuna.trial.FixedTrial(params)) == config
    assert space.to_optuna(config) == params  # the inverse, used to enqueue the heuristic as trial 0
    assert space.to_optuna({**config, "m0": 80}) is None  # not a point of the grid
    assert space.optuna_grid()["log2_k0"] == [3, 4, 5, 6, 7, 8, 9, 10]
    assert space.optuna_grid()["m0_index"] == list(range(8))


def test_ordered_choices_must_be_increasing_integers(tmp_path):
    path = tmp_path / "s.toml"
    for choices in ("[64, 32]", '["a", "b"]', "[16, 16]"):
        path.write_text(f'kernel = "hgemm"\n[parameters.m0]\ntype = "ordered"\nchoices = {choices}\n'
                        'default = "heuristic"\n')
        with pytest.raises(SpaceError, match="parameters.m0"):
            load_space(path)


def test_grid_is_the_cartesian_product(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('kernel = "scan"\n[parameters.s]\ntype = "categorical"\nchoices = [64, 128]\ndefault = 128\n'
                    '[parameters.chunk]\ntype = "log-int"\nlow = 1024\nhigh = 4096\nspecial = ["off"]\n'
                    'default = "off"\n')
    space = load_space(path)
    assert space.grid() == [{"s": s, "chunk": c} for s in (64, 128) for c in ("off", 1024, 2048, 4096)]
    assert space.grid_size == 8
    assert isinstance(space, SearchSpace) and space.defaults() == {"s": 128, "chunk": "off"}


@pytest.mark.parametrize("body, needle", [
    ('kernel = "x"\n', "parameters: Field required"),
    ('kernel = "x"\n[parameters.a]\ntype = "float"\ndefault = 1\n', "parameters.a.type"),
    ('kernel = "x"\n[parameters.a]\ntype = "categorical"\ndefault = 1\n', "non-empty `choices`"),
    ('kernel = "x"\n[parameters.a]\ntype = "categorical"\nchoices = [1, 1]\ndefault = 1\n', "repeated"),
    ('kernel = "x"\n[parameters.a]\ntype = "int"\nlow = 5\nhigh = 2\ndefault = 3\n', "low <= high"),
    ('kernel = "x"\n[parameters.a]\ntype = "log-int"\nlow = 3\nhigh = 64\ndefault = 8\n', "powers of 2"),
    ('kernel = "x"\n[parameters.a]\ntype = "int"\nlow = 1\nhigh = 4\ndefault = 9\n', "`default` 9"),
    ('kernel = "x"\n[parameters.a]\ntype = "bool"\ndefault = true\nspecial = ["off"]\n', "`special`"),
    ('kernel = "x"\n[parameters.a]\ntype = "bool"\ndefault = true\ncolour = 1\n', "parameters.a.colour"),
    ('kernel = "x"\n[parameters.a]\ntype = "int"\nlow = "1"\nhigh = 4\ndefault = 1\n', "parameters.a.low"),
    ('kernel = "x"\n[parameters]\n', "at least one parameter"),
    ('kernel = "x"\nparameters = [\n', "not valid TOML"),
])
def test_malformed_space_names_file_and_key(tmp_path, body, needle):
    path = tmp_path / "bad.toml"
    path.write_text(body)
    with pytest.raises(SpaceError) as err:
        load_space(path)
    assert str(path) in str(err.value) and needle in str(err.value), str(err.value)


def test_missing_space_file(tmp_path):
    with pytest.raises(SpaceError, match="no such search space file"):
        load_space(tmp_path / "none.toml")


def test_block_counts_end_at_the_profiles_ai_cores(tmp_path):
    from ascendbench.hardware import load_profile

    scan = load_space(space_path("scan"))
    assert scan.parameters["blocks"].values() == list(range(1, 25))  # every shipped profile's cores
    for name in ("ascend-910b4", "ascend-910b1"):
        hw = load_profile(name)
        on = scan.on(hw)
        assert on.parameters["blocks"].values() == list(range(1, hw.ai_cores + 1))
        assert on.grid_size == scan.grid_size // 24 * hw.ai_cores
        assert on.parameters["chunk"] is scan.parameters["chunk"]  # the others untouched
    assert scan.on(load_profile("ascend-910b4")).fingerprint() != scan.fingerprint()
    hgemm = load_space(space_path("hgemm"))  # no bounded range: the same space, the same fingerprint
    assert hgemm.on(load_profile("ascend-910b4")).fingerprint() == hgemm.fingerprint()
    path = tmp_path / "s.toml"
    path.write_text('kernel = "scan"\n[parameters.s]\ntype = "log-int"\nlow = 16\nhigh = 128\n'
                    'bounded_by = "ai_cores"\ndefault = 128\n')
    with pytest.raises(SpaceError, match="bounded_by"):
        load_space(path)


def test_every_tunable_kernels_space_ships_in_the_top_level_tuning_spaces_package():
    """The spaces live in tuning_spaces/ (a package of data read with importlib.resources, so that a wheel
    holds them): one file per tunable kernel, each loading as that kernel's space, and nothing else but README."""
    import tomllib
    from importlib import resources
    from pathlib import Path

    from ascendbench.kernels.registry import tunables

    folder = resources.files("tuning_spaces")
    files = {p.name for p in folder.iterdir() if p.is_file()}
    names = set(tunables())
    assert files == {f"{n}.toml" for n in names} | {"README.md", "__init__.py"}
    for name in names:
        assert load_space(Path(str(folder / f"{name}.toml"))).kernel == name
        assert space_path(name) == Path(str(folder / f"{name}.toml"))
    pyproject = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    pyproject = pyproject["tool"]["setuptools"]
    assert "tuning_spaces" in pyproject["packages"]["find"]["include"]
    assert pyproject["package-data"]["tuning_spaces"] == ["*.toml", "README.md"]
