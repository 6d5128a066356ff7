"""The profile page's "How far from the limit" card: FLOPs per image, achieved TFLOP/s, each
peak with its source, MFU as a bar from 0 to 100 %, energy where measured, and the FLOP
convention as a footnote.

Every number is `summary --json`'s `compute` object (`markup.num`), shown to 3 significant
digits like the text summary. A profile without a count says why, never 0.

Pure: a Summary in, HTML text out.
"""

from __future__ import annotations

import math

from libreyolo.analysis.compute_view import ComputeView
from libreyolo.analysis.summary import Summary
from libreyolo.render.compute_text import peak_name
from libreyolo.render.html import svg
from libreyolo.render.html.markup import Column, Src, card, cards, esc, num, table
from libreyolo.render.units import fmt_mfu

SRC: Src = ("summary", "compute")
GIGA = 1e9
SIGNIFICANT = 3
BAR_W, BAR_H = 540, 22  # the MFU bar: 0 to 100 % of the headline peak
MFU_COLOUR = svg.PALETTE[2]


def decimals(value: float | None, scale: float = 1.0) -> int:
    """The decimals that show `value × scale` to 3 significant digits."""
    if value is None or value == 0 or not math.isfinite(value):
        return 0
    return max(SIGNIFICANT - 1 - math.floor(math.log10(abs(value * scale))), 0)


def _gflop(value: float | None, key: str, unit: str = "") -> str:
    return num(value, (*SRC, key), scale=1 / GIGA, digits=decimals(value, 1 / GIGA), unit=unit)


def _mfu_digits(mfu: float | None) -> int:
    return 1 if mfu is not None and round(mfu * 100, 1) < 10 else 0


def mfu_bar(view: ComputeView) -> str:
    """MFU against the headline peak as one bar on a 0–100 % track (a value past the peak,
    from a peak measured low, fills the track and says so)."""
    mfu, peak = view.mfu, view.peaks[0] if view.peaks else None
    if mfu is None or peak is None:
        return ""
    shown = min(max(mfu, 0.0), 1.0)
    tip = f"MFU {fmt_mfu(mfu)} of {peak_name(peak, view.gpu)}"
    if mfu > 1:
        tip += " (past the peak: the peak was measured low)"
    body = (
        f'<rect x="0" y="2" width="{BAR_W}" height="{BAR_H}" rx="3" fill="#e8ecf2"/>'
        f'<rect {svg.mark_attrs("mfu", mfu, (*SRC, "mfu"))} x="0" y="2" '
        f'width="{max(shown * BAR_W, 0.5):.1f}" height="{BAR_H}" rx="3" fill="{MFU_COLOUR}">'
        f"<title>{esc(tip)}</title></rect>"
        f'<text x="{BAR_W - 6}" y="{BAR_H - 4}" text-anchor="end">100 %</text>'
    )
    chart = svg.svg_root(BAR_W, BAR_H + 4, body, "MFU, 0 to 100 % of the peak")
    return f"<figure><h3>{esc(tip)}</h3>{chart}</figure>"


def peak_table(view: ComputeView) -> str:
    """Each peak with its source, figure, MFU against it and reference, the headline first."""
    cols = [
        Column("peak", numeric=False),
        Column("TFLOP/s"),
        Column("MFU"),
        Column("reference", numeric=False),
    ]
    rows = []
    for i, peak in enumerate(view.peaks):
        src: Src = (*SRC, "peaks", i)
        busy = ' <span class="tag bad">measured on a busy host</span>' if peak.contended else ""
        rows.append(
            [
                esc(f"{peak_name(peak, view.gpu).removeprefix('the ')} ({peak.dtype})") + busy,
                num(peak.tflops, (*src, "tflops"), digits=decimals(peak.tflops)),
                num(peak.mfu, (*src, "mfu"), scale=100, digits=_mfu_digits(peak.mfu), unit="%"),
                esc(peak.reference),
            ]
        )
    return table(cols, rows, sortable=False)


def _energy_cards(view: ComputeView) -> list[str]:
    """J/img with img/J, and mean power with the limit, where the run measured energy."""
    energy = view.energy
    if energy is None:
        return []
    e: Src = (*SRC, "energy")
    limit = ""
    if energy.power_limit_w is not None:
        limit = f"limit {num(energy.power_limit_w, (*e, 'power_limit_w'), digits=0)} W"
    return [
        card(
            "energy",
            num(
                energy.energy_j_per_img,
                (*e, "energy_j_per_img"),
                digits=decimals(energy.energy_j_per_img),
                unit="J/img",
            ),
            sub=f"{num(energy.img_per_j, (*e, 'img_per_j'), digits=decimals(energy.img_per_j))}"
            " img/J",
        ),
        card(
            "mean power",
            num(energy.mean_power_w, (*e, "mean_power_w"), digits=0, unit="W"),
            sub=limit,
        ),
    ]


def compute_card(s: Summary) -> str:
    """The card's HTML (the section's body)."""
    view = s.compute
    if view.flops_per_image is None:
        return f'<p class="intro">FLOPs unknown ({esc(view.flops_unknown)}).</p>'
    split = ""
    if view.backward_flops_per_image is not None:
        split = (
            f"forward {_gflop(view.forward_flops_per_image, 'forward_flops_per_image')} + "
            f"backward {_gflop(view.backward_flops_per_image, 'backward_flops_per_image')}"
        )
    achieved = view.achieved_tflops
    items = [
        card("GFLOP per image", _gflop(view.flops_per_image, "flops_per_image"), sub=split),
        card(
            "achieved TFLOP/s",
            num(achieved, (*SRC, "achieved_tflops"), digits=decimals(achieved)),
            sub=f"math in {esc(view.math_dtype or 'an unknown dtype')}",
        ),
        card(
            "MFU",
            num(view.mfu, (*SRC, "mfu"), scale=100, digits=_mfu_digits(view.mfu), unit="%"),
            sub=f"of {esc(peak_name(view.peaks[0], view.gpu))}" if view.peaks else "no peak known",
        ),
        *_energy_cards(view),
    ]
    peaks = peak_table(view) if view.peaks else ""
    footnote = (
        f'<p class="intro"><small>Achieved = FLOPs per image × img/s; MFU = achieved / peak. '
        f"FLOPs: {esc(view.convention or '')}.</small></p>"
    )
    return cards(items) + mfu_bar(view) + peaks + footnote
