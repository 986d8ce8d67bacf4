"""Hardware profiles of the simulated Ascend chips (a chip is a TOML data file)."""

from ascendbench.hardware.profile import (
    DEFAULT_SCAN_HARDWARE,
    HardwareError,
    HardwareProfile,
    list_profiles,
    load_profile,
)

__all__ = ["DEFAULT_SCAN_HARDWARE", "HardwareError", "HardwareProfile", "list_profiles", "load_profile"]
