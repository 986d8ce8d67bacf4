import json

from ascendbench.store.validation import VALIDATION_SCHEMA_PATH, ValidationResult


def test_shipped_validation_schema_is_generated_from_the_model():
    # Regenerate with: python -c "from ascendbench.store.documents import write_schemas; write_schemas()"
    assert json.loads(VALIDATION_SCHEMA_PATH.read_text()) == json.loads(json.dumps(ValidationResult.model_json_schema()))
