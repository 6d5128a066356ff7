"""SGD and the EMA as libreyolo 1.6.0 runs them, and `--variant foreach_updates` as a lever.

1.6.0 builds SGD through `training/optim.py` `build_optimizer`, which never fuses SGD, so torch
picks the implementation (foreach on CUDA, a per-parameter loop on the CPU); its `ModelEMA`
walks both state dicts on every update and loops per tensor off CUDA. The built-in step does the
same by default; the variant makes both one multi-tensor update on every device.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from libreyolo.errors import UsageError
from libreyolo.workload.family import TrainOptions
from libreyolo.workload.train import FOREACH_UPDATES, ModelEMA, foreach_pair
from libreyolo.workload.yolo9.family import WORKLOAD as YOLO9
from libreyolo.workload.yolo9.model import YOLOv9
from libreyolo.workload.yolox.family import WORKLOAD as YOLOX

NC = 3
CPU = torch.device("cpu")
VARIANT = TrainOptions(variants=frozenset({FOREACH_UPDATES}))


def _steps() -> dict[str, object]:
    yolo9 = YOLOv9("t", NC, aux=True)
    yolox = YOLOX.build("n", NC, for_training=True)
    return {
        "yolo9": YOLO9.train_step(yolo9, device=CPU, amp=False),
        "yolo9 variant": YOLO9.train_step(YOLOv9("t", NC), device=CPU, amp=False, options=VARIANT),
        "yolox": YOLOX.train_step(yolox, device=CPU, amp=False),
        "yolox variant": YOLOX.train_step(yolox, device=CPU, amp=False, options=VARIANT),
    }


def test_the_default_is_1_6_0s_implementation_and_the_variant_is_foreach() -> None:
    for name, step in _steps().items():
        variant = name.endswith("variant")
        groups = step.optimizer.param_groups  # type: ignore[attr-defined]
        assert [g["foreach"] for g in groups] == [True if variant else None] * 3, name
        assert all(g["fused"] is None for g in groups), name  # 1.6.0 never fuses SGD
        assert step.ema.foreach is variant, name  # type: ignore[attr-defined]


@pytest.mark.parametrize("foreach", [False, True])
def test_an_ema_update_is_the_decayed_average_of_every_floating_entry(foreach: bool) -> None:
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4))
    ema = ModelEMA(model, decay=0.9, tau=1.0, foreach=foreach)
    before = {k: v.clone() for k, v in ema.module.state_dict().items()}
    with torch.no_grad():
        for param in model.parameters():
            param.add_(1.0)
        model[1].running_mean.add_(2.0)
    decay = ema.current_decay()
    ema.update(model)
    live = model.state_dict()
    for key, value in ema.module.state_dict().items():
        if value.is_floating_point():
            expected = decay * before[key] + (1 - decay) * live[key]
            torch.testing.assert_close(value, expected, rtol=1e-6, atol=1e-6)
        else:  # num_batches_tracked: an integer, never averaged
            assert torch.equal(value, before[key])
    assert ema.updates == 1


def test_the_pair_times_both_ways_and_leaves_the_step_as_it_ran() -> None:
    step = _steps()["yolo9"]
    [pair] = foreach_pair(step)  # type: ignore[arg-type]
    assert (pair.variant, pair.part) == (
        "foreach_updates",
        "the weight update (SGD step and EMA, as 1.6.0 runs them)",
    )
    seen: list[tuple[object, bool]] = []
    optimizer, ema = step.optimizer, step.ema  # type: ignore[attr-defined]
    real_step = optimizer.step

    def spy() -> object:
        seen.append((optimizer.param_groups[0]["foreach"], ema.foreach))
        return real_step()

    optimizer.step = spy
    weight = next(p for p in step.model.parameters() if p.dim() == 4)  # type: ignore[attr-defined]
    start = weight.detach().clone()
    pair.as_run()
    pair.with_variant()
    assert seen == [(None, False), (True, True)]
    assert [g["foreach"] for g in optimizer.param_groups] == [None] * 3 and ema.foreach is False
    assert ema.updates == 2 and not torch.equal(weight, start)  # weight decay moved it


def test_a_step_running_the_variant_has_nothing_left_to_try() -> None:
    steps = _steps()
    assert foreach_pair(steps["yolo9 variant"]) == []  # type: ignore[arg-type]
    batch = YOLO9.probe_batch(1, 64, NC)
    variants = [p.variant for p in steps["yolox"].variant_pairs(batch)]  # type: ignore[attr-defined]
    assert variants == ["channels_last", "foreach_updates"]
    left = steps["yolox variant"].variant_pairs(batch)  # type: ignore[attr-defined]
    assert [p.variant for p in left] == ["channels_last"]  # the layout is another variant


def test_yolox_takes_foreach_updates_but_not_trimmed_targets() -> None:
    yolox = YOLOX.build("n", NC, for_training=True)
    both = TrainOptions(variants=frozenset({FOREACH_UPDATES, "trimmed_targets"}))
    with pytest.raises(UsageError, match="--variant trimmed_targets: yolox has no such variant"):
        YOLOX.train_step(yolox, device=CPU, amp=False, options=both)
