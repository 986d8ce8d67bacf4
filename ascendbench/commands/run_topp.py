"""`ascendbench run topp`: Llama 3's top-p (nucleus) sampling on the simulated NPU (the scan paper §5.5, §6.5)."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import Annotated

import numpy as np
import typer

from ascendbench.commands.common import HardwareOption, JsonOption, NoSaveOption, count_option, fail
from ascendbench.commands.operator_common import (
    OperatorRun,
    check_choice,
    finish,
    output_suffix,
    parse_count_option,
    prepare,
    read_input,
)
from ascendbench.commands.run import _available_memory, app
from ascendbench.hardware import DEFAULT_SCAN_HARDWARE
from ascendbench.kernels.base import ParamError
from ascendbench.kernels.sampling import DistributionError
from ascendbench.kernels.scan import S_VALUES
from ascendbench.kernels.topp import TOPP_VARIANTS, simulate_top_p, top_p_draw
from ascendbench.store.operators import OperatorVerification

_BYTES_PER_ELEMENT = 40  # functional run: fp16 input, sort indices, fp32 sums, float64 draw sums (per row block)
_SHOWN_TOKENS = 32  # the result document lists the tokens of at most this many rows


def load_probs(path: Path) -> tuple[np.ndarray, str]:
    """Probabilities of an --input file: a .npy array, or a .npz with an array named 'probs'; shape (vocab,) or
    (batch, vocab), float16. Returns (probs, sha256 of the file); bad files fail with exit status 2."""
    loaded, data = read_input(path)
    if not isinstance(loaded, np.ndarray):
        with loaded:
            if loaded.files != ["probs"]:
                fail(f"--input: a .npz must hold one array named 'probs', found {', '.join(loaded.files) or 'none'}")
            try:
                loaded = loaded["probs"]
            except (OSError, ValueError) as exc:
                fail(f"--input: cannot read {path}: {exc}")
    if loaded.ndim not in (1, 2):
        fail(f"--input: probs must have shape (vocab,) or (batch, vocab), got {tuple(loaded.shape)}")
    if loaded.dtype != np.float16:
        fail(f"--input: probs must be float16 (the fp16 keys of the radix sort), got {loaded.dtype}; convert with "
             "probs.astype(numpy.float16)")
    return loaded, hashlib.sha256(data).hexdigest()


def generate_probs(batch: int, vocab: int, rng: np.random.Generator) -> np.ndarray:
    """Seeded probability rows: softmax of logits 3 * N(0, 1) in float32, rounded to float16 (peaked rows like a
    language model's, the top token far above the tail)."""
    out = np.empty((batch, vocab), dtype=np.float16)
    step = max(1, (1 << 22) // max(vocab, 1))
    for lo in range(0, batch, step):
        logits = 3 * rng.standard_normal((min(step, batch - lo), vocab), dtype=np.float32)
        logits -= logits.max(axis=1, keepdims=True)
        e = np.exp(logits)
        out[lo: lo + step] = e / e.sum(axis=1, keepdims=True)
    return out


@app.command("topp")
def topp_command(
    p: Annotated[float, typer.Option("--p", help="Nucleus threshold in [0, 1] (Llama 3's top_p; the paper "
                                     "measured 0.1).")] = 0.9,
    vocab: Annotated[int | None, count_option("--vocab", "--n", help="Tokens per row (vocabulary size), e.g. "
                                              "128256 or 2**17. Optional with --input.")] = None,
    batch: Annotated[int | None, count_option("--batch", help="Rows, each sampled independently (default 1, or "
                                              "the --input array's).")] = None,
    variant: Annotated[str, typer.Option("--variant", help="radix (radix sort + MCScan, the paper's) or baseline "
                                         "(vector-only sort + vector-only cumsum).")] = "radix",
    s: Annotated[int, count_option("--s", help="Tile side of the cumsum MCScan: 16, 32, 64 or 128.")] = 128,
    seed: Annotated[int, count_option("--seed", help="Seed of the draws (numpy default_rng(seed), as "
                                      "top_p_sample(seed=...)); generated rows use default_rng([seed, 1]).")] = 0,
    input_file: Annotated[Path | None, typer.Option("--input", help="Probabilities: a float16 .npy of shape "
                                                    "(vocab,) or (batch, vocab), or a .npz with 'probs'.")] = None,
    output_file: Annotated[Path | None, typer.Option("--output-file", help="Save the tokens as .npy, or 'tokens' "
                                                     "and 'kept' (nucleus sizes) as .npz.")] = None,
    verify: Annotated[bool, typer.Option("--verify/--no-verify", help="Compare with the same rule using the "
                                         "other sort (radix sort vs NumPy's stable argsort).")] = True,
    model_only: Annotated[bool, typer.Option("--model-only", help="Timings and counters only, no data.")] = False,
    warm_l2: Annotated[bool, typer.Option("--warm-l2", help="Start with the probabilities in L2.")] = False,
    hardware: HardwareOption = DEFAULT_SCAN_HARDWARE,
    trace: Annotated[Path | None, typer.Option("--trace", help="Chrome trace JSON of one row's timeline.")] = None,
    out: Annotated[Path | None, typer.Option("--out", help="Result JSON path (default: "
                                             "results/runs/topp/<time>-<id>.json).")] = None,
    no_save: NoSaveOption = False,
    json_out: JsonOption = False,
) -> None:
    """Draw one token per row by Llama 3's sample_top_p (sort descending, cumsum, mask cumsum - prob > p,
    renormalise, sample, map back), timed on the simulated NPU: 17 scans per fp16 row (claim S-16)."""
    wall0 = time.perf_counter()
    count = parse_count_option(vocab, "vocab")
    if not 0.0 <= p <= 1.0:
        fail(f"--p: must be in [0, 1], got {p}")
    if batch is not None and batch < 0:
        fail(f"--batch: must be a non-negative integer, got {batch}")
    check_choice(variant, TOPP_VARIANTS, "variant")
    check_choice(s, S_VALUES, "s")
    hw = prepare(input_file=input_file, output_file=output_file, output_suffix=output_suffix(output_file, model_only),
                 trace=trace, out=out, no_save=no_save, seed=seed, hardware=hardware)
    probs, sha = load_probs(input_file) if input_file is not None else (None, None)
    if probs is not None:
        rows, length = (probs.shape if probs.ndim == 2 else (1, probs.shape[0]))
        if count is not None and count != length:
            fail(f"--vocab: {count} disagrees with the input's {length} tokens per row; drop --vocab or make them equal")
        if batch is not None and batch != rows:
            fail(f"--batch: {batch} disagrees with the input's {rows} rows; drop --batch or make them equal")
        count, batch = length, rows
    if count is None:
        fail("--vocab: is required without --input")
    batch = 1 if batch is None else batch
    if probs is None and not model_only:
        needed = batch * count * _BYTES_PER_ELEMENT
        available = _available_memory()
        if needed > 2**62 or (available is not None and needed > 0.9 * available):
            fail(f"--vocab: the functional run of {batch} x {count} probabilities needs about {needed / 2**30:.1f} "
                 "GiB; use --model-only for timings at this size")
    if count == 0 and batch > 0 and not model_only:
        fail("--vocab: a probability row needs at least one token")

    t0 = time.perf_counter()
    other = "baseline" if variant == "radix" else "radix"
    try:
        timings = {v: simulate_top_p(count, hw, batch=batch, variant=v, s=s, warm_l2=warm_l2) for v in (variant, other)}
    except ParamError as exc:
        fail(str(exc))
    model_s = time.perf_counter() - t0

    arrays = None
    outputs: dict = {"scans_per_row": timings[variant].scans_per_row, "rows_per_wave": timings[variant].rows_per_wave}
    verification = OperatorVerification(performed=False)
    functional_s = None
    if not model_only:
        t1 = time.perf_counter()
        if probs is None:
            probs = generate_probs(batch, count, np.random.default_rng([seed, 1]))
        u = np.random.default_rng(seed).random(batch)
        try:
            res = top_p_draw(probs, p, u, variant=variant)
        except DistributionError as exc:
            fail(f"--input: {exc}")
        tokens, kept = np.atleast_1d(res.tokens), np.atleast_1d(res.kept)
        functional_s = time.perf_counter() - t1
        arrays = {"tokens": res.tokens, "kept": res.kept}
        outputs["tokens" if batch <= _SHOWN_TOKENS else f"tokens (first {_SHOWN_TOKENS} rows)"] = \
            tokens[:_SHOWN_TOKENS].tolist()
        if batch:
            outputs["nucleus size"] = (int(kept[0]) if batch == 1 else
                                       f"min {int(kept.min())}, mean {kept.mean():.1f}, max {int(kept.max())}")
        if verify:
            ref = top_p_draw(probs, p, u, variant=other)
            ok = np.array_equal(res.tokens, ref.tokens) and np.array_equal(res.kept, ref.kept)
            verification = OperatorVerification(
                performed=True, passed=ok,
                reference="the same rule with " + ("NumPy's stable argsort" if variant == "radix" else
                                                   "the radix sort") + " (same uniforms)",
                detail=None if ok else f"tokens differ in {int((np.atleast_1d(ref.tokens) != tokens).sum())} rows")
    data = "none" if model_only else ("file" if input_file is not None else "generated")
    run = OperatorRun(
        operator="topp", n=count, variant=variant, sim=timings[variant].sim, baseline_variant=other,
        baseline=timings[other].sim, bandwidth_bytes=batch * (count * 2 + 8),
        dtypes={"probs": "fp16", "tokens": "int64"},
        params={"p": p, "batch": batch, "s": s, "warm_l2": warm_l2},
        data=data, seed=seed, input_file=input_file, input_sha256=sha, arrays=arrays, outputs=outputs,
        verification=verification, model_time_s=model_s, functional_time_s=functional_s,
        notes=[(f"per row: sort (16 radix passes) + cumsum + mask, renormalise, multinomial, gather; "
                f"{timings[variant].cores_per_row} AI core(s) per row, {timings[variant].rows_per_wave} row(s) at "
                f"once, {timings[variant].waves} wave(s)")])
    finish(run, hw, wall0, output_file=output_file, trace=trace, out=out, no_save=no_save, json_out=json_out)
