import json

from ascendbench.store.schema import SCHEMA_PATH, json_schema


def test_shipped_json_schema_is_generated_from_the_models():
    # Regenerate with: python -c "from ascendbench.store.schema import write_schema; write_schema()"
    assert json.loads(SCHEMA_PATH.read_text()) == json.loads(json.dumps(json_schema()))


def test_atomic_write_leaves_no_temporary_files(tmp_path):
    from ascendbench.store.io import atomic_write_text

    target = tmp_path / "a" / "b.json"
    atomic_write_text(target, "{}")
    assert target.read_text() == "{}"
    assert [p.name for p in target.parent.iterdir()] == ["b.json"]
