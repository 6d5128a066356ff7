"""Write `libreyolo/document/profile.schema.json`, the published JSON Schema of the document.

The schema is generated from the msgspec structs in `libreyolo/document/model.py` (the contract)
and post-processed only to add an identity (`$id`, `title`, `description`) and to pin `schema`
to the current tag. Output is canonical (sorted keys, indent 2, trailing newline), so the file
changes only when the structs do.

Usage:
    python scripts/gen_schema.py           # rewrite the file
    python scripts/gen_schema.py --check   # exit 1 when the file is out of date
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import msgspec

from libreyolo.document.codec import to_json_bytes
from libreyolo.document.model import SCHEMA, Profile

SCHEMA_PATH = Path(__file__).resolve().parents[1] / "libreyolo" / "document" / "profile.schema.json"
SCHEMA_ID = "urn:libreyolo:profile:v2"
DIALECT = "https://json-schema.org/draft/2020-12/schema"


def build_schema() -> dict[str, Any]:
    """The JSON Schema of `Profile`, with identity and the schema tag pinned."""
    generated = msgspec.json.schema(Profile)
    defs: dict[str, Any] = generated["$defs"]
    profile = defs["Profile"]
    profile["properties"]["schema"] = {
        "const": SCHEMA,
        "description": "Document schema tag; a reader refuses a newer major version.",
    }
    profile["required"] = ["schema", *(k for k in profile["required"] if k != "schema")]
    return {
        "$schema": DIALECT,
        "$id": SCHEMA_ID,
        "title": f"libreyolo profile document ({SCHEMA})",
        "description": (
            "What `libreyolo profile` writes to profile.json. Generated from "
            "libreyolo/document/model.py by scripts/gen_schema.py; see docs/profile-format.md."
        ),
        "$ref": "#/$defs/Profile",
        "$defs": defs,
    }


def render() -> bytes:
    """The schema file's exact bytes."""
    return to_json_bytes(build_schema())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the file is out of date")
    args = parser.parse_args(argv)
    payload = render()
    if args.check:
        current = SCHEMA_PATH.read_bytes() if SCHEMA_PATH.exists() else b""
        if current != payload:
            print(f"{SCHEMA_PATH} is out of date: run scripts/gen_schema.py", file=sys.stderr)
            return 1
        return 0
    SCHEMA_PATH.write_bytes(payload)
    return 0


if __name__ == "__main__":
    sys.exit(main())
