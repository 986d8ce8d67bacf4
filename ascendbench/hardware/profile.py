"""Hardware profiles: every constant of the simulated NPU, loaded from TOML, each with its source."""

from __future__ import annotations

import dataclasses
import difflib
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Annotated, Any

__all__ = ["DEFAULT_SCAN_HARDWARE", "HardwareError", "HardwareProfile", "list_profiles", "load_profile"]

DEFAULT_SCAN_HARDWARE = "ascend-910b4"


class HardwareError(ValueError):
    """A hardware profile could not be found or is malformed (message names the file and field)."""


@dataclass(frozen=True)
class HardwareProfile:
    """Constants of one simulated Ascend chip. Sizes in bytes, rates in bytes per cycle of one core unless
    the name says GB/s (1e9 bytes/s), latencies in cycles of the AI-core clock.

    `sources` maps each field name to where its value comes from (paper, public spec, "calibrated: ..." for
    values fitted by benchmarks/calibrate.py on the papers' calibration claims, "derived: ..." for values
    converted from a public measurement by a script (benchmarks/derive_nd2nz.py), "estimate: ..." for
    documented guesses); a constant a profile takes from the one it inherits has the source "inherited from
    NAME: <NAME's source>".
    """

    name: str
    description: str
    ai_cores: int
    aiv_per_core: int
    clock_mhz: float
    l0a_bytes: int
    l0b_bytes: int
    l0c_bytes: int
    l1_bytes: int
    ub_bytes: int
    l2_bytes: int  # what tiling code is told (the platform file's l2_size): chunk sizes, fits
    l2_cache_bytes: int  # what the cache physically holds: hits, evictions, the flushed start state
    hbm_bandwidth_gbps: float
    hbm_efficiency: float
    l2_bandwidth_gbps: float
    gm_read_bytes_per_cycle: float
    l2_read_bytes_per_cycle: float
    l2_write_bytes_per_cycle: float
    l1_to_l0_bytes_per_cycle: float
    fixpipe_to_l1_bytes_per_cycle: float
    gm_read_latency_cycles: float
    l2_hit_latency_cycles: float
    gm_write_latency_cycles: float
    gm_alignment_bytes: int
    unaligned_efficiency: float
    nd2nz_alignment_bytes: int
    nd2nz_unaligned_efficiency: float
    mte_granularity_bytes: int
    cube_latency_cycles: float
    vector_bytes_per_repeat: int
    vector_max_repeats: int
    vector_startup_cycles: float
    vector_reduce_cycles_per_repeat: float
    vector_reduce_latency_cycles: float
    ub_copy_latency_cycles: float
    vector_barrier_cycles: float
    vector_scalar_sync_cycles: float
    scalar_op_cycles: float
    scalar_load_cycles: float
    carry_loop_scalar_ops: int
    cross_core_flag_cycles: float
    sync_all_cycles: float
    kernel_launch_us: float
    # host steps inside a published time's window (sim/host.py), microseconds of host time
    host_launch_us: float
    host_tensor_alloc_us: float
    host_acl_malloc_us: float
    host_memcpy_h2d_us: float
    host_queue_drain_us: float
    host_eager_op_us: float
    host_sync_return_us: float
    sources: Mapping[str, str] = field(default_factory=dict, compare=False)
    path: str = field(default="", compare=False)

    @property
    def clock_hz(self) -> float:
        return self.clock_mhz * 1e6

    @property
    def hbm_bytes_per_cycle(self) -> float:
        """Achievable HBM bandwidth of the whole chip in bytes per cycle (theoretical x efficiency)."""
        return self.hbm_bandwidth_gbps * 1e9 * self.hbm_efficiency / self.clock_hz

    @property
    def l2_bytes_per_cycle(self) -> float:
        return self.l2_bandwidth_gbps * 1e9 / self.clock_hz

    @property
    def aiv_cores(self) -> int:
        return self.ai_cores * self.aiv_per_core

    @property
    def cube_fp16_peak_tflops(self) -> float:
        """fp16 cube peak: cores x 4096 MAC/cycle x 2 flop x clock."""
        return self.ai_cores * 4096 * 2 * self.clock_hz / 1e12

    def constants(self) -> dict[str, Any]:
        """The numeric constants as a plain dict (no sources)."""
        return {f.name: getattr(self, f.name) for f in _constant_fields()}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict: name, description and {field: {"value", "source"}} for every constant."""
        return {
            "name": self.name,
            "description": self.description,
            "constants": {k: {"value": v, "source": self.sources.get(k, "")} for k, v in self.constants().items()},
        }

    def replace(self, **changes: Any) -> HardwareProfile:
        """A copy with some constants changed (used by calibration and tests)."""
        return dataclasses.replace(self, **changes)


def _constant_fields() -> list[dataclasses.Field]:
    return [f for f in fields(HardwareProfile) if f.name not in ("name", "description", "sources", "path")]


_INT_FIELDS = {f.name for f in _constant_fields() if f.type in ("int", int)}
# Fields that must be strictly positive: they divide or bound something.
_POSITIVE = {
    "ai_cores", "aiv_per_core", "clock_mhz", "l0a_bytes", "l0b_bytes", "l0c_bytes", "l1_bytes", "ub_bytes",
    "l2_bytes", "l2_cache_bytes",
    "hbm_bandwidth_gbps", "hbm_efficiency", "l2_bandwidth_gbps", "gm_read_bytes_per_cycle",
    "l2_read_bytes_per_cycle", "l2_write_bytes_per_cycle", "l1_to_l0_bytes_per_cycle",
    "fixpipe_to_l1_bytes_per_cycle", "gm_alignment_bytes", "unaligned_efficiency", "mte_granularity_bytes",
    "nd2nz_alignment_bytes", "nd2nz_unaligned_efficiency",
    "vector_bytes_per_repeat", "vector_max_repeats",
}
_AT_MOST_ONE = {"hbm_efficiency", "unaligned_efficiency", "nd2nz_unaligned_efficiency"}
# Sanity bounds that keep the simulation meaningful (and fast): no real chip comes near them.
_AT_MOST = {"ai_cores": 1024, "aiv_per_core": 8, "vector_max_repeats": 65535}
_GENERAL_MAX = 1e15


def _profiles_dir():
    return resources.files("ascendbench.hardware") / "profiles"


def list_profiles() -> list[str]:
    """Names of the profiles shipped with the package, sorted."""
    return sorted(p.name[: -len(".toml")] for p in _profiles_dir().iterdir() if p.name.endswith(".toml"))


def load_profile(name_or_path: str | Path = DEFAULT_SCAN_HARDWARE) -> HardwareProfile:
    """Load a shipped profile by name (e.g. "ascend-910b4") or a user's TOML file by path.

    A file may start from a shipped profile with `inherits = "NAME"`: it then gives only its own constants,
    and every other one is the parent's, with the source "inherited from NAME: <the parent's source>". A
    parent constant marked calibrated (fitted on the parent's claims) is never inherited: the file sets it.

    Raises:
        HardwareError: unknown name, unreadable file, invalid TOML, an unknown key, a field that is missing,
            not a number, negative (or zero where it must be positive); a parent that is not a shipped
            profile, a cycle of inherits, a calibrated constant left to inherit. The message names the file
            and field.
    """
    label, data = _read(name_or_path)
    return _from_dict(data, label, chain=(str(name_or_path),))


def _read(name_or_path: str | Path) -> tuple[str, dict[str, Any]]:
    """The label (file name or path) and the parsed TOML of a shipped profile name or a user's .toml path."""
    text_name = str(name_or_path)
    if text_name in list_profiles():
        resource = _profiles_dir() / f"{text_name}.toml"
        label, raw = f"{text_name}.toml", resource.read_bytes()
    else:
        path = Path(text_name)
        if not text_name.endswith(".toml") or not path.exists():
            raise HardwareError(
                f"--hardware: unknown profile {text_name!r}; use one of {', '.join(list_profiles())} "
                "or the path of a .toml file"
            )
        label = str(path)
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise HardwareError(f"--hardware: cannot read {label}: {exc.strerror}") from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise HardwareError(f"--hardware: {label} is not valid TOML: {exc}") from None
    return label, data


def _constant_type(name: str, is_int: bool):
    """The pydantic type of one constant: a finite number (an int or a float in TOML; a bool or a string is not
    one) within its bounds; integers may be written 8.0."""
    from pydantic import Field

    return Annotated[float, Field(strict=True, allow_inf_nan=False, ge=0, gt=0 if name in _POSITIVE else None,
                                  le=1 if name in _AT_MOST_ONE else _AT_MOST.get(name, _GENERAL_MAX),
                                  multiple_of=1 if is_int else None)]


@lru_cache(maxsize=1)
def _file_model():
    """The pydantic model of a profile file, built once from HardwareProfile's fields and the bounds above."""
    from pydantic import BaseModel, StrictStr, create_model, model_validator

    class ProfileFile(BaseModel):
        name: StrictStr
        description: StrictStr
        sources: dict[str, str] = {}

        @model_validator(mode="before")
        @classmethod
        def _split_sources(cls, data: Any) -> Any:
            # `key = { value = 8, source = "..." }` or `key = 8`: the values are checked, the sources kept
            if not isinstance(data, dict):
                return data
            entries = {k: v for k, v in data.items() if isinstance(v, dict)}
            return {**data, **{k: v.get("value") for k, v in entries.items()},
                    "sources": {k: str(v.get("source", "")) for k, v in entries.items()}}

    return create_model("ProfileFile", __base__=ProfileFile,
                        **{f.name: (_constant_type(f.name, f.name in _INT_FIELDS), ...) for f in _constant_fields()})


def _problem(error: dict[str, Any]) -> str:
    """One pydantic error as the rest of "field 'x' ...": what is wrong and what is allowed."""
    kind, value, ctx = error["type"], error.get("input"), error.get("ctx", {})
    if error["loc"][0] in ("name", "description"):
        return "is missing or not a string"
    return {
        "missing": "is missing",
        "finite_number": "must be finite",
        "greater_than_equal": f"must be non-negative, got {value}",
        "greater_than": f"must be positive, got {value}",
        "less_than_equal": f"must be at most {ctx.get('le', 0):g}, got {value}",
        "multiple_of": f"must be an integer, got {value}",
    }.get(kind, f"must be a number, got {value!r}")


def _inherit(data: dict[str, Any], label: str, chain: tuple[str, ...]) -> dict[str, Any]:
    """`data` without its `inherits` key, with every constant it does not set taken from the parent profile
    (loaded, and checked, first) and its source saying so."""
    parent_name = data["inherits"]
    if not isinstance(parent_name, str) or parent_name not in list_profiles():
        raise HardwareError(f"hardware profile {label}: inherits {parent_name!r}, which is not a shipped "
                            f"profile; use one of {', '.join(list_profiles())}")
    if parent_name in chain:
        raise HardwareError(f"hardware profile {label}: inherits {parent_name!r}, a cycle: "
                            f"{' -> '.join((*chain, parent_name))}")
    parent_label, parent_data = _read(parent_name)
    parent = _from_dict(parent_data, parent_label, chain=(*chain, parent_name))
    child = {k: v for k, v in data.items() if k != "inherits"}
    for f in _constant_fields():
        if f.name in child:
            continue
        source = parent.sources.get(f.name, "")
        if source.startswith("calibrated"):
            raise HardwareError(f"hardware profile {label}: field '{f.name}' is calibrated in {parent_name} "
                                f"(fitted on that chip's claims) and is not inherited; set it in this file")
        child[f.name] = {"value": getattr(parent, f.name),
                         "source": f"inherited from {parent_name}: {source}" if source else
                         f"inherited from {parent_name}"}
    return child


def _from_dict(data: dict[str, Any], label: str, chain: tuple[str, ...] = ()) -> HardwareProfile:
    from pydantic import ValidationError

    known = {"name", "description", "inherits", *(f.name for f in _constant_fields())}
    unknown = [k for k in data if k not in known]
    if unknown:
        close = difflib.get_close_matches(unknown[0], known, n=1)
        hint = f"did you mean '{close[0]}'?" if close else "not a constant of a profile"
        raise HardwareError(f"hardware profile {label}: unknown key '{unknown[0]}' ({hint})")
    if "inherits" in data:
        data = _inherit(data, label, chain)
    try:
        checked = _file_model().model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]  # the first field in the file's order, as a person reads it
        raise HardwareError(f"hardware profile {label}: field '{error['loc'][0]}' {_problem(error)}") from None
    values = {f.name: (int if f.name in _INT_FIELDS else float)(getattr(checked, f.name)) for f in _constant_fields()}
    sources = {f.name: checked.sources.get(f.name, "") for f in _constant_fields()}
    return HardwareProfile(name=checked.name, description=checked.description, **values, sources=sources,
                           path=label)
