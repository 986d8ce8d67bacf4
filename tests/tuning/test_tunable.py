"""The tuning contract of the kernels: heuristics, evaluations and infeasibility reasons."""

import pytest

from ascendbench.hardware import load_profile
from ascendbench.kernels import hgemm
from ascendbench.kernels.hgemm import GemmShape, HgemmParams, simulate_hgemm
from ascendbench.kernels.registry import get_tunable
from ascendbench.kernels.tunable import Infeasible

ATLAS = load_profile("atlas-300t-a2")
B4 = load_profile("ascend-910b4")
BASE = {"split_k": 1, "shuffle_k": True, "padding": True, "double_buffer": True}


def test_hgemm_heuristic_is_the_papers_selector():
    # claim G-1: the selector picks 128 x 128 x 256 for 2048 x 128 x 2048
    assert get_tunable("hgemm").heuristic({"m": 2048, "n": 128, "k": 2048, "batch": 1}, ATLAS) == {
        "m0": 128, "n0": 128, "k0": 256, **BASE}


def test_hgemm_evaluation_is_the_timing_model():
    problem = {"m": 1000, "n": 700, "k": 300, "batch": 1}
    config = {"m0": 64, "n0": 128, "k0": 64, **BASE, "split_k": 2}
    ev = get_tunable("hgemm").evaluate(problem, config, ATLAS)
    sim, _ = simulate_hgemm(GemmShape(1000, 700, 300), HgemmParams(m0=64, n0=128, k0=64, split_k=2), ATLAS)
    assert ev.time_s == sim.time_s and ev.unit == "TFLOPS"
    assert ev.throughput == pytest.approx(2 * 1000 * 700 * 300 / sim.time_s / 1e12)


@pytest.mark.parametrize("shape", [(512, 512, 1024), (500, 300, 700)])
def test_hgemm_options_that_cannot_change_the_run_share_one_evaluation(shape, monkeypatch):
    # 512 x 512 x 1024: K and N rows are 512-byte aligned, nothing is padded, so padding off runs the same
    # program and is simulated once; 500 x 300 x 700 pads both, so padding off is simulated on its own
    problem = dict(zip("mnk", shape, strict=True), batch=1)
    tunable = get_tunable("hgemm")
    simulated = []
    monkeypatch.setattr(hgemm, "simulate_hgemm",
                        lambda *args, **kw: simulated.append(args[1]) or simulate_hgemm(*args, **kw))
    hgemm.RUN_CACHE.clear()
    on = tunable.evaluate(problem, {"m0": 64, "n0": 128, "k0": 64, **BASE}, ATLAS)
    off = tunable.evaluate(problem, {"m0": 64, "n0": 128, "k0": 64, **BASE, "padding": False}, ATLAS)
    sim, _ = simulate_hgemm(GemmShape(*shape), HgemmParams(m0=64, n0=128, k0=64, padding=False), ATLAS)
    assert off.time_s == sim.time_s
    assert [p.padding for p in simulated] == ([True] if shape == (512, 512, 1024) else [True, False])
    assert (off.time_s == on.time_s) == (shape == (512, 512, 1024))


def test_hgemm_tile_that_overflows_l0a_is_infeasible_with_the_buffer_named():
    with pytest.raises(Infeasible) as err:
        get_tunable("hgemm").evaluate({"m": 512, "n": 512, "k": 512, "batch": 1},
                                      {"m0": 256, "n0": 128, "k0": 512, **BASE}, ATLAS)
    assert err.value.reason.startswith("L0A")


def test_scan_heuristic_and_int8_infeasible_for_scanul1():
    scan = get_tunable("scan")
    small = scan.heuristic({"n": 10**6}, B4)
    assert small == {"algorithm": "mcscan-ul1", "s": 128, "blocks": B4.ai_cores, "chunk": "off"}  # fits L2
    big = scan.heuristic({"n": 10**8}, B4)
    assert big["chunk"] != "off" and big["chunk"] % 256 == 0  # §6.1.1 split when the data exceeds L2
    assert scan.heuristic({"n": 10**6, "dtype": "int8"}, B4)["algorithm"] == "mcscan"
    with pytest.raises(Infeasible, match="fp16 only"):
        scan.evaluate({"n": 10**6, "dtype": "int8"}, {"algorithm": "mcscan-ul1", "s": 128, "blocks": 20,
                                                      "chunk": "off"}, B4)
    ev = scan.evaluate({"n": 10**6}, small, B4)
    assert ev.unit == "GB/s" and ev.throughput == pytest.approx(10**6 * 6 / ev.time_s / 1e9)


def test_unknown_tunable():
    with pytest.raises(ValueError, match="--kernel: unknown tunable kernel 'fft'"):
        get_tunable("fft")


def test_batched_scan_heuristic_follows_the_papers_crossover_and_evaluates_the_kernel():
    from ascendbench.kernels.batched_scan import BatchedScanParams, simulate_batched

    tunable = get_tunable("batched-scan")
    assert tunable.heuristic({"batch": 64, "length": 1024}, B4) == {"algorithm": "scanu", "s": 128}
    assert tunable.heuristic({"batch": 8, "length": 65536}, B4) == {"algorithm": "scanul1", "s": 128}
    assert tunable.heuristic({"batch": 8, "length": 65536, "dtype": "int8"}, B4)["algorithm"] == "scanu"
    ev = tunable.evaluate({"batch": 40, "length": 65536}, {"algorithm": "scanu", "s": 64}, B4)
    sim = simulate_batched(40, 65536, BatchedScanParams(algorithm="scanu", s=64), B4).sim
    assert ev.time_s == sim.time_s and ev.throughput == pytest.approx(40 * 65536 * 6 / sim.time_s / 1e9)
    with pytest.raises(Infeasible, match="fp16 only"):
        tunable.evaluate({"batch": 4, "length": 100, "dtype": "int8"}, {"algorithm": "scanul1", "s": 64}, B4)
