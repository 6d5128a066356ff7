"""`cuda:N` becomes the current device before anything touches CUDA, so nothing lands on GPU 0."""

from __future__ import annotations

import pytest
import torch

import libreyolo.measure.infer as infer_collector
import libreyolo.measure.train as train_collector
from libreyolo.config.schema import mode_defaults
from libreyolo.measure.device import select_device


class _Stop(Exception):
    """Ends a collector right after it selected its device."""


def test_a_cuda_device_becomes_current_and_the_cpu_touches_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[torch.device] = []
    monkeypatch.setattr(torch.cuda, "set_device", calls.append)
    select_device(torch.device("cpu"))
    assert calls == []
    select_device(torch.device("cuda", 1))
    assert calls == [torch.device("cuda", 1)]


@pytest.mark.parametrize(
    ("collector", "run"),
    [
        (
            train_collector,
            lambda: train_collector.profile_training(mode_defaults("run")),
        ),
        (
            infer_collector,
            lambda: infer_collector.profile_inference(mode_defaults("infer")),
        ),
    ],
)
def test_collectors_select_the_device_before_loading_anything(
    monkeypatch: pytest.MonkeyPatch, collector: object, run: object
) -> None:
    selected: list[torch.device] = []

    def select(device: torch.device) -> None:
        selected.append(device)
        raise _Stop

    def no_loading(*args: object, **kwargs: object) -> None:
        raise AssertionError("loaded before the device was selected")

    monkeypatch.setattr(collector, "resolve_device", lambda spec: torch.device("cuda", 1))
    monkeypatch.setattr(collector, "select_device", select)
    monkeypatch.setattr("libreyolo.workload.api.load_workload_model", no_loading)
    with pytest.raises(_Stop):
        run()  # type: ignore[operator]
    assert selected == [torch.device("cuda", 1)]
