"""Shared fixtures for the collector tests: the fixture checkpoint and a schema validator."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

ROOT = Path(__file__).resolve().parents[2]
CHECKPOINT = ROOT.parent / "shared/fixtures/libreyolo_v1_checkpoints/LibreYOLO9t_nc80_seed0.pt"
SCHEMA_FILE = ROOT / "libreyolo" / "document" / "profile.schema.json"


@pytest.fixture(scope="session")
def checkpoint() -> Path:
    if not CHECKPOINT.is_file():
        pytest.skip(f"fixture checkpoint not found at {CHECKPOINT}")
    return CHECKPOINT


@pytest.fixture(scope="session")
def schema_validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    return jsonschema.Draft202012Validator(schema)
