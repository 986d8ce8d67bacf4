"""`ascendbench run sample`: weighted sampling by inverse transform (the scan paper, appendix B.3) on the
simulated NPU, any number of categories (beyond torch.multinomial's 2^24, claim S-18)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import numpy as np
import typer

from ascendbench.commands.common import (
    HardwareOption,
    JsonOption,
    NoSaveOption,
    TraceOption,
    count_option,
    fail,
)
from ascendbench.commands.operator_common import (
    NOption,
    OperatorRun,
    check_choice,
    check_n,
    finish,
    load_arrays,
    output_suffix,
    parse_count_option,
    parse_n,
    prepare,
)
from ascendbench.commands.run import _available_memory, app
from ascendbench.hardware import DEFAULT_SCAN_HARDWARE
from ascendbench.kernels.base import ParamError
from ascendbench.kernels.partition import index_bytes, offset_type
from ascendbench.kernels.sampling import (
    SAMPLE_VARIANTS,
    DistributionError,
    check_variant_size,
    check_weights,
    inverse_transform,
    simulate_weighted_sample,
)
from ascendbench.kernels.scan import S_VALUES
from ascendbench.store.operators import OperatorVerification

_SHOWN = 32  # the result document lists at most this many sampled indices
_VERIFY_LIMIT = 1 << 25  # the reference's float64 running sum of the whole array (256 MiB) up to this n
_EXACT_TOTAL = 2.0**29  # fp16 weights are multiples of 2^-24: float64 sums below 2^29 are exact in any order


def reference_indices(weights: np.ndarray, u: np.ndarray) -> np.ndarray:
    """The rule on one float64 running sum C of the whole array: the first i with C(i) > u * C(n-1)."""
    cdf = np.cumsum(weights, dtype=np.float64)
    return np.searchsorted(cdf, u * cdf[-1], side="right")


@app.command("sample")
def sample_command(
    samples: Annotated[int, count_option("--samples", help="Indices to draw (with replacement), e.g. 1 or "
                                         "1e6.")] = 1,
    n: NOption = None,
    variant: Annotated[str, typer.Option("--variant", help="scan (MCScan + SplitInd per sample, the paper's) or "
                                         "baseline (vector-only cumsum + binary search, torch.multinomial; at "
                                         "most 2**24 categories).")] = "scan",
    s: Annotated[int, count_option("--s", help="Tile side of the MCScan: 16, 32, 64 or 128.")] = 128,
    seed: Annotated[int, count_option("--seed", help="Seed of the draws (numpy default_rng(seed), as "
                                      "weighted_sample(seed=...)); generated weights use default_rng([seed, 1]).")] = 0,
    input_file: Annotated[Path | None, typer.Option("--input", help="Weights: a 1-D float16 .npy, or a .npz with "
                                                    "an array 'weights'.")] = None,
    output_file: Annotated[Path | None, typer.Option("--output-file", help="Save the indices as .npy, or as "
                                                     "'indices' in a .npz.")] = None,
    verify: Annotated[bool, typer.Option("--verify/--no-verify", help="Check every index has positive weight and, "
                                         "where float64 sums are exact, equals one running sum's rule.")] = True,
    model_only: Annotated[bool, typer.Option("--model-only", help="Timings and counters only, no data.")] = False,
    warm_l2: Annotated[bool, typer.Option("--warm-l2", help="Start with the weights in L2.")] = False,
    hardware: HardwareOption = DEFAULT_SCAN_HARDWARE,
    trace: TraceOption = None,
    out: Annotated[Path | None, typer.Option("--out", help="Result JSON path (default: "
                                             "results/runs/sample/<time>-<id>.json).")] = None,
    no_save: NoSaveOption = False,
    json_out: JsonOption = False,
) -> None:
    """Draw indices with probability proportional to the weights: an inclusive scan of the weights, then the
    first index whose running sum exceeds u * total (SplitInd with the predicate > u * total). A zero-weight
    category is never returned."""
    wall0 = time.perf_counter()
    count = parse_n(n)
    k = parse_count_option(samples, "samples")
    check_choice(variant, SAMPLE_VARIANTS, "variant")
    check_choice(s, S_VALUES, "s")
    hw = prepare(input_file=input_file, output_file=output_file, output_suffix=output_suffix(output_file, model_only),
                 trace=trace, out=out, no_save=no_save, seed=seed, hardware=hardware)
    arrays, sha = load_arrays(input_file, ("weights",), "weights") if input_file is not None else (None, None)
    count = check_n(count, arrays)
    if arrays is not None and arrays["weights"].dtype != np.float16:
        fail(f"--input: weights must be float16 (the MCScan's input), got {arrays['weights'].dtype}; convert with "
             "weights.astype(numpy.float16)")
    try:
        check_variant_size(count, variant)
    except ParamError as exc:
        fail(str(exc))
    if not model_only:
        if count == 0:
            fail("--n: at least one category is needed")
        needed = (count * 2 if arrays is None else 0) + (1 << 20) * 16 + k * 24
        available = _available_memory()
        if needed > 2**62 or (available is not None and needed > 0.9 * available):
            option = "--samples" if k * 24 > count * 2 else "--n"
            fail(f"{option}: the functional run needs about {needed / 2**30:.1f} GiB; use --model-only for timings "
                 "at this size")

    t0 = time.perf_counter()
    other = "baseline" if variant == "scan" else "scan"
    timing = simulate_weighted_sample(count, k, hw, variant=variant, s=s, warm_l2=warm_l2)
    try:
        baseline = simulate_weighted_sample(count, k, hw, variant=other, s=s, warm_l2=warm_l2).sim
        notes = []
    except ParamError:  # the baseline refuses this many categories: no baseline time, no speed-up
        baseline = None
        notes = [f"baseline (torch.multinomial) refuses {count:,} > 2**24 categories (claim S-18); no speed-up"]
    model_s = time.perf_counter() - t0

    out_arrays = None
    outputs: dict = {}
    verification = OperatorVerification(performed=False)
    functional_s = None
    if not model_only:
        t1 = time.perf_counter()
        weights = (arrays["weights"] if arrays is not None
                   else np.random.default_rng([seed, 1]).random(count, dtype=np.float32).astype(np.float16))
        try:
            total = check_weights(weights)
        except DistributionError as exc:
            fail(f"--input: {exc}")
        u = np.random.default_rng(seed).random(k)
        indices = inverse_transform(weights, u)
        functional_s = time.perf_counter() - t1
        out_arrays = {"indices": indices}
        outputs[f"indices (first {_SHOWN})" if k > _SHOWN else "indices"] = indices[:_SHOWN].tolist()
        if verify:
            positive = bool((weights[indices] > 0).all())
            exact = count <= _VERIFY_LIMIT and total < _EXACT_TOTAL
            same = bool(np.array_equal(indices, reference_indices(weights, u))) if exact else True
            verification = OperatorVerification(
                performed=True, passed=positive and same,
                reference=("one float64 running sum C of all weights (the first i with C(i) > u * C(n-1)); every "
                           "index has positive weight") if exact else "positive weight at every index (sums not exact: "
                                                            "rule not recomputed)",
                detail=None if positive and same else ("a zero-weight index was drawn" if not positive
                                                       else "indices differ from the reference"))
    data = "none" if model_only else ("file" if input_file is not None else "generated")
    run = OperatorRun(
        operator="sample", n=count, variant=variant, sim=timing.sim, baseline_variant=other,
        baseline=baseline, bandwidth_bytes=count * 2 + k * index_bytes(count),
        dtypes={"weights": "fp16", "indices": offset_type(count)}, params={"samples": k, "s": s, "warm_l2": warm_l2},
        data=data, seed=seed, input_file=input_file, input_sha256=sha, arrays=out_arrays, outputs=outputs,
        verification=verification, model_time_s=model_s, functional_time_s=functional_s, notes=notes)
    finish(run, hw, wall0, output_file=output_file, trace=trace, out=out, no_save=no_save, json_out=json_out)
