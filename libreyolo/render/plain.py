"""Text views that need no rich: `get` prints one value or the metric names, fast."""

from __future__ import annotations

from typing import Any

from libreyolo.render.units import fmt_value


def plain_text(result: Any) -> str | None:
    """The text of a plain result, or None when the result needs the rich view."""
    kind = getattr(result, "kind", "")
    if kind == "metric":
        return fmt_value(result.value) + "\n"
    if kind == "metric-list":
        return "available metrics:\n" + "".join(f"  {name}\n" for name in result.names)
    return None
