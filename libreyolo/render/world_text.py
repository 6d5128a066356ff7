"""The world section of a multi-process run's summary: the world, one line per rank, the skew.

Must not: compute anything the analysis did not (`analysis/world.py` has the definitions), or
import it (or the document model) before a world is to be shown.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from libreyolo.document.phases import DATALOAD
from libreyolo.render.units import fmt_or_unknown, fmt_value

if TYPE_CHECKING:  # `get` imports this module through the text views: it stays light
    from libreyolo.document.model import Scalar
    from libreyolo.document.world import RankRecord, World


def world_headline(world: World, metrics: dict[str, Scalar]) -> str:
    """The world's throughput and its split: the line under the headline."""
    return (
        f"world    {world.world_size} ranks ({world.backend}, {world.launcher})  |  "
        f"global batch {world.global_batch} = {world.batch_per_rank} per rank  |  "
        f"{fmt_or_unknown(metrics.get('global_img_per_s'))} img/s over the world"
    )


def _rank_line(record: RankRecord) -> str:
    from libreyolo.analysis.world import own_ms

    comm = ""
    if record.comm_ms is not None:
        comm = f"  comm {fmt_value(record.comm_ms)} ms"
        if record.comm_exposed_pct is not None:
            comm += f" ({fmt_value(record.comm_exposed_pct)}% exposed)"
    own = own_ms(record)
    dataload = record.phase_ms.get(DATALOAD)
    busy = "  contended" if record.contended else ""
    return (
        f"rank {record.rank:<3} {record.device:<7} step {fmt_or_unknown(record.step_ms)} ms"
        f"  own {fmt_or_unknown(None if own is None else round(own, 2))} ms{comm}"
        f"  dataload {fmt_or_unknown(dataload)} ms"
        f"  RSS {fmt_or_unknown(record.peak_rss_mb)} MB{busy}"
    )


def _skew_line(world: World, metrics: dict[str, Scalar]) -> str:
    skew = metrics.get("rank_skew_pct")
    if skew is None:
        return "skew     unknown: a rank's step or collective time was not measured"
    line = f"skew     own work (step less exposed collective wait) differs {skew}% between ranks"
    straggler = metrics.get("straggler_rank")
    if isinstance(straggler, int):
        cause = metrics.get("straggler_cause")
        excess = metrics.get("straggler_excess_ms")
        return line + f"; straggler rank {straggler} ({cause} +{excess} ms/step)"
    if any(record.contended for record in world.ranks):
        return line + "; no straggler named: a rank waited for a CPU (host contended)"
    from libreyolo.analysis.world import MIN_STRAGGLER_STEPS, STRAGGLER_SKEW_PCT

    if isinstance(skew, int | float) and skew >= STRAGGLER_SKEW_PCT:  # its window was short
        return line + f"; no straggler named over fewer than {MIN_STRAGGLER_STEPS} measured steps"
    return line + "; no straggler"


def world_lines(world: World | None, metrics: dict[str, Scalar]) -> list[str]:
    """The world section, or nothing for a one-process profile."""
    if world is None:
        return []
    from libreyolo.analysis.world import exposed_ms

    lines = [world_headline(world, metrics)]
    lines += [_rank_line(record) for record in world.ranks]
    lines.append(_skew_line(world, metrics))
    wait = [exposed_ms(record) for record in world.ranks]
    if all(ms is not None for ms in wait) and wait:
        least = metrics.get("comm_wait_ms")
        lines.append(
            f"comm     the least-waiting rank waits {fmt_or_unknown(least)} ms/step in "
            "collectives nothing computes beside (the wire's own cost)"
        )
    return lines
