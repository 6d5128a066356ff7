"""The built-in step and dataset run with 1.6.0's training keys as resolved: the optimizer and
its settings, the EMA, the augmentation rates and ranges, the no-augmentation phase."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from libreyolo.workload.data.augment import AugmentConfig, with_keys
from libreyolo.workload.family import TrainOptions, Workload
from libreyolo.workload.train import FOREACH_UPDATES, build_optimizer
from libreyolo.workload.train_keys import family_keys, resolve
from libreyolo.workload.yolo9.family import WORKLOAD as YOLO9
from libreyolo.workload.yolo9.model import YOLOv9
from libreyolo.workload.yolox.data import YOLOX_AUGMENT
from libreyolo.workload.yolox.family import WORKLOAD as YOLOX

NC = 3
CPU = torch.device("cpu")


def _options(family: str, **user: object) -> TrainOptions:
    return TrainOptions(keys=resolve(family, user).keys)


def test_the_familys_defaults_leave_its_pipeline_as_it_was() -> None:
    assert with_keys(YOLOX_AUGMENT, family_keys("yolox")) == YOLOX_AUGMENT
    yolo9 = with_keys(AugmentConfig(), family_keys("yolo9"))
    # U(0.5, 1.5) as a range is U(1 - 0.5, 1 + 0.5): the same draw from the same generator
    assert yolo9.scale_range == (0.5, 1.5) and AugmentConfig().scale == 0.5
    assert yolo9.mixup is False  # its rate is 1.6.0's 0.0; no MixUp in this pipeline
    assert dataclasses.replace(yolo9, scale_range=None, mixup_prob=1.0) == AugmentConfig()


def test_keys_reach_the_augmentation() -> None:
    keys = resolve(
        "yolox",
        {
            "mosaic_prob": 0.5,
            "mixup_prob": 0.25,
            "hsv_prob": 0.75,
            "flip_prob": 0.0,
            "degrees": 3.0,
            "translate": 0.05,
            "shear": 1.0,
            "mosaic_scale": (0.6, 1.4),
            "mixup_scale": (0.4, 1.2),
        },
    ).keys
    got = with_keys(YOLOX_AUGMENT, keys)
    assert (got.mosaic, got.mosaic_prob, got.mixup, got.mixup_prob) == (True, 0.5, True, 0.25)
    assert (got.hsv_prob, got.flip_prob, got.degrees, got.translate, got.shear) == (
        0.75,
        0.0,
        3.0,
        0.05,
        1.0,
    )
    assert (got.scale_range, got.mixup_scale) == ((0.6, 1.4), (0.4, 1.2))
    closed = with_keys(YOLOX_AUGMENT, dataclasses.replace(keys, no_aug_phase=True))
    assert closed.mosaic is False and closed == dataclasses.replace(got, mosaic=False)


@pytest.mark.parametrize("name", ["adam", "adamw"])
def test_adam_and_adamw_as_1_6_0_builds_them(name: str) -> None:
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4))
    optimizer = build_optimizer(model, name, lr0=0.002, weight_decay=0.001)
    assert type(optimizer) is {"adam": torch.optim.Adam, "adamw": torch.optim.AdamW}[name]
    groups = optimizer.param_groups
    # 1.6.0's three groups: norm weights, other weights (decayed), biases; lr only, torch's betas
    assert [g["weight_decay"] for g in groups] == [0.0, 0.001, 0.0]
    assert [len(g["params"]) for g in groups] == [1, 1, 2]
    assert all(g["lr"] == 0.002 and g["betas"] == (0.9, 0.999) for g in groups)
    assert all(g["fused"] is None and g["foreach"] is None for g in groups)  # CPU: not fused
    variant = build_optimizer(model, name, foreach=True)
    assert all(g["foreach"] is True for g in variant.param_groups)


@pytest.mark.parametrize("family", ["yolo9", "yolox"])
def test_the_step_runs_with_the_keys(family: str) -> None:
    workload: Workload = YOLO9 if family == "yolo9" else YOLOX
    model = workload.build("t" if family == "yolo9" else "n", NC, for_training=True)
    options = _options(
        family, optimizer="adamw", lr0=0.002, weight_decay=0.001, ema=False, nesterov=False
    )
    step = workload.train_step(model, device=CPU, amp=False, options=options)
    optimizer = step.optimizer  # type: ignore[attr-defined]
    assert type(optimizer) is torch.optim.AdamW and step.ema is None  # type: ignore[attr-defined]
    assert [g["weight_decay"] for g in optimizer.param_groups] == [0.0, 0.001, 0.0]
    sgd = workload.train_step(
        model, device=CPU, amp=False, options=_options(family, momentum=0.8, nesterov=False)
    )
    group = sgd.optimizer.param_groups[0]  # type: ignore[attr-defined]
    assert (group["momentum"], group["nesterov"]) == (0.8, False)
    decay = 0.999
    options = _options(family, ema_decay=decay)
    ema = workload.train_step(model, device=CPU, amp=False, options=options)
    assert ema.ema.decay == decay  # type: ignore[attr-defined]


def test_yolox_no_aug_phase_turns_its_l1_loss_on() -> None:
    model = YOLOX.build("n", NC, for_training=True)
    keys = dataclasses.replace(family_keys("yolox"), no_aug_phase=True)
    step = YOLOX.train_step(model, device=CPU, amp=False, options=TrainOptions(keys=keys))
    assert step.use_l1 is True  # type: ignore[attr-defined]
    assert YOLOX.train_step(model, device=CPU, amp=False).use_l1 is False  # type: ignore[attr-defined]


def test_the_foreach_variant_is_not_offered_for_a_fused_optimizer() -> None:
    """On the CPU AdamW is not fused, so the variant is a lever as for SGD; its trial flips only
    `foreach` and leaves the step as it ran."""
    model = YOLOv9("t", NC)
    options = TrainOptions(keys=resolve("yolo9", {"optimizer": "adamw"}).keys)
    step = YOLO9.train_step(model, device=CPU, amp=False, options=options)
    from libreyolo.workload.train import foreach_pair

    pairs = foreach_pair(step)  # type: ignore[arg-type]
    assert [p.variant for p in pairs] == [FOREACH_UPDATES]
    assert pairs[0].part == "the weight update (AdamW step and EMA, as 1.6.0 runs them)"
    pairs[0].with_variant()
    assert all(g["foreach"] is None for g in step.optimizer.param_groups)  # type: ignore[attr-defined]


def test_a_yolov9_loaded_for_inference_trains_with_1_6_0s_pgi_branch() -> None:
    """1.6.0 attaches PGI to every new YOLOv9 run (aux_weight 0.25); a checkpoint's model is
    loaded without it, so the step attaches it: the trained convolutions are 1.6.0's."""
    from tests.fixture_files import YOLO9T, fixture_file

    model = YOLO9.load(fixture_file(YOLO9T), size=None, device=CPU)
    assert model.aux is None  # type: ignore[union-attr]
    convs = sum(isinstance(m, torch.nn.Conv2d) for m in model.modules())
    step = YOLO9.train_step(model, device=CPU, amp=False)
    assert model.aux is not None and model.aux_head is not None  # type: ignore[union-attr]
    assert (convs, sum(isinstance(m, torch.nn.Conv2d) for m in model.modules())) == (227, 303)
    assert step.loss.aux_weight == 0.25  # type: ignore[attr-defined]
    trained = {id(p) for g in step.optimizer.param_groups for p in g["params"]}  # type: ignore[attr-defined]
    assert all(id(p) in trained for p in model.aux_head.parameters())  # type: ignore[union-attr]
    outputs = model(YOLO9.probe_batch(1, 64, 80).images)
    assert outputs.aux is not None  # type: ignore[union-attr]
    # aux_weight=0: the main head only, as 1.6.0 trains then
    YOLO9.train_step(model, device=CPU, amp=False, options=_options("yolo9", aux_weight=0.0))
    assert model.aux is None and model.aux_head is None  # type: ignore[union-attr]
