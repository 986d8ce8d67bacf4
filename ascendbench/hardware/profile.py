"""Hardware profiles: every constant of the simulated NPU, loaded from TOML, each with its source."""

from __future__ import annotations

import dataclasses
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
    documented guesses).
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

    Raises:
        HardwareError: unknown name, unreadable file, invalid TOML, or a field that is missing, not a
            number, negative (or zero where it must be positive); the message names the file and field.
    """
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
    return _from_dict(data, label)


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


def _from_dict(data: dict[str, Any], label: str) -> HardwareProfile:
    from pydantic import ValidationError

    try:
        checked = _file_model().model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]  # the first field in the file's order, as a person reads it
        raise HardwareError(f"hardware profile {label}: field '{error['loc'][0]}' {_problem(error)}") from None
    values = {f.name: (int if f.name in _INT_FIELDS else float)(getattr(checked, f.name)) for f in _constant_fields()}
    sources = {f.name: checked.sources.get(f.name, "") for f in _constant_fields()}
    return HardwareProfile(name=checked.name, description=checked.description, **values, sources=sources,
                           path=label)
