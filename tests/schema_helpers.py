"""The published incident schema (docs/incident.schema.json) and a validator for it (jsonschema, a test
dependency)."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

SCHEMA_PATH = Path(__file__).resolve().parent.parent / "docs" / "incident.schema.json"


@lru_cache(maxsize=1)
def validator() -> Any:
    import jsonschema

    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def problems(data: Any) -> list[str]:
    """Each schema violation as 'path: message' (empty when the incident validates)."""
    return [f"{'/'.join(str(p) for p in e.absolute_path) or '(top)'}: {e.message[:200]}"
            for e in sorted(validator().iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))]

