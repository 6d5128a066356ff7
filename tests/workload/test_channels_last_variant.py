"""1.6.0 trains NCHW; NHWC is this package's `channels_last` variant: off by default in both
families, on with the variant, and timed as a lever (the forward and backward with the loss,
both layouts, on one batch) when a step runs NCHW."""

from __future__ import annotations

import pytest
import torch

from libreyolo.workload.family import TrainOptions, Workload
from libreyolo.workload.train import CHANNELS_LAST
from libreyolo.workload.yolo9.family import WORKLOAD as YOLO9
from libreyolo.workload.yolox.family import WORKLOAD as YOLOX

NC = 3
CPU = torch.device("cpu")
FAMILIES = {"yolo9": (YOLO9, "t"), "yolox": (YOLOX, "n")}


def _step(family: str, options: TrainOptions | None = None) -> object:
    workload, size = FAMILIES[family]
    model = workload.build(size, NC, for_training=True)
    if options is None:
        return workload.train_step(model, device=CPU, amp=False)
    return workload.train_step(model, device=CPU, amp=False, options=options)


def _convs_nhwc(step: object) -> list[bool]:
    model = step.model  # type: ignore[attr-defined]
    # NHWC: the input-channel stride is 1 (checked where a layout shows: more than one input
    # channel and a kernel wider than 1; depthwise weights read the same either way)
    return [
        m.weight.stride()[1] == 1
        for m in model.modules()
        if isinstance(m, torch.nn.Conv2d) and m.weight.shape[1] > 1 and m.weight.shape[-1] > 1
    ]


@pytest.mark.parametrize("family", list(FAMILIES))
def test_the_default_is_1_6_0s_nchw_and_the_variant_is_nhwc(family: str) -> None:
    assert not any(_convs_nhwc(_step(family)))
    variant = _step(family, TrainOptions(variants=frozenset({CHANNELS_LAST})))
    assert all(_convs_nhwc(variant))


@pytest.mark.parametrize("family", list(FAMILIES))
def test_an_nchw_step_offers_the_layout_pair_and_stays_nchw(family: str) -> None:
    workload: Workload = FAMILIES[family][0]
    step = _step(family)
    batch = workload.probe_batch(2, 64, NC, boxes_per_image=2)
    pairs = {p.variant: p for p in step.variant_pairs(batch)}  # type: ignore[attr-defined]
    assert pairs[CHANNELS_LAST].part == (
        "the forward and backward with the loss, NCHW as 1.6.0 runs them"
    )
    pairs[CHANNELS_LAST].as_run()
    pairs[CHANNELS_LAST].with_variant()
    model = step.model  # type: ignore[attr-defined]
    assert all(p.grad is None for p in model.parameters())  # each pass drops its gradients
    assert not any(_convs_nhwc(step))  # the step's own model keeps its layout
    nhwc = _step(family, TrainOptions(variants=frozenset({CHANNELS_LAST})))
    offered = {p.variant for p in nhwc.variant_pairs(batch)}  # type: ignore[attr-defined]
    assert CHANNELS_LAST not in offered


def test_both_layouts_compute_the_same_outputs() -> None:
    nchw = _step("yolo9")
    nhwc = _step("yolo9", TrainOptions(variants=frozenset({CHANNELS_LAST})))
    nhwc.model.load_state_dict(nchw.model.state_dict())  # type: ignore[attr-defined]
    images = YOLO9.probe_batch(2, 64, NC).images
    nchw.model.eval()  # type: ignore[attr-defined]  # batch statistics of 2 tiny maps amplify
    nhwc.model.eval()  # type: ignore[attr-defined]  # the last bits; running ones do not
    with torch.no_grad():
        maps = nchw.model(images)  # type: ignore[attr-defined]
        same = nhwc.model(images.contiguous(memory_format=torch.channels_last))  # type: ignore[attr-defined]
    torch.testing.assert_close(maps, same, rtol=1e-4, atol=1e-4)  # summation order only
