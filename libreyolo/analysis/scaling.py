"""How a training run scales with its ranks: `compare` of a run on N ranks against one on M.

Pure. A side's throughput is its world's (`global_img_per_s`, every rank's images at the
slowest rank's pace) on several ranks, else its own `img_per_s`. Scaling efficiency is the
speed-up over the ideal one: (after img/s / before img/s) / (after ranks / before ranks); 1.0
is linear. Only between runs that differ in their ranks: else there is nothing to say.
"""

from __future__ import annotations

from dataclasses import dataclass

from libreyolo.analysis.stats import as_number
from libreyolo.document.model import Profile


@dataclass(frozen=True, slots=True)
class Scaling:
    ranks: tuple[int, int]
    global_batch: tuple[int | None, int | None]
    img_per_s: tuple[float, float]  # each side's throughput over all its ranks

    @property
    def speedup(self) -> float:
        return self.img_per_s[1] / self.img_per_s[0]

    @property
    def efficiency(self) -> float:
        return self.speedup / (self.ranks[1] / self.ranks[0])


def _side(profile: Profile) -> tuple[int, int | None, float | None]:
    """(ranks, global batch, images per second over them)."""
    world = profile.world
    if world is None:
        return 1, profile.run.batch, as_number(profile.metrics.get("img_per_s"))
    return world.world_size, world.global_batch, as_number(profile.metrics.get("global_img_per_s"))


def scaling(before: Profile, after: Profile) -> Scaling | None:
    """The scaling from `before` to `after` when their ranks differ and both throughputs are
    known; None otherwise."""
    ranks_b, batch_b, rate_b = _side(before)
    ranks_a, batch_a, rate_a = _side(after)
    if ranks_b == ranks_a or not rate_b or not rate_a:
        return None
    return Scaling((ranks_b, ranks_a), (batch_b, batch_a), (rate_b, rate_a))
