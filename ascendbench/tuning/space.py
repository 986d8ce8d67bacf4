"""Search spaces as data: tuning_spaces/<kernel>.toml, validated, turned into Optuna suggestions and grids.

A space file has a `kernel` name, a `description`, a `[parameters.NAME]` table per tuned parameter and named
problem sets under `[problems.NAME]` (HGEMM: `shapes` and `workloads`; scans: `n`, `dtype`, `exclusive`; the
registry's other kernels: `params`, a list of whole problems, each the kernel's parameters the space does not
tune). Parameter types:

- "categorical": `choices` (ints, floats, strings or booleans), unordered;
- "ordered": `choices` (ints in increasing order, e.g. tile sizes that are not a power-of-2 range); Optuna sees
  the integer index into them (`<name>_index`), so that samplers use their order;
- "bool": the choices false and true;
- "int": `low`, `high`, optional `step` (default 1), sampled uniformly; with `bounded_by = "ai_cores"` the
  range ends, on a given hardware profile, at min(high, the profile's AI cores) (a block count: the kernels'
  SyncAll needs every block resident), so that no trial is spent on a point the chip cannot run;
- "log-int": `low`, `high` (powers of 2); the powers of 2 in range, searched as the exponent (Optuna sees the
  integer parameter `log2_<name>`).
  With `special = ["off", ...]` the parameter takes those values too, and it is searched as a categorical over
  the specials and the grid.

Every parameter has a `default`: a value of its domain, or "heuristic" where the paper's rule (which depends on
the problem) gives it; and a `source` saying where its range comes from. Whether a point can run (buffer
capacities, s fitting L0) is decided by the kernel, never by the file.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

__all__ = ["SPACES_DIR", "Parameter", "SearchSpace", "SpaceError", "load_space", "space_path"]

SPACES_DIR = Path(str(resources.files("tuning_spaces")))  # the top-level tuning_spaces/ folder, in wheels too

Scalar = int | float | str | bool


class SpaceError(ValueError):
    """A search space file that is missing or malformed; the message names the file, the key and what is allowed."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class Parameter(_Model):
    """One tuned parameter (see the module docstring for the types)."""

    type: Literal["categorical", "ordered", "bool", "int", "log-int"]
    choices: list[Scalar] | None = None
    low: int | None = None
    high: int | None = None
    step: Annotated[int, Field(ge=1)] = 1
    special: list[str] = []
    bounded_by: Literal["ai_cores"] | None = None
    default: Scalar
    source: str = ""

    @model_validator(mode="after")
    def _check(self) -> Parameter:
        if self.type in ("categorical", "ordered"):
            if not self.choices:
                raise ValueError(f"a {self.type} parameter needs a non-empty `choices` list")
            if len(set(map(repr, self.choices))) != len(self.choices):
                raise ValueError("`choices` has repeated values")
            if self.type == "ordered" and (
                    not all(isinstance(c, int) and not isinstance(c, bool) for c in self.choices)
                    or self.choices != sorted(self.choices)):
                raise ValueError("an ordered parameter needs integer `choices` in increasing order")
        elif self.choices is not None:
            raise ValueError(f"`choices` belongs to categorical and ordered parameters, not {self.type!r}")
        if self.type in ("int", "log-int"):
            if self.low is None or self.high is None:
                raise ValueError(f"an {self.type} parameter needs `low` and `high`")
            if not 1 <= self.low <= self.high:
                raise ValueError(f"needs 1 <= low <= high, got low={self.low}, high={self.high}")
            if self.type == "log-int" and (self.low & (self.low - 1) or self.high & (self.high - 1)):
                raise ValueError(f"log-int `low` and `high` must be powers of 2, got {self.low} and {self.high}")
        elif self.low is not None or self.high is not None:
            raise ValueError(f"`low`/`high` belong to int and log-int parameters, not {self.type!r}")
        if self.special and self.type != "log-int":
            raise ValueError("`special` values belong to log-int parameters")
        if self.bounded_by and self.type != "int":
            raise ValueError("`bounded_by` belongs to int parameters")
        if self.default != "heuristic" and self.default not in self.values():
            raise ValueError(f"`default` {self.default!r} is not a value of the parameter (or \"heuristic\")")
        return self

    def count(self) -> int:
        """Number of grid values, without listing them (an int range may be huge)."""
        if self.type == "int":
            return (self.high - self.low) // self.step + 1
        if self.type == "log-int":
            return len(self.special) + self.high.bit_length() - self.low.bit_length() + 1
        return len(self.values())

    def values(self) -> list[Scalar]:
        """Every value of the parameter's grid, in order (specials first)."""
        if self.type in ("categorical", "ordered"):
            return list(self.choices or [])
        if self.type == "bool":
            return [False, True]
        if self.type == "int":
            return list(range(self.low, self.high + 1, self.step))
        powers = [1 << e for e in range(self.low.bit_length() - 1, self.high.bit_length())]
        return [*self.special, *powers]

    def optuna_name(self, name: str) -> str:
        """The name Optuna sees: a log-int without specials is searched as its base-2 exponent `log2_<name>`,
        an ordered parameter as the index into its choices `<name>_index` (integers, whose order TPE and GP
        model)."""
        if self.type == "log-int" and not self.special:
            return f"log2_{name}"
        return f"{name}_index" if self.type == "ordered" else name

    def optuna_values(self) -> list[Scalar]:
        if self.type == "log-int" and not self.special:
            return [v.bit_length() - 1 for v in self.values()]
        if self.type == "ordered":
            return list(range(len(self.values())))
        return self.values()

    def to_optuna(self, value: Scalar) -> Scalar | None:
        """The value Optuna sees for `value` (None: not a value of the grid)."""
        if self.type == "int":  # a range may be huge: no list
            ok = (isinstance(value, int) and not isinstance(value, bool) and self.low <= value <= self.high
                  and (value - self.low) % self.step == 0)
            return value if ok else None
        values = self.values()
        matches = [i for i, v in enumerate(values) if v == value and type(v) is type(value)]
        return self.optuna_values()[matches[0]] if matches else None

    def from_optuna(self, value: Scalar) -> Scalar:
        """The grid value for the value Optuna sees (the inverse of to_optuna; Optuna's own ones only)."""
        if self.type == "int":
            return value
        return self.values()[self.optuna_values().index(value)]

    def suggest(self, trial: Any, name: str) -> Scalar:
        """The value an Optuna trial suggests for this parameter."""
        if self.type == "int":
            return trial.suggest_int(name, self.low, self.high, step=self.step)
        if self.type == "ordered" or (self.type == "log-int" and not self.special):
            index = self.optuna_values()
            chosen = trial.suggest_int(self.optuna_name(name), index[0], index[-1])
            return self.values()[index.index(chosen)]
        return trial.suggest_categorical(name, self.values())


class _Problems(_Model):
    description: str = ""
    workloads: list[str] = []
    shapes: list[list[Annotated[int, Field(ge=1, le=2**40)]]] = []
    n: list[Annotated[int, Field(ge=1, le=2**60)]] = []
    dtype: Literal["fp16", "int8"] = "fp16"
    exclusive: bool = False
    params: list[dict[str, Scalar]] = []  # whole problems of a registry kernel (its parameters but the tuned ones)


class _SpaceFile(_Model):
    kernel: str
    description: str = ""
    parameters: dict[str, Parameter]
    problems: dict[str, _Problems] = {}


@dataclass(frozen=True)
class SearchSpace:
    """A validated search space. `path`: the file it came from; `parameters` in the file's order."""

    kernel: str
    description: str
    path: Path
    parameters: dict[str, Parameter]
    problem_sets: dict[str, _Problems]

    def on(self, hw: Any) -> SearchSpace:
        """The space as searched on hardware profile `hw`: every `bounded_by = "ai_cores"` range ends at
        min(high, hw.ai_cores). The fingerprint follows (a study is made on one profile)."""
        params = {name: p.model_copy(update={"high": max(p.low, min(p.high, hw.ai_cores))})
                  if p.bounded_by == "ai_cores" else p for name, p in self.parameters.items()}
        return SearchSpace(self.kernel, self.description, self.path, params, self.problem_sets)

    def suggest(self, trial: Any) -> dict[str, Scalar]:
        """One configuration from an Optuna trial (every parameter suggested, in file order)."""
        return {name: p.suggest(trial, name) for name, p in self.parameters.items()}

    def grid(self) -> list[dict[str, Scalar]]:
        """Every point of the grid (cartesian product of the parameters' grids), file order."""
        names = list(self.parameters)
        return [dict(zip(names, combo)) for combo in itertools.product(*(p.values() for p in self.parameters.values()))]

    @property
    def grid_size(self) -> int:
        size = 1
        for p in self.parameters.values():
            size *= p.count()
        return size

    def to_optuna(self, config: dict[str, Any]) -> dict[str, Scalar] | None:
        """A configuration as the parameters Optuna sees (for enqueue_trial); None when a value is not on the
        grid (e.g. a heuristic tile size the space leaves out)."""
        params = {}
        for name, p in self.parameters.items():
            value = p.to_optuna(config.get(name))
            if value is None:
                return None
            params[p.optuna_name(name)] = value
        return params

    def from_optuna(self, params: Mapping[str, Scalar]) -> dict[str, Scalar]:
        """The configuration for the parameters Optuna sees (a trial's params; the inverse of to_optuna). A
        parameter with one value may be missing (Optuna's samplers leave it out of their search space).
        Raises KeyError or ValueError for parameters that are not Optuna's view of this space."""
        return {name: p.values()[0] if p.optuna_name(name) not in params and p.count() == 1
                else p.from_optuna(params[p.optuna_name(name)]) for name, p in self.parameters.items()}

    def optuna_grid(self) -> dict[str, list[Scalar]]:
        """The grid as Optuna's GridSampler takes it."""
        return {p.optuna_name(name): p.optuna_values() for name, p in self.parameters.items()}

    def check(self, allowed: dict[str, Any]) -> None:
        """Check the space against what its kernel takes: `allowed` maps each parameter the kernel needs to a
        test of one value. Raises SpaceError naming the file and key (a missing or unknown parameter, or a
        value the kernel does not take; int ranges are checked at their ends)."""
        for name in allowed:
            if name not in self.parameters:
                raise SpaceError(f"{self.path}: parameters.{name}: missing; {self.kernel} needs "
                                 f"{', '.join(allowed)}")
        for name, p in self.parameters.items():
            if name not in allowed:
                raise SpaceError(f"{self.path}: parameters.{name}: not a parameter of {self.kernel}; it has "
                                 f"{', '.join(allowed)}")
            values = [p.low, p.high] if p.type == "int" else p.values()
            if p.default != "heuristic":
                values.append(p.default)
            for value in values:
                if not allowed[name](value):
                    raise SpaceError(f"{self.path}: parameters.{name}: {value!r} is not a value {self.kernel} "
                                     "takes")

    def fingerprint(self) -> str:
        """SHA-256 (16 hex digits) of the parameters' definitions: a study is only resumed on the same space."""
        doc = {name: p.model_dump(exclude={"source", "default"} | (set() if p.bounded_by else {"bounded_by"}))
               for name, p in self.parameters.items()}  # a key left unset keeps older studies' fingerprints
        return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:16]

    def defaults(self) -> dict[str, Scalar]:
        return {name: p.default for name, p in self.parameters.items()}


def space_path(kernel: str) -> Path:
    return SPACES_DIR / f"{kernel}.toml"


def load_space(path: Path | str) -> SearchSpace:
    """Read and validate a search space file.

    Raises:
        SpaceError: the file is missing or unreadable, not TOML, or a key is missing, unknown or out of range
            (the message names the file, the key and what is allowed).
    """
    path = Path(path)
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SpaceError(f"{path}: no such search space file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SpaceError(f"{path}: cannot read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise SpaceError(f"{path}: not valid TOML: {exc}") from None
    try:
        parsed = _SpaceFile.model_validate(doc)
    except ValidationError as exc:
        err = exc.errors()[0]
        key = ".".join(str(part) for part in err["loc"]) or "(top level)"
        message = err["msg"].removeprefix("Value error, ")
        raise SpaceError(f"{path}: {key}: {message}") from None
    if not parsed.parameters:
        raise SpaceError(f"{path}: parameters: at least one parameter is needed")
    return SearchSpace(parsed.kernel, parsed.description, path, dict(parsed.parameters), dict(parsed.problems))
