"""Field rules: what a struct's fields accept, declared on the fields (the sweep's files).

A struct of `sweep_model.py` declares on each field the type and range of what a reader accepts
(`Count`, `Number`, `Signed`, `Flag`, `Text`, `Choice`, `Items` and its `strings`, `Fields`,
`Named`, under the metadata key `RULE`). `field_problem` checks plain JSON data against them
before the converter (`convert.py`) builds the struct, so the first unusable value is one line
naming its field ("points['a'].batch is 0 (out of range 1..1048576, or -1 for auto)"), as
`validate.py` names a profile's; the JSON Schema generator (`scripts/gen_schema.py`) reads the
same rules, so the published ranges are the checked ones.

Pure and small: no I/O; imports nothing beyond the standard library and `json_value`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from libreyolo.document.json_value import JsonObject, JsonValue

RULE = "libreyolo.rule"  # the key of a field's rule in its dataclass metadata
_SHOWN_CHARS = 60  # a string in a message is cut to this many characters
_KINDS = {
    bool: "a boolean",
    int: "an integer",
    float: "a number",
    str: "a string",
    list: "a list",
    dict: "an object",
}


class Rule(Protocol):
    """A check of one JSON value: the problem (naming `path`), None when it is fine; and the
    JSON Schema of the values it accepts (null aside: the field's annotation says that)."""

    def __call__(self, value: object, path: str) -> str | None: ...

    def schema(self) -> JsonObject: ...


def kind_of(value: object) -> str:
    """A value's JSON kind as a message names it: `an integer`, `a list`, `null`."""
    return "null" if value is None else _KINDS.get(type(value), type(value).__name__)


def quoted(text: str) -> str:
    """`text` as a Python literal (control characters escaped), cut to a readable length."""
    if len(text) > _SHOWN_CHARS:
        text = text[: _SHOWN_CHARS - 10] + "…" + text[-9:]
    return repr(text)


def shown(value: object) -> str:
    """A value as a message shows it: numbers compact, strings quoted and cut, containers by
    kind (a hostile file's value never makes the message long)."""
    if isinstance(value, str):
        return quoted(value)
    if isinstance(value, bool) or value is None:
        return kind_of(value)
    if isinstance(value, int) and abs(value) >= 10**6:
        try:
            return f"{value:.3g}"
        except OverflowError:  # more digits than a float holds
            return "an integer beyond 1e+308"
    return repr(value) if isinstance(value, int | float) else kind_of(value)


def first_problem(checks: Iterable[tuple[str, object, Rule]]) -> str | None:
    """The first problem of (path, value, rule) checks, in order."""
    for path, value, rule in checks:
        problem = rule(value, path)
        if problem:
            return problem
    return None


@dataclass(frozen=True, slots=True)
class Count:
    """An integer lo..hi (never a boolean), `auto` (a sentinel such as batch -1), or null."""

    lo: int
    hi: int
    auto: int | None = None

    def __call__(self, value: object, path: str) -> str | None:
        if value is None:
            return None
        if type(value) is not int:
            return f"{path} is {kind_of(value)}, not an integer"
        if self.lo <= value <= self.hi or value == self.auto:
            return None
        span = f"{self.lo}..{self.hi}"
        span += "" if self.auto is None else f", or {self.auto} for auto"
        return f"{path} is {shown(value)} (out of range {span})"

    def schema(self) -> JsonObject:
        ranged: JsonObject = {"type": "integer", "minimum": self.lo, "maximum": self.hi}
        return ranged if self.auto is None else {"anyOf": [ranged, {"const": self.auto}]}


@dataclass(frozen=True, slots=True)
class Number:
    """A number 0..hi, a positive one at least `least` (0: any), or null."""

    hi: float
    least: float = 0.0

    def __call__(self, value: object, path: str) -> str | None:
        if value is None:
            return None
        if type(value) not in (int, float):
            return f"{path} is {kind_of(value)}, not a number"
        assert isinstance(value, int | float)
        if value == 0 or self.least <= value <= self.hi:  # NaN fails both
            return None
        span = f"0..{self.hi:g}" if self.least == 0 else f"0 or {self.least:g}..{self.hi:g}"
        return f"{path} is {shown(value)} (out of range {span})"

    def schema(self) -> JsonObject:
        ranged: JsonObject = {"type": "number", "minimum": 0, "maximum": self.hi}
        if self.least:  # 0, or at least `least`: nothing strictly between
            ranged["not"] = {"exclusiveMinimum": 0, "exclusiveMaximum": self.least}
        return ranged


@dataclass(frozen=True, slots=True)
class Flag:
    """A boolean (or null, when `null`)."""

    null: bool = True

    def __call__(self, value: object, path: str) -> str | None:
        if (value is None and self.null) or type(value) is bool:
            return None
        return f"{path} is {kind_of(value)}, not a boolean"

    def schema(self) -> JsonObject:
        return {"type": "boolean"}


@dataclass(frozen=True, slots=True)
class Text:
    """A string of at most `limit` characters (or null, when `null`)."""

    limit: int
    null: bool = True

    def __call__(self, value: object, path: str) -> str | None:
        if value is None and self.null:
            return None
        if not isinstance(value, str):
            return f"{path} is {kind_of(value)}, not a string"
        if len(value) > self.limit:
            return f"{path} is a string of {len(value)} characters (at most {self.limit})"
        return None

    def schema(self) -> JsonObject:
        return {"type": "string", "maxLength": self.limit}


@dataclass(frozen=True, slots=True)
class Choice:
    """One of `values`."""

    values: tuple[str, ...]
    null: bool = False

    def __call__(self, value: object, path: str) -> str | None:
        if (isinstance(value, str) and value in self.values) or (value is None and self.null):
            return None
        return f"{path} is {shown(value)}, not one of {', '.join(self.values)}"

    def schema(self) -> JsonObject:
        values: list[JsonValue] = list(self.values)
        return {"enum": [*values, None] if self.null else values}


@dataclass(frozen=True, slots=True)
class Signed:
    """A number -limit..limit (a change that may be negative), or null."""

    limit: float

    def __call__(self, value: object, path: str) -> str | None:
        if value is None:
            return None
        if type(value) not in (int, float):
            return f"{path} is {kind_of(value)}, not a number"
        assert isinstance(value, int | float)
        if -self.limit <= value <= self.limit:  # NaN fails
            return None
        return f"{path} is {shown(value)} (out of range -{self.limit:g}..{self.limit:g})"

    def schema(self) -> JsonObject:
        return {"type": "number", "minimum": -self.limit, "maximum": self.limit}


@dataclass(frozen=True, slots=True)
class Items:
    """A list of at most `max_items` values, each by `item`."""

    item: Rule
    max_items: int

    def __call__(self, value: object, path: str) -> str | None:
        if not isinstance(value, list):
            return f"{path} is {kind_of(value)}, not a list"
        if len(value) > self.max_items:
            return f"{path} holds {len(value)} items (at most {self.max_items})"
        return first_problem((f"{path}[{i}]", v, self.item) for i, v in enumerate(value))

    def schema(self) -> JsonObject:
        return {"type": "array", "maxItems": self.max_items, "items": self.item.schema()}


def strings(max_items: int, max_chars: int) -> Items:
    """A list of at most `max_items` strings of at most `max_chars` characters each."""
    return Items(Text(max_chars, null=False), max_items)


@dataclass(frozen=True, slots=True)
class Named:
    """An object of name -> value: names of at most `max_chars`, each value by `item`."""

    item: Rule
    max_chars: int
    noun: str = "name"

    def __call__(self, value: object, path: str) -> str | None:
        if not isinstance(value, dict):
            return f"{path} is {kind_of(value)}, not an object"
        for name, item in value.items():
            if len(name) > self.max_chars:
                return (
                    f"{path} has a {self.noun} of {len(name)} characters (at most {self.max_chars})"
                )
            problem = self.item(item, f"{path}[{quoted(name)}]")
            if problem:
                return problem
        return None

    def schema(self) -> JsonObject:
        names: JsonObject = {"maxLength": self.max_chars}
        return {
            "type": "object",
            "propertyNames": names,
            "additionalProperties": self.item.schema(),
        }


@dataclass(frozen=True, slots=True)
class Fields:
    """An object whose keys follow the rules of the dataclass `cls`'s fields (a required field
    must be there; keys no field names are not read, so not checked), or null when `null`."""

    cls: type
    null: bool = False

    def __call__(self, value: object, path: str) -> str | None:
        if value is None and self.null:
            return None
        if not isinstance(value, dict):
            return f"{path} is {kind_of(value)}, not an object"
        return field_problem(value, self.cls, lambda key: f"{path}.{key}")

    def schema(self) -> JsonObject:
        return {"$ref": f"#/$defs/{self.cls.__name__}"}


def field_rules(cls: type) -> dict[str, Rule]:
    """The rules of `cls`'s fields, in their declared order (a field without one is left out)."""
    return {
        spec.name: spec.metadata[RULE] for spec in dataclasses.fields(cls) if RULE in spec.metadata
    }


def required_fields(cls: type) -> tuple[str, ...]:
    """The fields of `cls` a document must hold (those without a default)."""
    missing = dataclasses.MISSING
    return tuple(
        spec.name
        for spec in dataclasses.fields(cls)
        if spec.default is missing and spec.default_factory is missing
    )


def field_problem(
    value: Mapping[str, JsonValue],
    cls: type,
    where: Callable[[str], str],
    *,
    skip: Iterable[str] = (),
) -> str | None:
    """The first problem of the object `value` read as `cls`: a required field missing, then
    each field's rule in declared order; `where(key)` names a field in the message."""
    skipped = set(skip)
    for name in required_fields(cls):
        if name not in value and name not in skipped:
            return f"{where(name)} is missing"
    return first_problem(
        (where(key), value[key], rule)
        for key, rule in field_rules(cls).items()
        if key in value and key not in skipped
    )
