"""A fake 1.x trainer: the hook calls of 1.x's `_train_epoch` around a tiny torch step."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from typing import Any

import torch


class BaseTrainer:
    def __init__(self, config: Any) -> None:
        self.config = config
        self._profiler = None

    def setup(self) -> None:
        torch.manual_seed(0)
        index = self.config.device
        self.device = torch.device(f"cuda:{index}" if index.isdigit() else "cpu")
        self.model = torch.nn.Sequential(
            torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(8, 4, 1)
        ).to(self.device)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.01)
        side, batch = self.config.imgsz, self.config.batch
        self.train_loader = [
            (torch.rand(batch, 3, side, side), torch.zeros(batch, 5))
            for _ in range(self.config.images // batch)
        ]
        self.scaler = None
        self.ema_model = None

    def get_model_tag(self) -> str:
        return "Fake-t"

    def get_model_family(self) -> str:
        return "fake"

    @property
    def input_size(self) -> tuple[int, int]:
        return (self.config.imgsz, self.config.imgsz)

    def _prof_phase(self, name: str):
        prof = self._profiler
        return prof.phase(name) if prof is not None else contextlib.nullcontext()

    def train(self) -> None:
        self.setup()
        step = 0
        for _epoch in range(self.config.epochs):
            prof = self._profiler
            loader = prof.wrap_loader(self.train_loader) if prof is not None else self.train_loader
            for imgs, _targets in loader:
                with self._prof_phase("to_device"):
                    imgs = imgs.to(self.device)
                with self._prof_phase("forward"):
                    loss = self.model(imgs).square().mean()
                self.optimizer.zero_grad()
                with self._prof_phase("backward"):
                    loss.backward()
                with self._prof_phase("optimizer"):
                    self.optimizer.step()
                step += 1
                self._misbehave(step)
                if prof is not None:
                    prof.step()
                    if prof.finished and getattr(self.config, "profile_then_stop", False):
                        return

    def _misbehave(self, step: int) -> None:
        fake = self.config.fake
        if fake == "chatty":
            sys.stdout.write(f"step {step}\n")
        if step != 3:
            return
        if fake == "hang":
            time.sleep(3600)
        if fake == "crash":
            raise RuntimeError("the fake trainer crashed in step 3")
        if fake == "garbage":
            for fd in range(3, 64):  # the probe's event pipe: every open descriptor past 2
                with contextlib.suppress(OSError):
                    os.write(fd, b"this is not an event\n")


class FakeTrainer(BaseTrainer):
    pass


if "_prof_phase" in os.environ.get("FAKE_WITHOUT", ""):
    del BaseTrainer._prof_phase
