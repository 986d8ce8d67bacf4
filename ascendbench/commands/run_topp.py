"""`ascendbench run topp`: Llama 3's top-p (nucleus) sampling on the simulated NPU (the scan paper §5.5, §6.5)."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import Annotated

import numpy as np
import typer

from ascendbench.commands.common import (
    HardwareOption,
    JsonOption,
    NoSaveOption,
    choice_option,
    count_option,
    fail,
)
from ascendbench.commands.operator_common import (
    execute,
    finish,
    given,
    output_suffix,
    prepare,
    read_input,
)
from ascendbench.commands.run import app
from ascendbench.hardware import DEFAULT_SCAN_HARDWARE
from ascendbench.kernels.registry import choices, get_spec


def load_probs(path: Path) -> tuple[np.ndarray, str]:
    """Probabilities of an --input file: a .npy array, or a .npz with one array named 'probs'. Returns (probs,
    sha256 of the file); shape and dtype are the kernel's to check. Bad files fail with exit status 2."""
    loaded, data = read_input(path)
    if not isinstance(loaded, np.ndarray):
        with loaded:
            if loaded.files != ["probs"]:
                fail(f"--input: a .npz must hold one array named 'probs', found {', '.join(loaded.files) or 'none'}")
            try:
                loaded = loaded["probs"]
            except (OSError, ValueError) as exc:
                fail(f"--input: cannot read {path}: {exc}")
    return loaded, hashlib.sha256(data).hexdigest()


@app.command("topp")
def topp_command(
    p: Annotated[float, typer.Option("--p", help="Nucleus threshold in [0, 1] (Llama 3's top_p; the paper "
                                     "measured 0.1).")] = 0.9,
    vocab: Annotated[int | None, count_option(*get_spec("topp").options("vocab"), help="Tokens per row (vocabulary size), e.g. "
                                              "128256 or 2**17. Optional with --input.")] = None,
    batch: Annotated[int | None, count_option("--batch", help="Rows, each sampled independently (default 1, or "
                                              "the --input array's).")] = None,
    variant: Annotated[str, choice_option("--variant", choices=choices("topp", "variant"),
                                          help="radix (radix sort + MCScan, the paper's) or baseline "
                                               "(vector-only sort + vector-only cumsum).")] = "radix",
    s: Annotated[int, choice_option("--s", choices=choices("topp", "s"),
                                    help="Tile side of the cumsum MCScan: 16, 32, 64 or 128.")] = 128,
    dtype: Annotated[str | None, choice_option("--dtype", choices=choices("topp", "dtype"),
                                               help="Probabilities: fp16 (the paper's kernel) or "
                                                    "fp32 (fp32 sort keys, the cumsum by the vector-only CumSum in "
                                                    "fp32); default the --input array's (fp32 for float32/float64), "
                                                    "else fp16.")] = None,
    seed: Annotated[int, count_option("--seed", help="Seed of the draws (numpy default_rng(seed), as "
                                      "top_p_sample(seed=...)); generated rows use default_rng([seed, 1]).")] = 0,
    input_file: Annotated[Path | None, typer.Option("--input", help="Probabilities: a .npy of shape (vocab,) "
                                                    "or (batch, vocab), or a .npz with 'probs'; float16, "
                                                    "float32 (scanned in fp32), or float64 (rounded to "
                                                    "float32).")] = None,
    output_file: Annotated[Path | None, typer.Option("--output-file", help="Save the tokens as .npy, or 'tokens' "
                                                     "and 'kept' (nucleus sizes) as .npz.")] = None,
    verify: Annotated[bool, typer.Option("--verify/--no-verify", help="Compare with the same rule using the "
                                         "other sort (radix sort vs NumPy's stable argsort).")] = True,
    model_only: Annotated[bool, typer.Option("--model-only", help="Timings and counters only, no data.")] = False,
    warm_l2: Annotated[bool, typer.Option("--warm-l2/--no-warm-l2", help="Start with the probabilities in L2.")] = False,
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
    hw = prepare(input_file=input_file, output_file=output_file, output_suffix=output_suffix(output_file, model_only),
                 trace=trace, out=out, no_save=no_save, seed=seed, hardware=hardware, model_only=model_only)
    arrays, sha = (None, None)
    if input_file is not None:
        probs, sha = load_probs(input_file)
        arrays = {"probs": probs}
    run = execute("topp", arrays=arrays, sha=sha, input_file=input_file, hw=hw, seed=seed, verify=verify,
                  model_only=model_only, **given(vocab=vocab, batch=batch, dtype=dtype), p=p, variant=variant,
                  s=s, warm_l2=warm_l2)
    finish(run, wall0, output_file=output_file, trace=trace, out=out, no_save=no_save, json_out=json_out)
