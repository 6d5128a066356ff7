"""Write the published JSON Schemas: `libreyolo/document/profile.schema.json` (the profile
document) and `libreyolo/document/sweep.schema.json` (the sweep's five files).

The profile's schema is generated from the structs in `libreyolo/document/model.py` (the
contract) by msgspec and post-processed only to add an identity (`$id`, `title`,
`description`) and to pin `schema` to the current tag. The sweep's is generated from the
structs in `libreyolo/document/sweep_model.py` and `tune_model.py`: each field's type from its
annotation and, where the field declares a rule (`rules.RULE`), the values the rule accepts
(ranges, lengths, choices), so the published ranges are the ones a reader checks. Output is
canonical (sorted keys, indent 2, trailing newline), so a file changes only when the structs do.

Usage:
    python scripts/gen_schema.py           # rewrite both files
    python scripts/gen_schema.py --check   # exit 1 when a file is out of date
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import sys
import types
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

import msgspec

from libreyolo.document.codec import to_json_bytes
from libreyolo.document.json_value import JsonObject
from libreyolo.document.model import SCHEMA, Profile
from libreyolo.document.rules import RULE
from libreyolo.document.sweep_model import (
    PLAN_SCHEMA,
    REQUEST_SCHEMA,
    STATUS_SCHEMA,
    SWEEP_SCHEMA,
    PointRequest,
    PointStatus,
    SweepPlan,
    SweepRecord,
)
from libreyolo.document.tune_model import TUNE_SCHEMA, TuneRecord

DOCUMENT_DIR = Path(__file__).resolve().parents[1] / "libreyolo" / "document"
SCHEMA_PATH = DOCUMENT_DIR / "profile.schema.json"
SWEEP_SCHEMA_PATH = DOCUMENT_DIR / "sweep.schema.json"
SCHEMA_ID = "urn:libreyolo:profile:v2"
SWEEP_SCHEMA_ID = "urn:libreyolo:sweep:v1"
DIALECT = "https://json-schema.org/draft/2020-12/schema"
# Each sweep file, its struct and its tag (the $defs entry validates one file).
SWEEP_DOCUMENTS = {
    "point.json": (PointRequest, REQUEST_SCHEMA),
    "status.json": (PointStatus, STATUS_SCHEMA),
    "sweep_plan.json": (SweepPlan, PLAN_SCHEMA),
    "sweep.json": (SweepRecord, SWEEP_SCHEMA),
    "tune.json": (TuneRecord, TUNE_SCHEMA),
}
# Files whose reader refuses them untagged though the struct defaults the tag (no untagged one
# was ever written): the schema requires it.
TAG_REQUIRED = (TuneRecord,)
_SCALARS = {str: "string", int: "integer", float: "number", bool: "boolean", type(None): "null"}


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


def _type_schema(kind: Any, defs: dict[str, Any]) -> dict[str, Any]:
    """The schema of an annotation (a struct is defined once in `defs` and referenced)."""
    if kind is JsonObject:
        return {"type": "object"}
    if dataclasses.is_dataclass(kind):
        assert isinstance(kind, type)
        if kind.__name__ not in defs:
            defs[kind.__name__] = {}  # placeholder first: a struct may refer to itself
            defs[kind.__name__] = _struct_schema(kind, defs)
        return {"$ref": f"#/$defs/{kind.__name__}"}
    origin, args = get_origin(kind), get_args(kind)
    if origin in (Union, types.UnionType):  # an int is a JSON number: `float | int` is one
        options = [_type_schema(a, defs) for a in args if not (a is int and float in args)]
        return options[0] if len(options) == 1 else {"anyOf": options}
    if origin is Literal:
        return {"enum": list(args)}
    if origin is list:
        return {"type": "array", "items": _type_schema(args[0], defs)}
    if origin is dict:
        return {"type": "object", "additionalProperties": _type_schema(args[1], defs)}
    return {"type": _SCALARS[kind]}


def _nullable(kind: Any) -> bool:
    return get_origin(kind) in (Union, types.UnionType) and type(None) in get_args(kind)


def _field_schema(spec: dataclasses.Field[Any], defs: dict[str, Any]) -> dict[str, Any]:
    """A field's schema: its rule's values (or null, when the annotation allows it), else its
    annotation's."""
    typed = _type_schema(spec.type, defs)  # defines the structs it names either way
    rule = spec.metadata.get(RULE)
    if rule is None:
        return typed
    ruled: dict[str, Any] = rule.schema()
    return {"anyOf": [ruled, {"type": "null"}]} if _nullable(spec.type) else ruled


def _struct_schema(cls: type, defs: dict[str, Any]) -> dict[str, Any]:
    """An object with one property per field; required: the fields without a default."""
    fields = dataclasses.fields(cls)
    missing = dataclasses.MISSING
    required = [f.name for f in fields if f.default is missing and f.default_factory is missing]
    schema: dict[str, Any] = {
        "title": cls.__name__,
        "description": " ".join((inspect.getdoc(cls) or "").split()),
        "type": "object",
        "properties": {f.name: _field_schema(f, defs) for f in fields},
    }
    if required:
        schema["required"] = required
    return schema


def build_sweep_schema() -> dict[str, Any]:
    """The JSON Schema of the sweep's files: one definition per file (and the structs they
    hold); a document validates when it is one of them."""
    defs: dict[str, Any] = {}
    for cls, _ in SWEEP_DOCUMENTS.values():
        _type_schema(cls, defs)
    for cls in TAG_REQUIRED:
        defs[cls.__name__]["required"] = ["schema", *defs[cls.__name__].get("required", [])]
    files = ", ".join(
        f"{name} ({cls.__name__}, {tag})" for name, (cls, tag) in SWEEP_DOCUMENTS.items()
    )
    return {
        "$schema": DIALECT,
        "$id": SWEEP_SCHEMA_ID,
        "title": "libreyolo sweep files",
        "description": (
            f"What libreyolo-sweep writes: {files}. Unknown fields are ignored by readers. "
            "Generated from libreyolo/document/sweep_model.py and tune_model.py by "
            "scripts/gen_schema.py; see "
            "docs/sweep-format.md."
        ),
        "anyOf": [{"$ref": f"#/$defs/{cls.__name__}"} for cls, _ in SWEEP_DOCUMENTS.values()],
        "$defs": defs,
    }


def render() -> bytes:
    """The profile schema file's exact bytes."""
    return to_json_bytes(build_schema())


def render_sweep() -> bytes:
    """The sweep schema file's exact bytes."""
    return to_json_bytes(build_sweep_schema())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if a file is out of date")
    args = parser.parse_args(argv)
    outputs = ((SCHEMA_PATH, render()), (SWEEP_SCHEMA_PATH, render_sweep()))
    if args.check:
        stale = [p for p, payload in outputs if not p.exists() or p.read_bytes() != payload]
        for path in stale:
            print(f"{path} is out of date: run scripts/gen_schema.py", file=sys.stderr)
        return 1 if stale else 0
    for path, payload in outputs:
        path.write_bytes(payload)
    return 0


if __name__ == "__main__":
    sys.exit(main())
