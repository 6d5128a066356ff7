"""Shared fixtures for the collector tests: the fixture checkpoint and a schema validator."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from tests.fixture_files import YOLO9T, fixture_file

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_FILE = ROOT / "libreyolo" / "document" / "profile.schema.json"


@pytest.fixture(scope="session")
def checkpoint() -> Path:
    return fixture_file(YOLO9T)


@pytest.fixture(scope="session")
def schema_validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    return jsonschema.Draft202012Validator(schema)
