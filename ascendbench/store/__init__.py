"""Result documents: schema (versioned, pydantic) and atomic JSON writing."""

from ascendbench.store.io import atomic_save_npy, atomic_write_bytes, atomic_write_text
from ascendbench.store.schema import SCHEMA_VERSION, RunResult, json_schema

__all__ = ["SCHEMA_VERSION", "RunResult", "atomic_save_npy", "atomic_write_bytes", "atomic_write_text", "json_schema"]
