"""Number formats shared by the text views (the 1.6.0 formats live here, nowhere else)."""

from __future__ import annotations

import json
import math

from libreyolo.render.safe import safe_text

BAR_WIDTH = 20  # characters of the category-mix bar at 100 %


def fmt_value(value: object) -> str:
    """A scalar as 1.6.0 printed it, but with JSON literals: `null`, `true`; `?` never hides 0."""
    if isinstance(value, str):
        return safe_text(value)  # metric and label strings come from files
    if (
        isinstance(value, float)
        and math.isfinite(value)
        and value == int(value)
        and abs(value) < 1e15
    ):
        return repr(value)  # keep `0.0` distinct from `0`, as str() did
    return json.dumps(value)


def fmt_or_unknown(value: object) -> str:
    """Like fmt_value, but `?` for a missing value (1.6.0's marker in the summary headline)."""
    return "?" if value is None else fmt_value(value)


def fmt_share(value: object) -> str:
    """A fraction 0..1 as a whole percentage (`48%`), `?` when unknown."""
    return f"{float(value) * 100:.0f}%" if isinstance(value, int | float) else "?"


def significant_decimals(value: float | None, digits: int) -> int:
    """The decimals that show `value` to `digits` significant digits in plain notation
    (0.0234 at 3: 4); `digits - 1` for zero or none."""
    if not value:
        return digits - 1
    return max(digits - 1 - math.floor(math.log10(abs(value))), 0)


def fmt_count(value: float) -> str:
    """A per-step count: whole numbers without decimals, fractions with one."""
    return f"{value:.0f}" if abs(value - round(value)) < 0.05 else f"{value:.1f}"


def fmt_pct_change(change: float | None) -> str:
    """` (+12%)` or empty when there is no base to compare with."""
    return "" if change is None else f" ({change * 100:+.0f}%)"


def bar(share: float) -> str:
    """A horizontal bar for a share in 0..1."""
    filled = round(max(0.0, min(share, 1.0)) * BAR_WIDTH)
    return "█" * filled + "·" * (BAR_WIDTH - filled)


def fmt_sig(value: float, digits: int = 3) -> str:
    """`value` to `digits` significant digits in plain notation, trailing zeros dropped
    (7.71, 26.1, 8.7, 989, 0.107, 1230): FLOP counts and rates span six decades."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    ndigits = digits - 1 - math.floor(math.log10(abs(value)))  # negative: round to tens...
    text = f"{round(value, ndigits):.{max(ndigits, 0)}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def fmt_mfu(share: float) -> str:
    """A utilisation (a fraction) as a whole percentage, one decimal under 10 % (`33 %`,
    `6.1 %`): a small MFU is the one worth telling apart."""
    pct = round(share * 100, 1)
    return f"{pct:.1f} %" if pct < 10 else f"{pct:.0f} %"
