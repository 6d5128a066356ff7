"""libreyolo 1.x's `libreyolo train`, timed per step and nothing else: the reference that
`scripts/bench_vs_trainer.py` holds `profile run --trainer` against.

Run by the training environment's own Python (stdlib, then its torch and libreyolo):

    <env>/bin/python scripts/v1_step_timer.py OUT.json STEPS -- data=... model=... batch=...

It runs 1.x's own CLI entry point with those words and edits none of its files; at run time it
wraps four of the trainer's calls to read the clock: the data loader iterator's `__next__`
(dataload), `BaseTrainer._forward_train` (forward with the loss), the optimizer's `step` and
the EMA's `update` (optimizer), and `BaseTrainer._apply_scheduler`, which ends each step (the
step's wall is the time between two of its calls; backward is what `_forward_train`'s end and
the optimizer's start leave between them). No torch.profiler, no device syncs beyond 1.x's
own: on the GPU its loss `.item()` ends each step. After STEPS steps it stops the training by
raising out of the scheduler call, then writes OUT.json: the walls and phase times per step.
"""

from __future__ import annotations

import importlib
import itertools
import json
import sys
import time


class Enough(BaseException):
    """STEPS steps timed: leave 1.x's training (BaseException: its handlers re-raise it)."""


def main() -> int:
    out, steps = sys.argv[1], int(sys.argv[2])
    words = sys.argv[sys.argv.index("--") + 1 :]
    trainer_module = importlib.import_module("libreyolo.training.trainer")
    base = trainer_module.BaseTrainer
    loader_iter = importlib.import_module("torch.utils.data.dataloader")._BaseDataLoaderIter
    ends: list[float] = []
    phases: list[dict[str, float]] = [{}]

    def add(name: str, seconds: float) -> None:
        phases[-1][name] = phases[-1].get(name, 0.0) + seconds * 1000.0

    def timed(name: str, call):
        def wrapper(*args: object, **kwargs: object) -> object:
            start = time.perf_counter()
            try:
                return call(*args, **kwargs)
            finally:
                add(name, time.perf_counter() - start)

        return wrapper

    original_scheduler = base._apply_scheduler
    original_setup = base.setup

    def scheduler(self: object, iters: int) -> object:
        result = original_scheduler(self, iters)
        if getattr(self, "_timed_started", False):
            ends.append(time.perf_counter())
            if len(ends) > steps:
                raise Enough
            phases.append({})
        return result

    def setup(self: object, *args: object, **kwargs: object) -> object:
        result = original_setup(self, *args, **kwargs)
        optimizer = self.optimizer  # type: ignore[attr-defined]
        optimizer.step = timed("optimizer", optimizer.step)
        ema = getattr(self, "ema_model", None)
        if ema is not None:
            ema.update = timed("optimizer", ema.update)
        self._timed_started = True  # type: ignore[attr-defined]
        ends.append(time.perf_counter())  # the first step starts as training does
        return result

    base._apply_scheduler = scheduler
    base.setup = setup
    base._forward_train = timed("forward", base._forward_train)
    loader_iter.__next__ = timed("dataload", loader_iter.__next__)
    sys.argv = ["libreyolo", "train", *words]
    try:
        importlib.import_module("libreyolo.cli").entrypoint()
    except Enough:
        pass
    except SystemExit as done:
        if len(ends) <= steps:
            raise RuntimeError(f"libreyolo train ended after {len(ends) - 1} steps") from done
    walls = [(b - a) * 1000.0 for a, b in itertools.pairwise(ends)]
    with open(out, "w", encoding="utf-8") as handle:
        json.dump({"wall_ms": walls[1:], "phase_ms": phases[1 : len(walls)]}, handle)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
