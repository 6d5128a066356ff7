"""The profiler's experimental options: what this torch knows of them, and nothing it does not."""

from __future__ import annotations

from typing import Any

import pytest
import torch._C._profiler as torch_profiler

from libreyolo.measure.window import profiler_options


class _Config:
    """Stands in for `_ExperimentalConfig`: records its keyword arguments."""

    def __init__(self, **options: Any) -> None:
        self.options = options


def _torch_knows(monkeypatch: pytest.MonkeyPatch, signature: str) -> None:
    fake = type("_ExperimentalConfig", (_Config,), {})
    fake.__init__.__doc__ = signature  # type: ignore[misc]
    monkeypatch.setattr(torch_profiler, "_ExperimentalConfig", fake)


NEW = "__init__(self, verbose: bool = False, disable_external_correlation: bool = False, trace_only: bool = False)"  # noqa: E501
OLD = "__init__(self, verbose: bool = False, disable_external_correlation: bool = False)"


@pytest.mark.parametrize(
    ("signature", "device", "expected"),
    [
        (NEW, "cpu", {"trace_only": True, "disable_external_correlation": True}),
        (NEW, "cuda", {"trace_only": True, "disable_external_correlation": False}),
        (OLD, "cpu", {"disable_external_correlation": True}),
        ("__init__(self, verbose: bool = False)", "cpu", {}),
    ],
)
def test_only_the_options_this_torch_knows_are_passed(
    signature: str, device: str, expected: dict[str, bool], monkeypatch: pytest.MonkeyPatch
) -> None:
    _torch_knows(monkeypatch, signature)
    assert profiler_options(device).options == expected


def test_this_torch_takes_both_options() -> None:
    """torch 2.14: trace only, and no external correlation without CUDA (its state tuple)."""
    state = profiler_options("cpu").__getstate__()
    assert state[6] is True and state[-1] is True
    assert profiler_options("cuda").__getstate__()[6] is False
