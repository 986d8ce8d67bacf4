"""The timeline of a multi-core scan that runs in several L2 chunks: each chunk after the first starts with the
chunk sync (SyncAll and the scalar read of the previous chunk's last output), so the sync sits between chunks
on the phases track, and the count of syncs is one less than the count of chunks."""

import pytest

from ascendbench.hardware import load_profile
from ascendbench.kernels import SCAN_KERNELS, ScanParams
from ascendbench.kernels.scan import chunk_lengths


@pytest.mark.parametrize("name", ["mcscan", "mcscan-ul1"])
def test_chunk_syncs_lie_between_chunks(name):
    hw, params, n = load_profile(), ScanParams(), 10**8
    kernel = SCAN_KERNELS[name]
    _, chunks, _ = chunk_lengths(n, params, hw, kernel.tile_elements(params))
    result = kernel.simulate(n, params, hw)
    names = [span[0] for span in sorted(result.intervals, key=lambda span: span[1])]
    syncs = [i for i, phase in enumerate(names) if phase == "chunk sync"]
    assert len(syncs) == chunks - 1 == 5
    for i in syncs:
        assert names[i - 1] == "phase II" and names[i + 1] in ("phase I", "pad"), names[i - 1: i + 2]
    assert sum(b - a for _, a, b in result.intervals) == pytest.approx(result.time_cycles, rel=1e-12)
