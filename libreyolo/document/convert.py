"""Validate plain JSON data (what `json.loads` returns) into the document's structs.

Every key is checked against its annotation; the first mismatch raises `ConversionError` with
one line in msgspec's wording: "Expected `str`, got `int` - at `$.run.mode`". A struct is
built by `msgspec.convert` first, and checked here only when msgspec refuses it. Unknown keys
are ignored so that additive schema changes stay readable. `JsonValue` (free-form JSON, such as a
sweep point's config) is taken as it is: whatever `json.loads` returned is JSON.

`to_plain` is the way back: a document's structs as plain JSON data, each field in its
declared order (or every object's keys sorted). A dataclass field whose metadata names an
`OMIT_GROUP` is left out, with the rest of its group, while every field of the group still
holds its default: `status.json` says `reused` only when it is true, and a sweep row carries
its timing only when its point recorded some.

The profile's classes are `msgspec.Struct`s; the sweep's files are still dataclasses, whose
module is imported only when one is converted (a profile reader never pays for it). Must not
do I/O.
"""

from __future__ import annotations

import enum
import functools
import types
import typing
from collections.abc import Callable
from typing import Any, ForwardRef, Literal, TypeVar, Union, get_args, get_origin

import msgspec

from libreyolo.document.json_value import JsonValue

T = TypeVar("T")
OMIT_GROUP = "libreyolo.omit_group"  # a field's metadata key: written only with its group
_JSON_REF = "JsonValue"  # json_value's recursive alias, unresolved below its first level
_JSON_NAMES = {
    str: "str",
    int: "int",
    float: "float",
    bool: "bool",
    type(None): "null",
    list: "array",
    dict: "object",
}


class ConversionError(ValueError):
    """Data that does not fit the document's types."""


def _name(value: object) -> str:
    return _JSON_NAMES.get(type(value), type(value).__name__)


def _at(path: str) -> str:
    return "" if path == "$" else f" - at `{path}`"


def _fail(expected: str, value: object, path: str) -> ConversionError:
    return ConversionError(f"Expected `{expected}`, got `{_name(value)}`{_at(path)}")


@functools.cache
def _hints(cls: type) -> dict[str, object]:
    module = __import__(cls.__module__, fromlist=["_"])
    # JsonObject's inner references name JsonValue: resolvable whatever the module imported
    return typing.get_type_hints(cls, {_JSON_REF: JsonValue, **vars(module)})


Check = Callable[[Any, str], Any]


def convert(value: Any, kind: Any, path: str = "$") -> Any:
    """`value` checked (and, for structs and dataclasses, built) as the annotation `kind`."""
    if path == "$" and isinstance(kind, type) and issubclass(kind, msgspec.Struct):
        # msgspec takes what the checks below take, in C (a reader's start-up pays a
        # tenth); what it refuses goes through them, for the error's path in this module's
        # wording (dict keys as `.key`), or for the few values it refuses and they take
        # (integers over 64 bits).
        try:
            return msgspec.convert(value, kind)
        except msgspec.ValidationError:
            pass
    return _plan(kind)(value, path)


@functools.cache
def _plan(kind: Any) -> Check:
    """A checker for one annotation, built once per type: reading a profile checks thousands
    of values, and re-inspecting the annotation for each would dominate a reader's start-up."""
    if kind is Any or (isinstance(kind, ForwardRef) and kind.__forward_arg__ == _JSON_REF):
        return lambda value, path: value
    if _is_record(kind):
        return _record_plan(kind)
    origin, args = get_origin(kind), get_args(kind)
    if origin in (Union, types.UnionType):
        return _union_plan(args)
    if origin is Literal:
        return _literal_plan(args)
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        return _enum_plan(kind)
    if origin is list:
        item = _plan(args[0])
        return lambda value, path: [
            item(v, f"{path}[{i}]") for i, v in enumerate(_is(value, list, "array", path))
        ]
    if origin is dict:
        item = _plan(args[1])
        return lambda value, path: {
            str(k): item(v, f"{path}.{k}") for k, v in _is(value, dict, "object", path).items()
        }
    return functools.partial(_primitive, kind=kind)


def _is(value: Any, kind: type, name: str, path: str) -> Any:
    if not isinstance(value, kind):
        raise _fail(name, value, path)
    return value


def _literal_plan(allowed: tuple[Any, ...]) -> Check:
    def check(value: Any, path: str) -> Any:
        if not any(type(value) is type(option) for option in allowed):
            raise _fail(_name(allowed[0]), value, path)
        if value not in allowed:
            raise ConversionError(f"Invalid enum value {value!r}{_at(path)}")
        return value

    return check


def _enum_plan(cls: type[enum.Enum]) -> Check:
    """An enum is stored as its members' values (a StrEnum's strings), and read back as the
    member, so the code compares members and the file keeps plain strings."""
    check_value = _literal_plan(tuple(member.value for member in cls))
    return lambda value, path: cls(check_value(value, path))


def _primitive(value: Any, path: str, *, kind: Any) -> Any:
    if kind is type(None) or kind is None:
        if value is None:
            return None
        raise _fail("null", value, path)
    if kind is float and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if kind is int and isinstance(value, int) and not isinstance(value, bool):
        return value
    if kind in (str, bool) and isinstance(value, kind):
        return value
    raise _fail(_JSON_NAMES.get(kind, getattr(kind, "__name__", str(kind))), value, path)


def _union_plan(options: tuple[Any, ...]) -> Check:
    checks = {option: _plan(option) for option in options}
    names = " | ".join(_JSON_NAMES.get(o, getattr(o, "__name__", str(o))) for o in options)

    def check(value: Any, path: str) -> Any:
        exact = checks.get(type(value))  # keep ints ints in `float | int`
        order = ([exact] if exact else []) + [c for c in checks.values() if c is not exact]
        for option in order:
            try:
                return option(value, path)
            except ConversionError:
                continue
        raise _fail(names, value, path)

    return check


def _is_record(kind: Any) -> bool:
    """A struct or a dataclass (what `dataclasses.is_dataclass` tests, without its import)."""
    return isinstance(kind, type) and (
        issubclass(kind, msgspec.Struct) or hasattr(kind, "__dataclass_fields__")
    )


def _specs(cls: Any) -> list[tuple[str, bool]]:
    """Each field of the struct or dataclass `cls`, in declared order, and whether a document
    must hold it (it has no default)."""
    if issubclass(cls, msgspec.Struct):
        names, defaults = cls.__struct_fields__, cls.__struct_defaults__
        first = len(names) - len(defaults)  # the defaults are the last fields'
        return [
            (name, i < first or defaults[i - first] is msgspec.NODEFAULT)
            for i, name in enumerate(names)
        ]
    import dataclasses

    missing = dataclasses.MISSING
    return [
        (spec.name, spec.default is missing and spec.default_factory is missing)
        for spec in dataclasses.fields(cls)
    ]


def _record_plan(cls: Any) -> Check:
    hints = _hints(cls)
    specs = _specs(cls)
    checks = {name: _plan(hints[name]) for name, _ in specs}

    def build(value: Any, path: str) -> Any:
        _is(value, dict, "object", path)
        kwargs: dict[str, object] = {}
        for name, required in specs:
            if name in value:
                kwargs[name] = checks[name](value[name], f"{path}.{name}")
            elif required:
                raise ConversionError(f"Object missing required field `{name}`{_at(path)}")
        return cls(**kwargs)

    return build


def _omitted(obj: Any) -> set[str]:
    """The fields of the dataclass `obj` to leave out: those of each group whose every field
    holds its default."""
    import dataclasses

    groups: dict[str, list[tuple[str, bool]]] = {}
    for spec in dataclasses.fields(obj):
        group = spec.metadata.get(OMIT_GROUP)
        if group is not None:
            if spec.default_factory is not dataclasses.MISSING:
                unset = getattr(obj, spec.name) == spec.default_factory()
            else:
                unset = getattr(obj, spec.name) == spec.default
            groups.setdefault(group, []).append((spec.name, unset))
    return {
        name for members in groups.values() if all(u for _, u in members) for name, _ in members
    }


def to_plain(value: object, *, sort_keys: bool = False) -> JsonValue:
    """`value` (structs, dataclasses, lists, dicts of them, JSON scalars) as plain JSON data."""
    if isinstance(value, msgspec.Struct):
        items: dict[str, JsonValue] = {
            name: to_plain(getattr(value, name), sort_keys=sort_keys)
            for name in value.__struct_fields__
        }
        return dict(sorted(items.items())) if sort_keys else items
    if _is_record(type(value)):
        left_out = _omitted(value)
        items = {
            name: to_plain(getattr(value, name), sort_keys=sort_keys)
            for name, _ in _specs(type(value))
            if name not in left_out
        }
        return dict(sorted(items.items())) if sort_keys else items
    if isinstance(value, dict):
        pairs = sorted(value.items()) if sort_keys else value.items()
        return {str(k): to_plain(v, sort_keys=sort_keys) for k, v in pairs}
    if isinstance(value, list | tuple):
        return [to_plain(v, sort_keys=sort_keys) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    raise TypeError(f"cannot write {type(value).__name__} as JSON")
