"""The README's claims table is generated from a validate result, between markers, and lists every claim row."""

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


def test_shipped_readme_lists_every_claim_row():
    readme = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
    block = readme[readme.index(BEGIN): readme.index(END)]
    for c in load_claims():
        assert f"| {c.id} | {c.kind} |" in block, c.id


@pytest.mark.parametrize(("extra", "reason"), [({"only": ["G-8"]}, "an --only run (G-8)"),
                                               ({"quick": True}, "a --quick run"),
                                               ({"random_shapes": 50}, "a --random 50 run (G-7 on fewer than the "
                                                                       "paper's 5000 shapes)"), ({}, "")])
def test_a_partial_result_is_refused_and_the_readme_kept(tmp_path, extra, reason):
    import json

    from ascendbench.reference.readme import main, partial_run

    doc = DOC | {"kind": "validation", "quick": False, "only": None} | extra
    assert partial_run(doc) == reason
    readme = tmp_path / "README.md"
    readme.write_text(f"# t\n{BEGIN}\nold table\n{END}\n", encoding="utf-8")
    result = tmp_path / "v.json"
    result.write_text(json.dumps(doc), encoding="utf-8")
    if reason:
        with pytest.raises(SystemExit) as exc:
            main(["--result", str(result), "--readme", str(readme)])
        assert exc.value.code == 2 and "old table" in readme.read_text(encoding="utf-8")
    else:
        assert main(["--result", str(result), "--readme", str(readme)]) == 0
        assert "| S-4 | calibration |" in readme.read_text(encoding="utf-8")
