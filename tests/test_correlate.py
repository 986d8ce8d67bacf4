"""ascendbench/correlate.py without the CLI: statistics, Kendall's tau-b, marginal costs and rank agreement on
hand-made rows with known answers, refused rows, physical flags, and the shipped JSON Schemas."""

import json

import pytest

from ascendbench import correlate as lib
from ascendbench.kernels.registry import REGISTRY
from ascendbench.store.correlation import (
    CORRELATE_INPUT_SCHEMA_PATH,
    CORRELATE_SCHEMA_PATH,
    CorrelationResult,
    MeasurementRow,
)


def test_shipped_schemas_are_generated_from_the_models():
    # Regenerate with: python -c "from ascendbench.store.correlation import write_correlate_schemas as w; w()"
    assert json.loads(CORRELATE_SCHEMA_PATH.read_text()) == json.loads(json.dumps(
        CorrelationResult.model_json_schema()))
    assert json.loads(CORRELATE_INPUT_SCHEMA_PATH.read_text()) == json.loads(json.dumps(
        MeasurementRow.model_json_schema()))


def test_error_summary_known_values():
    s = lib.error_summary([1.1, 0.8, 1.0, 1.5])  # errors 0.1, 0.2, 0, 0.5
    assert s.count == 4
    assert s.mape == pytest.approx(0.2)
    assert s.median_abs_error == pytest.approx(0.15)
    assert s.p90_abs_error == pytest.approx(0.41)  # NumPy's linear interpolation: 0.2 + 0.7 * 0.3
    assert s.max_abs_error == pytest.approx(0.5)
    assert lib.error_summary([]).mape is None


def test_kendall_tau_b_known_values():
    assert lib.kendall_tau_b([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(4 / 6)
    assert lib.kendall_tau_b([1, 2, 2, 3], [1, 2, 3, 3]) == pytest.approx(0.8)  # tau-b with a tie on each side
    assert lib.kendall_tau_b([1, 2, 3], [3, 2, 1]) == pytest.approx(-1)
    assert lib.kendall_tau_b([1, 1], [1, 2]) is None
    assert lib.kendall_tau_b([1], [1]) is None


def _point(row, kernel, measured, simulated, **params):
    full = REGISTRY[kernel].params(params).model_dump(mode="json")
    return lib.Point(row, kernel, "ascend-910b4", "kernel", full, measured, simulated)


def test_marginal_costs_cancel_a_fixed_cost():
    # measured = 40 us the model does not know + 1 us per 1000 elements; simulated = the per-element cost only
    points = [_point(i + 1, "sort", 40 + n / 1000, n / 1000, n=n) for i, n in enumerate((1000, 4000, 2000))]
    points.append(_point(4, "sort", 99.0, 50.0, n=4000, variant="vector"))  # another group: one size only
    marginal = lib.marginal_costs(points)
    assert [(m.from_size, m.to_size) for m in marginal] == [(1000, 2000), (2000, 4000)]
    assert [m.measured_delta_us for m in marginal] == pytest.approx([1.0, 2.0])
    assert [m.ratio for m in marginal] == pytest.approx([1.0, 1.0])
    assert marginal[0].rows == [1, 3] and marginal[0].size_field == "n" and marginal[0].fixed == {}


def test_rank_agreement_and_regret():
    points = [_point(1, "sort", 10.0, 30.0, n=4096), _point(2, "sort", 20.0, 15.0, n=4096, variant="vector"),
              _point(3, "sort", 5.0, 5.0, n=8192)]  # alone in its problem: no ranking
    (r,) = lib.rank_agreement(points)
    assert r.configurations == 2 and r.kendall_tau == pytest.approx(-1)
    assert r.model_pick == {"variant": "vector"} and r.measured_best == {"variant": "mcscan"}
    assert r.regret == pytest.approx(1.0)  # the model's pick is measured twice as slow as the best
    assert r.problem == {"n": 4096}
    algorithms = [_point(i, "scan", m, s, n=2**20, algorithm=a)
                  for i, (a, m, s) in enumerate((("mcscan", 30, 28), ("memcpy", 20, 16), ("scanu", 400, 390)))]
    (r,) = lib.rank_agreement(algorithms)
    assert r.kendall_tau == pytest.approx(1) and r.regret == 0 and r.model_pick == {"algorithm": "memcpy"}


def _write(tmp_path, text, name="m.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_rows_refused_by_the_kernel_are_reported_not_counted(tmp_path):
    path = _write(tmp_path, "kernel,n,blocks,window,m,k,measured_us\n"
                            "scan,2**20,1000,,,,30\n"       # more blocks than AI cores: the kernel refuses
                            "hgemm,512,,host,64,64,20\n"    # no host window is modelled for hgemm
                            "scan,2**20,,host,,,60\n"
                            "sort,1e5,,,,,1\n")             # faster than HBM allows: flagged
    rows = lib.read_measurements(path)
    doc = lib.correlate(rows, source=path)
    status = [(r.status, r.reason) for r in doc.rows]
    assert status[0][0] == "refused" and status[0][1].startswith("blocks: must be at most 20")
    assert status[1][0] == "refused" and "no host window is modelled for hgemm" in status[1][1]
    assert doc.summary.count == 2 and doc.summary.refused == 2
    host = doc.rows[2]
    assert host.window_us > 0 and host.simulated_us == pytest.approx(host.kernel_us + host.window_us)
    assert host.params == {"n": 2**20}
    assert [(f.row, f.kernel) for f in doc.flags] == [(4, "sort")] and doc.flags[0].bound_us > 1
    assert doc.measurements["rows"] == 4 and len(doc.measurements["sha256"]) == 64


def test_json_lines_and_csv_give_the_same_rows(tmp_path):
    csv_path = _write(tmp_path, "kernel,n,algorithm,chunk,exclusive,measured_us\nscan,2**20,mcscan,off,true,30\n")
    jsonl = _write(tmp_path, json.dumps({"kernel": "scan", "n": 1048576, "algorithm": "mcscan", "chunk": 0,
                                         "exclusive": True, "measured_us": 30, "label": None}) + "\n", "m.jsonl")
    (a,), (b,) = lib.read_measurements(csv_path), lib.read_measurements(jsonl)
    assert a.params == b.params and a.params.chunk == 0 and a.params.exclusive is True


def test_simulations_are_reused_when_only_host_constants_change(tmp_path):
    path = _write(tmp_path, "kernel,n,window,measured_us\nscan,2**20,host,60\nscan,2**20,kernel,20\n")
    rows = lib.read_measurements(path)
    sim = lib.RowSimulator()
    hw = rows[0].hw
    for value in (1.0, 2.0, 3.0):
        for m in rows:
            sim.time_us(m, hw.replace(host_launch_us=value))
    assert sim.simulations == 1


def test_a_fit_in_worker_processes_equals_the_fit_here(tmp_path):
    from ascendbench.hardware import load_profile

    truth = load_profile("ascend-910b4").replace(hbm_efficiency=0.55)
    sim = lib.RowSimulator()
    lines = ["kernel,algorithm,n,measured_us"]
    for i, n in enumerate([2**16, 2**17, 2**18, 2**19, 2**20, 2**21]):
        (row,) = lib.read_measurements(_write(tmp_path, f"kernel,algorithm,n,measured_us\nscan,mcscan,{n},1\n",
                                              "one.csv"), hardware="ascend-910b4")
        lines.append(f"scan,mcscan,{n},{sum(sim.time_us(row, truth))!r}")
    rows = lib.read_measurements(_write(tmp_path, "\n".join(lines) + "\n"), hardware="ascend-910b4")
    here = lib.fit_constants(rows, ["hbm_efficiency"], folds=3, jobs=1)
    workers = lib.fit_constants(rows, ["hbm_efficiency"], folds=3, jobs=2)
    assert here == workers
    assert here.after["hbm_efficiency"] == pytest.approx(0.55, rel=0.02) and here.cv_error_after < 0.005
