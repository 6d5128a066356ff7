"""The report's ranks: one lane per rank of a multi-process run, its step split by phase with
its exposed collective wait apart, so the straggler and the ranks that wait for it show at a
glance; the world's figures as cards above."""

from __future__ import annotations

from libreyolo.analysis.summary import Summary
from libreyolo.analysis.world import exposed_ms, own_phase_ms
from libreyolo.document.phases import TRAIN_PHASES
from libreyolo.document.world import RankRecord
from libreyolo.render.html import svg
from libreyolo.render.html.markup import card, cards, esc, num

WAIT = "collective wait"
WORLD = ("summary", "world")  # where the page's JSON holds the world and its figures


def _lane(i: int, record: RankRecord) -> svg.StackedColumn:
    base = (*WORLD, "ranks", i)
    wait = round(exposed_ms(record) or 0.0, 3)  # as the page's JSON holds them
    own = {phase: round(ms, 3) for phase, ms in own_phase_ms(record).items()}
    segments = []
    for phase in TRAIN_PHASES:
        ms = own.get(phase)
        if ms is None:
            continue
        segments.append(
            svg.Segment(
                phase,
                ms,
                (*base, "own_phase_ms", phase),
                f"rank {record.rank} {phase}: {ms:.2f} ms per step, its collective wait apart",
            )
        )
    if wait > 0:
        segments.append(
            svg.Segment(
                WAIT,
                wait,
                (*base, "exposed_ms"),
                f"rank {record.rank}: {wait:.2f} ms per step waiting in collectives",
            )
        )
    return svg.StackedColumn(f"rank {record.rank}", tuple(segments))


def ranks_block(s: Summary) -> str:
    """The ranks section's body, or "" for a one-process profile."""
    world = s.world
    if world is None:
        return ""
    m = s.metrics
    straggler = m.get("straggler_rank")
    headline = cards(
        [
            card(
                "world",
                f"{world.world_size} ranks",
                sub=f"{esc(world.backend)} · global batch {world.global_batch}",
            ),
            card(
                "global throughput",
                num(m.get("global_img_per_s"), (*WORLD, "global_img_per_s"), unit="img/s"),
            ),
            card(
                "own-work skew",
                num(m.get("rank_skew_pct"), (*WORLD, "rank_skew_pct"), unit="%"),
                sub="none named" if straggler is None else f"straggler: rank {straggler}",
            ),
        ]
    )
    lanes = [_lane(i, record) for i, record in enumerate(world.ranks)]
    keys = [*TRAIN_PHASES, WAIT]
    present = {seg.key for lane in lanes for seg in lane.segments}
    legend = svg.legend([(key, svg.colour(key, i)) for i, key in enumerate(keys) if key in present])
    chart = svg.stacked_columns(lanes, keys, mark="ranks", y_label="ms per step", height=220)
    caption = (
        "Each rank's step by phase (wall ms per step), its exposed collective wait apart: in "
        "synchronous data-parallel training a fast rank waits in the gradient all-reduce for "
        "the slowest, so the straggler is the rank that waits least."
    )
    return f"{headline}<figure>{legend}{chart}<figcaption>{esc(caption)}</figcaption></figure>"
