"""Result kinds are a closed enum: each has one result class, a text view and a JSON view."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import libreyolo.analysis
import libreyolo.render
from libreyolo.analysis.lookup import MetricValue
from libreyolo.analysis.result_kind import ResultKind, kind_of
from libreyolo.render import jsondoc, text


def _result_classes() -> dict[ResultKind, list[str]]:
    """Every class in analysis/ and render/ that declares a `result_kind`, by kind."""
    found: dict[ResultKind, list[str]] = {}
    for package in (libreyolo.analysis, libreyolo.render):
        for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            module = importlib.import_module(info.name)
            for value in vars(module).values():
                if isinstance(value, type) and value.__module__ == module.__name__:
                    kind = vars(value).get("result_kind")
                    if kind is not None:
                        found.setdefault(kind, []).append(f"{module.__name__}.{value.__name__}")
    return found


def test_every_kind_has_a_text_view_and_a_json_view() -> None:
    assert set(text._VIEWS) == set(ResultKind)
    assert set(jsondoc._VIEWS) == set(ResultKind)


def test_every_kind_is_declared_by_exactly_one_result_class() -> None:
    classes = _result_classes()
    assert all(isinstance(kind, ResultKind) for kind in classes), classes
    assert {kind: len(names) for kind, names in classes.items()} == dict.fromkeys(ResultKind, 1)


class _NotAResult:
    pass


class _StringKind:
    result_kind = "summary"  # the right word, but not the enum: refused like an unknown kind


@pytest.mark.parametrize("result", [_NotAResult(), _StringKind()])
def test_an_unknown_kind_fails_loudly(result: object) -> None:
    assert kind_of(result) is None
    name = type(result).__name__
    with pytest.raises(TypeError, match=f"^no text view for {name}$"):
        text.to_lines(result)
    with pytest.raises(TypeError, match=f"^no JSON view for {name}$"):
        jsondoc.to_json_text(result)


def test_a_known_kind_dispatches_to_its_views() -> None:
    value = MetricValue("img_per_s", 12.5)
    assert kind_of(value) is ResultKind.METRIC
    assert text.to_lines(value) == ["12.5"]
    assert jsondoc.to_json_text(value) == '{\n  "img_per_s": 12.5\n}\n'
