"""`compare`'s statement of the built-in step against libreyolo 1.x's trainer, as text and JSON.

Role: render `analysis.trainer_gap.TrainerGap`: img/s both ways, then each part of a step (ms
per step and share, built-in vs trainer, the gap), and which are beyond the parity bound.
Must not: compute anything the analysis did not.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from libreyolo.analysis.trainer_gap import TrainerGap


def _pct(value: float | None) -> str:
    if value is None:
        return "n/a"
    return "0 %" if round(value) == 0 else f"{value:+.0f} %"  # never "-0 %"


def trainer_gap_lines(gap: TrainerGap) -> list[str]:
    """The block `compare` prints under its warnings."""
    ours, theirs = gap.builtin_img_per_s, gap.trainer_img_per_s
    speed = (
        f"img/s {ours:.2f} vs {theirs:.2f} ({_pct(gap.img_per_s_gap_pct)})"
        if ours is not None and theirs is not None
        else "img/s not known on both sides"
    )
    lines = [
        f"built-in step vs libreyolo train ({gap.trainer_side} is the trainer): {speed}",
        f"  {'part':<15}{'built-in':>20}{'trainer':>20}{'gap':>9}",
    ]
    for part in gap.parts:
        mine = f"{part.builtin_ms:.1f} ms ({part.builtin_share * 100:.0f} %)"
        other = f"{part.trainer_ms:.1f} ms ({part.trainer_share * 100:.0f} %)"
        lines.append(f"  {part.part:<15}{mine:>20}{other:>20}{_pct(part.gap_pct):>9}")
    bound = f"±{gap.within_pct:.0f} %"
    if gap.beyond:
        lines.append(f"  beyond {bound}: {', '.join(gap.beyond)} (docs/workload-parity.md)")
    else:
        lines.append(f"  img/s and every part within {bound}")
    return lines


def trainer_gap_json(gap: TrainerGap) -> dict[str, Any]:
    """The same as a JSON object (shares as fractions, gaps in per cent)."""
    return {
        "trainer_side": gap.trainer_side,
        "img_per_s": {
            "builtin": gap.builtin_img_per_s,
            "trainer": gap.trainer_img_per_s,
            "gap_pct": gap.img_per_s_gap_pct,
        },
        "parts": [
            {
                "part": part.part,
                "builtin_ms": part.builtin_ms,
                "trainer_ms": part.trainer_ms,
                "builtin_share": part.builtin_share,
                "trainer_share": part.trainer_share,
                "gap_pct": part.gap_pct,
                "share_gap_pct": part.share_gap_pct,
            }
            for part in gap.parts
        ],
        "within_pct": gap.within_pct,
        "beyond": list(gap.beyond),
    }
