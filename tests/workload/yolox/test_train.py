"""The YOLOX training step: 1.6.0's schedule, EMA ramp, optimiser groups, phases and a real step.

Most tests use a stand-in model (train-mode shaped outputs from convolutions) and a stand-in loss
with YOLOXLoss's call signature; the last one needs `libreyolo.workload.yolox.model.YOLOX` and
`libreyolo.workload.yolox.loss.YOLOXLoss` and is skipped while they are absent.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import torch
from torch import Tensor, nn

from libreyolo.errors import UsageError
from libreyolo.workload.data.dataset import Sample
from libreyolo.workload.data.loader import Batch
from libreyolo.workload.train import PHASES, ModelEMA
from libreyolo.workload.yolox.data import collate
from libreyolo.workload.yolox.train import (
    EMA_DECAY,
    WarmCos,
    YOLOXTrainStep,
    warmcos_lr,
    warmcos_schedule,
)

NC = 3


class StandInYOLOX(nn.Module):
    """Three levels (strides 8, 16, 32) of (B, 5 + nc, H/s, W/s) raw outputs, with a BN."""

    nc, strides = NC, (8, 16, 32)

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, 8, 3, stride=8, padding=1, bias=False), nn.BatchNorm2d(8), nn.SiLU()
        )
        self.down = nn.ModuleList(nn.Conv2d(8, 8, 3, stride=2, padding=1) for _ in range(2))
        self.heads = nn.ModuleList(nn.Conv2d(8, 5 + NC, 1) for _ in range(3))

    def forward(self, x: Tensor) -> list[Tensor]:
        feats = [self.stem(x / 255.0)]
        for down in self.down:
            feats.append(down(feats[-1]))
        return [head(f) for head, f in zip(self.heads, feats, strict=True)]


class StandInLoss:
    """YOLOXLoss's call signature: (outputs, (B, 50, 5) targets) -> (total, parts)."""

    def __init__(self, use_l1: bool = False) -> None:
        self.use_l1 = use_l1
        self.calls: list[tuple[list[Tensor], Tensor]] = []

    def __call__(self, outputs: list[Tensor], targets: Tensor) -> tuple[Tensor, dict[str, Tensor]]:
        self.calls.append((outputs, targets))
        num_fg = (targets.abs().sum(-1) > 0).sum().clamp(min=1).float()
        iou = sum(o[:, :4].float().square().mean() for o in outputs)
        obj = sum(o[:, 4].float().sigmoid().mean() for o in outputs)
        cls = sum(o[:, 5:].float().sigmoid().mean() for o in outputs)
        l1 = sum(o[:, :4].float().abs().mean() for o in outputs) if self.use_l1 else iou * 0
        assert isinstance(iou, Tensor) and isinstance(obj, Tensor) and isinstance(cls, Tensor)
        assert isinstance(l1, Tensor)
        total = 5 * iou + obj + cls + l1
        parts = {"iou": iou, "obj": obj, "cls": cls, "l1": l1, "num_fg": num_fg}
        return total, {k: v.detach() for k, v in parts.items()}


def tiny_batch(size: int = 64) -> Batch:
    gen = torch.Generator().manual_seed(0)
    samples = [
        Sample(
            torch.randint(0, 256, (3, size, size), dtype=torch.uint8, generator=gen),
            torch.tensor([[4.0, 6.0, 30.0, 40.0], [20.0, 20.0, 60.0, 50.0]]),
            torch.tensor([0, 2]),
            f"{i}.jpg",
        )
        for i in range(2)
    ]
    return collate(samples)


def make_step(**kwargs: object) -> YOLOXTrainStep:
    torch.manual_seed(0)
    kwargs.setdefault("loss", StandInLoss())
    return YOLOXTrainStep(StandInYOLOX(), **kwargs)  # type: ignore[arg-type]


# yoloxwarmcos, training/scheduler.py:52-72, lr0 0.01, start 0, min ratio 0.05 -> min lr 5e-4.
SCHEDULE = WarmCos(total_iters=100, warmup_iters=10, plateau_iters=20)


@pytest.mark.parametrize(
    ("iteration", "lr"),
    [
        (0, 0.0),  # warm-up starts at warmup_lr_start = 0 (config.py:510)
        (5, 0.0025),  # quadratic: 0.01 * (5 / 10)^2
        (10, 0.01),  # end of warm-up (i <= warmup is still warm-up): lr0
        (45, 0.00525),  # mid-cosine, (45 - 10) / 70 = 1/2: 5e-4 + 0.5 * 9.5e-3 * (1 + cos(pi/2))
        (80, 0.0005),  # plateau from total - plateau on: min lr
        (99, 0.0005),  # the last iteration
    ],
)
def test_warmcos_values(iteration: int, lr: float) -> None:
    assert warmcos_lr(iteration, 0.01, SCHEDULE) == pytest.approx(lr, abs=1e-12)


def test_warmcos_without_plateau_ends_near_min() -> None:
    # i = 99 of 100, warm-up 10: 5e-4 + 0.5 * 9.5e-3 * (1 + cos(pi * 89 / 90))
    # = 5e-4 + 4.75e-3 * (1 - 0.99939083) = 5.028936e-4.
    schedule = WarmCos(total_iters=100, warmup_iters=10)
    assert warmcos_lr(99, 0.01, schedule) == pytest.approx(5.028936e-4, rel=1e-6)
    assert warmcos_lr(0, 0.01, WarmCos(total_iters=10, warmup_iters=0)) == pytest.approx(0.01)


def test_warmcos_schedule_uses_1_6_0_epochs() -> None:
    # 300 epochs (config.py:123), warm-up 5 and no-aug 15 (config.py:509-511), 0 and 0.05.
    s = warmcos_schedule(10)
    assert (s.total_iters, s.warmup_iters, s.plateau_iters) == (3000, 50, 150)
    assert (s.warmup_lr_start, s.min_lr_ratio) == (0.0, 0.05)
    with pytest.raises(UsageError):
        WarmCos(total_iters=10, warmup_iters=5, plateau_iters=5)


def test_ema_decay_and_ramp_are_1_6_0s() -> None:
    # ema_decay 0.9998 (config.py:517), tau 2000 (training/trainer.py:1925); training/ema.py:
    # updates += 1 first, then d = decay * (1 - exp(-updates / tau)).
    step = make_step()
    assert step.ema is not None and EMA_DECAY == 0.9998
    assert (step.ema.decay, step.ema.tau) == (0.9998, 2000.0)
    ema = ModelEMA(nn.Linear(1, 1), decay=EMA_DECAY)
    assert ema.current_decay() == pytest.approx(0.9998 * (1 - math.exp(-1 / 2000)))  # 4.998e-4
    ema.updates = 1999
    assert ema.current_decay() == pytest.approx(0.9998 * (1 - math.exp(-1)))  # 0.632
    ema.updates = 100_000
    assert ema.current_decay() == pytest.approx(0.9998, abs=1e-12)


def test_optimizer_is_1_6_0s_sgd() -> None:
    step = make_step()
    groups = step.optimizer.param_groups
    # trainer.py _setup_optimizer: pg0 BN weights (no decay), pg1 weights (5e-4), pg2 biases.
    assert [g["weight_decay"] for g in groups] == [0.0, 5e-4, 0.0]
    assert [len(g["params"]) for g in groups] == [1, 6, 6]
    assert all(g["momentum"] == 0.9 and g["nesterov"] for g in groups)
    assert step.lr == 0.01 and step.amp_effective is False  # no lr x batch scaling in 1.6.0


def test_schedule_is_applied_per_iteration() -> None:
    step = make_step(warmup_iters=4, total_iters=20)
    assert step.lr == 0.0  # iteration 0 of the warm-up
    batch = tiny_batch()
    step.step(batch)
    assert step.lr == pytest.approx(0.01 * (1 / 4) ** 2)
    assert all(g["lr"] == step.lr for g in step.optimizer.param_groups)
    with pytest.raises(UsageError):
        make_step(warmup_iters=4)


class PhaseLog:
    def __init__(self) -> None:
        self.names: list[str] = []

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        self.names.append(name)
        yield


def test_one_cpu_step_learns_in_four_phases() -> None:
    loss = StandInLoss()
    step = make_step(loss=loss)
    before = [p.detach().clone() for p in step.model.parameters()]
    log = PhaseLog()
    losses = step.step(tiny_batch(), log)
    assert log.names == list(PHASES) == ["to_device", "forward", "backward", "optimizer"]
    assert set(losses) == {"total", "iou", "obj", "cls", "l1", "num_fg"}
    assert all(math.isfinite(v) for v in losses.values())
    assert losses["num_fg"] == 4.0
    assert any(not torch.equal(a, b) for a, b in zip(before, step.model.parameters(), strict=True))
    outputs, targets = loss.calls[0]
    assert [tuple(o.shape) for o in outputs] == [
        (2, 5 + NC, 8, 8),
        (2, 5 + NC, 4, 4),
        (2, 5 + NC, 2, 2),
    ]
    assert targets.shape == (2, 50, 5)
    assert step.amp_effective is False and not step.scaler.is_enabled()
    assert step.ema is not None and step.ema.updates == 1 and step.iteration == 1


def test_use_l1_switch_reaches_the_loss() -> None:
    loss = StandInLoss()
    step = make_step(loss=loss)
    assert step.use_l1 is False
    step.use_l1 = True  # 1.6.0's on_mosaic_disable: head.use_l1 = True
    assert loss.use_l1 is True
    assert step.step(tiny_batch())["l1"] > 0


def test_real_yolox_and_loss_step() -> None:
    """Needs libreyolo.workload.yolox.model.YOLOX and .loss.YOLOXLoss (other helpers' modules)."""
    model_module = pytest.importorskip("libreyolo.workload.yolox.model")
    pytest.importorskip("libreyolo.workload.yolox.loss")  # the step builds YOLOXLoss itself
    torch.manual_seed(0)
    step = YOLOXTrainStep(model_module.YOLOX("n", nc=NC), channels_last=False)
    log = PhaseLog()
    losses = step.step(tiny_batch(), log)
    assert log.names == list(PHASES)
    assert all(math.isfinite(losses[k]) for k in ("total", "iou", "obj", "cls"))
    assert losses["num_fg"] > 0
