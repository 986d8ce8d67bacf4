"""The claims table of docs/fidelity.md is generated from a validate result, between markers, and lists every claim
row."""

from pathlib import Path

import pytest

from ascendbench.reference.claims import load_claims
from ascendbench.reference.readme import BEGIN, END, rewrite, table

DOC = {"random_shapes": 5000, "summary": {"rows": 2, "holds": 1, "misses": ["G-6"], "failing": ["G-6"]},
       "claims": [{"id": "S-4", "kind": "calibration", "claim": "MCScan fraction", "paper": 0.375, "unit": "",
                   "simulated": 0.37512, "ratio": 1.0003, "holds": True},
                  {"id": "G-6", "kind": "shape", "claim": "selector a|b", "paper": "within 5%", "unit": "",
                   "simulated": "1.000 0.920", "ratio": None, "holds": False}]}


def test_table_rows_and_verdicts():
    text = table(DOC)
    assert "| S-4 | calibration | MCScan fraction | 0.375 | 0.375 | holds |" in text
    assert "| G-6 | shape | selector a/b | within 5% | 1.000 0.920 | **MISS** |" in text
    assert "1 of 2 rows hold" in text and "G-6" in text.splitlines()[-1]


def test_rewrite_replaces_only_the_block():
    readme = f"# title\nintro\n{BEGIN}\nold table\n{END}\nafter\n"
    new = rewrite(readme, DOC)
    assert new.startswith(f"# title\nintro\n{BEGIN}\n| claim |") and new.endswith(f"{END}\nafter\n")
    assert "old table" not in new and rewrite(new, DOC) == new
    with pytest.raises(ValueError, match="markers"):
        rewrite("# no markers\n", DOC)


def test_shipped_fidelity_page_lists_every_claim_row():
    readme = (Path(__file__).parents[2] / "docs" / "fidelity.md").read_text(encoding="utf-8")
    block = readme[readme.index(BEGIN): readme.index(END)]
    for c in load_claims():
        assert f"| {c.id} | {c.kind} |" in block, c.id


def _full_doc() -> dict:
    """A validate result with every row of claims.toml (all holding), as the result schema requires."""
    rows = [{"id": c.id, "claim_id": c.claim, "kind": c.kind, "family": c.family, "hardware": c.hardware,
             "claim": c.statement, "source": c.source, "paper": c.paper, "unit": c.unit, "simulated": c.paper,
             "ratio": None, "tolerance": c.tolerance.text, "holds": True, "detail": "", "seconds": 0.0}
            for c in load_claims()]
    return {"schema_version": 1, "kind": "validation", "tool_version": "0", "created_at": "2026-01-01T00:00:00Z",
            "command": ["ascendbench", "validate"], "quick": False, "strict": False, "only": None,
            "random_shapes": 5000, "hardware": {}, "claims": rows,
            "summary": {"rows": len(rows), "holds": len(rows), "misses": [], "failing": []}, "passed": True,
            "wall_time_s": 1.0}


def _some_rows(doc: dict) -> dict:
    return doc | {"claims": doc["claims"][:2], "only": ["S-W1", "S-1"]}


@pytest.mark.parametrize(("change", "reason"), [
    (_some_rows, "an --only run (S-W1, S-1)"),
    (lambda d: d | {"quick": True}, "a --quick run"),
    (lambda d: d | {"strict": True}, "a --strict run (its verdicts count validation misses as failures)"),
    (lambda d: d | {"random_shapes": 50}, "a --random 50 run (G-7 on other than the paper's 5000 shapes)"),
    (lambda d: d | {"claims": d["claims"][:3]}, "its 3 rows are not the 50 rows of this version's claims "
                                                 "(a result of another version?)"),
    (lambda d: [1, 2], "not a validate --json result (document: Input should be a valid dictionary or instance "
                       "of ValidationResult)"),
    (lambda d: d | {"claims": [{"id": "S-1"}]}, "not a validate --json result (claims.0.claim_id: Field required)"),
    (lambda d: d, "")])
def test_a_partial_or_foreign_result_is_refused_and_the_readme_kept(tmp_path, change, reason):
    import json

    from ascendbench.reference.readme import main, partial_run

    doc = change(_full_doc())
    assert partial_run(doc) == reason
    readme = tmp_path / "fidelity.md"
    readme.write_text(f"# t\n{BEGIN}\nold table\n{END}\n", encoding="utf-8")
    result = tmp_path / "v.json"
    result.write_text(json.dumps(doc), encoding="utf-8")
    if reason:
        with pytest.raises(SystemExit) as exc:
            main(["--result", str(result), "--page", str(readme)])
        assert exc.value.code == 2 and "old table" in readme.read_text(encoding="utf-8")
    else:
        assert main(["--result", str(result), "--page", str(readme)]) == 0
        assert "| S-W1 | exact |" in readme.read_text(encoding="utf-8")
