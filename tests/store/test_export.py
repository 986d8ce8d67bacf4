"""ascendbench.store.export: column names carry units, cells are scalars, the CSV reads back exactly."""

import csv
import io

import pytest

from ascendbench.store.export import _extras, _unit_name, columns_of, to_csv


@pytest.mark.parametrize("name, column", [
    ("time_s", "time_us"), ("phase_1_s", "phase_1_us"), ("time_s_total", "time_us_total"),
    ("elements_per_s", "elements_per_s"), ("rows_per_s", "rows_per_s"), ("bandwidth_gbps", "bandwidth_gbps"),
    ("s", "s"), ("tflops_p50", "tflops_p50")])
def test_seconds_become_microseconds_in_the_name(name, column):
    assert _unit_name(name) == column


def test_extras_are_flat_and_converted():
    row = {"n": None, "time_us": 1.0}
    _extras(row, {"n": 5, "time_s": 2.0, "memcpy_time_s": 3e-6, "baseline": {"variant": "vector", "time_s": 1e-6},
                  "dims": [1, 2]}, ("n", "time_us"))
    # a fixed column the row left empty is filled; one it holds is kept
    assert row == {"n": 5, "time_us": 1.0, "memcpy_time_us": 3e-6 * 1e6, "baseline_variant": "vector",
                   "baseline_time_us": 1e-6 * 1e6, "dims": "1 2"}


def test_csv_reads_back_the_values_exactly():
    rows = [{"a": 0.1 + 0.2, "b": True, "c": None, "z": "x, \"y\"\nz"}, {"a": 2**60, "d": "only here"}]
    columns = columns_of(rows, ("b", "a"))
    assert columns == ["b", "a", "c", "d", "z"]
    back = list(csv.DictReader(io.StringIO(to_csv(rows, columns))))
    assert back == [{"b": "True", "a": repr(0.1 + 0.2), "c": "", "d": "", "z": "x, \"y\"\nz"},
                    {"b": "", "a": str(2**60), "c": "", "d": "only here", "z": ""}]
    assert float(back[0]["a"]) == 0.1 + 0.2
