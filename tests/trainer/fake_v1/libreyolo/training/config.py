"""The fake trainer's config: the fields the probe touches (FAKE_WITHOUT=profile_then_stop
leaves that hook point out)."""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(kw_only=True)
class _Config:
    batch: int = 4
    imgsz: int = 64
    epochs: int = 300
    workers: int = 0
    device: str = "cpu"  # 1.x's spelling: cpu, or a CUDA index
    data: str = ""
    fake: str = "ok"
    images: int = 32
    project: str = "runs/train"
    name: str = "exp"
    exist_ok: bool = False


@dataclass(kw_only=True)
class _ConfigWithStop(_Config):
    profile_then_stop: bool = False


TrainConfig = (
    _Config if "profile_then_stop" in os.environ.get("FAKE_WITHOUT", "") else _ConfigWithStop
)
