"""Validate plain JSON data into the document's dataclasses (stdlib only, no JSON library).

Every key is checked against its annotation; the first mismatch raises `ConversionError` with
one line in msgspec's wording: "Expected `str`, got `int` - at `$.run.mode`". Unknown keys are
ignored so that additive schema changes stay readable. Must not do I/O.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

T = TypeVar("T")
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
def _hints(cls: type) -> dict[str, Any]:
    module = __import__(cls.__module__, fromlist=["_"])
    return typing.get_type_hints(cls, vars(module))


def convert(value: Any, kind: Any, path: str = "$") -> Any:
    """`value` checked (and, for dataclasses, built) as the annotation `kind`."""
    if kind is Any:
        return value
    if dataclasses.is_dataclass(kind):
        return _dataclass(value, kind, path)  # type: ignore[arg-type]
    origin = get_origin(kind)
    if origin in (Union, types.UnionType):
        return _union(value, get_args(kind), path)
    if origin is Literal:
        allowed = get_args(kind)
        if not any(type(value) is type(option) for option in allowed):
            raise _fail(_name(allowed[0]), value, path)
        if value not in allowed:
            raise ConversionError(f"Invalid enum value {value!r}{_at(path)}")
        return value
    if origin is list:
        if not isinstance(value, list):
            raise _fail("array", value, path)
        (item,) = get_args(kind)
        return [convert(v, item, f"{path}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise _fail("object", value, path)
        _, item = get_args(kind)
        return {str(k): convert(v, item, f"{path}.{k}") for k, v in value.items()}
    return _primitive(value, kind, path)


def _primitive(value: Any, kind: Any, path: str) -> Any:
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


def _union(value: Any, options: tuple[Any, ...], path: str) -> Any:
    exact = [o for o in options if o is type(value)]  # keep ints ints in `float | int`
    for option in exact + [o for o in options if o not in exact]:
        try:
            return convert(value, option, path)
        except ConversionError:
            continue
    names = " | ".join(_JSON_NAMES.get(o, getattr(o, "__name__", str(o))) for o in options)
    raise _fail(names, value, path)


def _dataclass(value: Any, cls: type[T], path: str) -> T:
    if not isinstance(value, dict):
        raise _fail("object", value, path)
    hints = _hints(cls)
    kwargs: dict[str, Any] = {}
    for spec in dataclasses.fields(cls):  # type: ignore[arg-type]
        if spec.name in value:
            kwargs[spec.name] = convert(value[spec.name], hints[spec.name], f"{path}.{spec.name}")
        elif spec.default is dataclasses.MISSING and spec.default_factory is dataclasses.MISSING:
            raise ConversionError(f"Object missing required field `{spec.name}`{_at(path)}")
    return cls(**kwargs)
