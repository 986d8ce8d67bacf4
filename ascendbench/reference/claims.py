"""The papers' claims as data (claims.toml, hgemm_tables.toml) and their evaluation with the simulator.

Each claim row of claims.toml carries the paper's value and tolerance; the simulated value comes from one
evaluator per CLAIMS.md ID (registered with `@evaluator("S-4")` by the modules scan_claims, hgemm_claims,
operator_claims, sampling_claims and row_scan_claims), which runs the same kernels and timing model that
`ascendbench run ...` runs. `evaluate_claims` turns both into verdicts.

Only this package and the tools outside the simulator (`validate`, `reproduce`, benchmarks/calibrate.py) read
this data: the simulator and the kernels never import it (a test checks).
"""

from __future__ import annotations

import difflib
import math
import time
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any, Literal

__all__ = [
    "FAMILIES",
    "KINDS",
    "Claim",
    "ClaimError",
    "Context",
    "Evaluation",
    "Outcome",
    "Tolerance",
    "evaluate_claims",
    "evaluator",
    "hgemm_tables",
    "load_claims",
    "paper_value",
    "select_claims",
]

KINDS = ("exact", "calibration", "validation", "shape")
FAMILIES = ("scan", "hgemm", "operators", "sampling", "row-scans")
RULES = ("exact", "ordering", "relative", "absolute", "overlap")
# The modules whose evaluators cover every claim (imported on first use, so that this module stays light).
EVALUATOR_MODULES = ("scan_claims", "hgemm_claims", "operator_claims", "sampling_claims", "row_scan_claims")


class ClaimError(ValueError):
    """Malformed claims data, or an unknown claim ID (the message names it)."""


@dataclass(frozen=True)
class Tolerance:
    """rule: exact | ordering (the evaluator decides) | relative (|sim/paper - 1| <= value) | absolute
    (|sim - paper| <= value) | overlap (simulated [lo, hi] meets the paper's range); text: as printed."""

    rule: str
    text: str
    value: float | None = None


@dataclass(frozen=True)
class Claim:
    """One row of claims.toml (see the file's header for the fields)."""

    id: str
    claim: str
    kind: Literal["exact", "calibration", "validation", "shape"]
    family: str
    hardware: str
    statement: str
    source: str
    paper: Any
    unit: str
    tolerance: Tolerance
    quick: bool


def _claims_text() -> str:
    return (resources.files("ascendbench.reference") / "claims.toml").read_text(encoding="utf-8")


@cache
def load_claims() -> tuple[Claim, ...]:
    """Every claim row of claims.toml, in file order.

    Raises:
        ClaimError: a row misses a field, has an unknown kind, family or tolerance rule, a numeric rule
            without a number, or a duplicate ID.
    """
    data = tomllib.loads(_claims_text())
    out, seen = [], set()
    for i, row in enumerate(data.get("claim", [])):
        where = f"claims.toml row {i + 1} ({row.get('id', '?')})"
        missing = [k for k in ("id", "claim", "kind", "family", "hardware", "statement", "source", "paper",
                               "unit", "tolerance", "quick") if k not in row]
        if missing:
            raise ClaimError(f"{where}: missing {', '.join(missing)}")
        if row["kind"] not in KINDS:
            raise ClaimError(f"{where}: kind must be one of {', '.join(KINDS)}")
        if row["family"] not in FAMILIES:
            raise ClaimError(f"{where}: family must be one of {', '.join(FAMILIES)}")
        tol = row["tolerance"]
        if tol.get("rule") not in RULES:
            raise ClaimError(f"{where}: tolerance rule must be one of {', '.join(RULES)}")
        if tol["rule"] in ("relative", "absolute") and not (
                isinstance(tol.get("value"), (int, float)) and isinstance(row["paper"], (int, float))):
            raise ClaimError(f"{where}: a {tol['rule']} tolerance needs a numeric value and paper value")
        if tol["rule"] == "overlap" and not (isinstance(row["paper"], list) and len(row["paper"]) == 2):
            raise ClaimError(f"{where}: an overlap tolerance needs paper = [low, high]")
        if row["id"] in seen:
            raise ClaimError(f"{where}: duplicate id")
        seen.add(row["id"])
        out.append(Claim(id=row["id"], claim=row["claim"], kind=row["kind"], family=row["family"],
                         hardware=row["hardware"], statement=row["statement"], source=row["source"],
                         paper=row["paper"], unit=row["unit"],
                         tolerance=Tolerance(tol["rule"], tol.get("text", tol["rule"]), tol.get("value")),
                         quick=bool(row["quick"])))
    return tuple(out)


def paper_value(row_id: str) -> Any:
    """The paper's value of one claim row (e.g. paper_value("S-4") -> 0.375)."""
    for c in load_claims():
        if c.id == row_id:
            return c.paper
    raise ClaimError(f"unknown claim {row_id!r}")


@cache
def hgemm_tables() -> dict[str, dict[str, Any]]:
    """The HGEMM paper's Tables 1-5 as {"table1": {"source", "columns", "rows", ...}, ...}."""
    return tomllib.loads((resources.files("ascendbench.reference") / "hgemm_tables.toml").read_text("utf-8"))


def select_claims(only: Iterable[str] | None = None, quick: bool = False) -> list[Claim]:
    """The claim rows to evaluate: all, or those whose row ID or CLAIMS.md ID is in `only` (e.g. "G-9a" selects
    "G-9a M=8" and "G-9a M=512"; IDs match whatever their case), restricted to the --quick set if `quick`.

    Raises:
        ClaimError: an ID of `only` names no claim (the message lists it, with the nearest IDs).
    """
    claims = load_claims()
    if only is not None:
        wanted = canonical_ids(only)
        claims = tuple(c for c in claims if c.id in wanted or c.claim in wanted)
    if quick:
        claims = tuple(c for c in claims if c.quick)
    return list(claims)


def canonical_ids(only: Iterable[str]) -> list[str]:
    """The claim and row IDs of `only` as claims.toml spells them ("g-9a m=8" -> "G-9a M=8"), blanks dropped.

    Raises:
        ClaimError: an ID names no claim (the message lists it, with the nearest IDs).
    """
    claims = load_claims()
    canonical = {k.casefold(): k for c in claims for k in (c.claim, c.id)}
    wanted = [w.strip() for w in only if w.strip()]
    unknown = [w for w in wanted if w.casefold() not in canonical]
    if unknown:
        raise ClaimError(f"unknown claim ID {', '.join(map(repr, unknown))}{_hint(unknown, claims, canonical)}")
    return [canonical[w.casefold()] for w in wanted]


def _hint(unknown: list[str], claims, canonical: dict[str, str]) -> str:
    """ " (did you mean ...?)": the claims a prefix names (G-9 -> G-9a, G-9b), else the closest spellings of
    claim and row IDs (`canonical`: case-folded ID -> ID), compared whatever their case."""
    claim_ids = sorted({c.claim for c in claims})
    near = [k for k in claim_ids for w in unknown
            if k.casefold().startswith(w.casefold()) and k[len(w):len(w) + 1].isalpha()]
    if not near:
        near = [canonical[m] for w in unknown
                for m in difflib.get_close_matches(w.casefold(), list(canonical), n=3, cutoff=0.6)]
    near = list(dict.fromkeys(near))
    return f" (did you mean {', '.join(near)}?)" if near else ""


@dataclass
class Outcome:
    """What an evaluator found for one row: the simulated value (number, [low, high], or text), and for exact
    and ordering rules whether the claim holds; `detail` adds what was measured (shown beside the value)."""

    simulated: Any
    holds: bool | None = None
    detail: str = ""


@dataclass
class Context:
    """What evaluators share in one validation run: hardware profiles by name (possibly overridden, e.g. by
    calibration), options (random_count for G-7), and a memo of simulations several claims reuse."""

    profiles: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    _memo: dict[Any, Any] = field(default_factory=dict)

    def hw(self, name: str):
        if name not in self.profiles:
            from ascendbench.hardware import load_profile

            self.profiles[name] = load_profile(name)
        return self.profiles[name]

    def memo(self, key, compute: Callable[[], Any]) -> Any:
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]


Evaluator = Callable[[Context], dict[str, Outcome]]
_EVALUATORS: dict[str, Evaluator] = {}


def evaluator(claim_id: str, hardware: str) -> Callable[[Callable], Evaluator]:
    """Register `fn(hw, ctx) -> {row_id: Outcome}` (or a single Outcome when the claim has one row) as the
    evaluator of CLAIMS.md ID `claim_id`, run on the profile `hardware` (from the context)."""

    def register(fn: Callable) -> Evaluator:
        def run(ctx: Context) -> dict[str, Outcome]:
            result = fn(ctx.hw(hardware), ctx)
            return result if isinstance(result, dict) else {claim_id: result}

        run.__name__ = fn.__name__
        run.__doc__ = fn.__doc__
        _EVALUATORS[claim_id] = run
        fn.evaluate = run
        return fn

    return register


def evaluators() -> dict[str, Evaluator]:
    """CLAIMS.md ID -> evaluator, importing the evaluator modules."""
    import importlib

    for name in EVALUATOR_MODULES:
        importlib.import_module(f"ascendbench.reference.{name}")
    return dict(_EVALUATORS)


@dataclass
class Evaluation:
    """One evaluated claim row: the data, the simulated value, ratio (simulated / paper where both are
    numbers), verdict and the seconds its evaluator took (shared by the rows of one claim)."""

    claim: Claim
    simulated: Any
    ratio: float | None
    holds: bool
    detail: str
    seconds: float

    def as_row(self) -> dict[str, Any]:
        c = self.claim
        return {"id": c.id, "claim_id": c.claim, "kind": c.kind, "family": c.family, "hardware": c.hardware,
                "claim": c.statement, "source": c.source, "paper": c.paper, "unit": c.unit,
                "simulated": self.simulated, "ratio": self.ratio, "tolerance": c.tolerance.text,
                "holds": self.holds, "detail": self.detail, "seconds": round(self.seconds, 3)}


def verdict(claim: Claim, outcome: Outcome) -> tuple[bool, float | None]:
    """(holds, ratio) of one row from its tolerance rule and the evaluator's outcome."""
    sim, paper, tol = outcome.simulated, claim.paper, claim.tolerance
    numeric = isinstance(sim, (int, float)) and not isinstance(sim, bool) and isinstance(paper, (int, float))
    ratio = float(sim) / paper if numeric and paper != 0 else None
    if tol.rule == "relative":
        return bool(numeric and math.isfinite(sim) and abs(sim / paper - 1) <= tol.value), ratio
    if tol.rule == "absolute":
        return bool(numeric and math.isfinite(sim) and abs(sim - paper) <= tol.value), ratio
    if tol.rule == "overlap":
        lo, hi = sim
        return bool(lo <= paper[1] and hi >= paper[0]), None
    if outcome.holds is None:
        raise ClaimError(f"claim {claim.id}: the evaluator must decide a {tol.rule} claim")
    return bool(outcome.holds), ratio


def evaluate_claims(claims: Iterable[Claim], ctx: Context | None = None,
                    progress: Callable[[str, int, int], None] | None = None) -> list[Evaluation]:
    """Evaluate claim rows (each claim's evaluator runs once for all its rows), in the order given.

    progress(claim_id, done, total) is called before each evaluator runs. Raises ClaimError when a row has
    no evaluator or an evaluator does not return the row.
    """
    claims = list(claims)
    ctx = ctx or Context()
    table = evaluators()
    order = list(dict.fromkeys(c.claim for c in claims))
    outcomes: dict[str, tuple[dict[str, Outcome], float]] = {}
    for i, cid in enumerate(order):
        if cid not in table:
            raise ClaimError(f"claim {cid}: no evaluator")
        if progress is not None:
            progress(cid, i, len(order))
        t0 = time.perf_counter()
        outcomes[cid] = (table[cid](ctx), time.perf_counter() - t0)
    if progress is not None:
        progress("done", len(order), len(order))
    out = []
    for c in claims:
        rows, seconds = outcomes[c.claim]
        if c.id not in rows:
            raise ClaimError(f"claim {c.claim}: the evaluator returned no row {c.id!r}")
        holds, ratio = verdict(c, rows[c.id])
        out.append(Evaluation(c, rows[c.id].simulated, ratio, holds, rows[c.id].detail, seconds))
    return out


def module_rows(claim_ids: Iterable[str], hw, **options) -> list[dict[str, Any]]:
    """Rows of the claims of one module, evaluated on `hw` (the module command lines' --hardware)."""
    ids = list(claim_ids)
    profiles = {hw.name: hw}
    for c in load_claims():
        if c.claim in ids:
            profiles[c.hardware] = hw
    ctx = Context(profiles=profiles, options=options)
    return [e.as_row() for e in evaluate_claims(select_claims(ids), ctx)]
