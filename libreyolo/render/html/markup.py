"""HTML building blocks of the report pages: escaping, numbers that say where they come from,
tables, sections and notes.

Every number a page shows is a `<data>` element whose `data-src` names the reader and the JSON
path (`["summary", "latency", "p50_ms"]`) that prints the same value under `--json`, so a test,
or a user with a scraper, can check each one. The reader's inputs are those of the nearest
enclosing element with `data-input` (a JSON list of paths: one profile, a sweep folder, or the
two sides of a comparison); the page's `<main>` carries the page's own. Text from files passes
`safe_text` before `html.escape`: a control character in a kernel name is shown as an escape,
never obeyed.

Pure: strings in, strings out.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from libreyolo.render.safe import safe_text, short_name

Src = tuple[str | int, ...]  # (reader, key, key, ...): where `--json` prints the value
MISSING = '<span class="na" title="not measured">–</span>'


def esc(value: object) -> str:
    """Text for HTML: control characters escaped visibly, then markup characters."""
    return html.escape(safe_text(value), quote=True)


def name(value: object) -> str:
    """A name from a file (kernel, op, model) for a table cell: shortened, the full text in the
    tooltip."""
    full = esc(value)
    shown = esc(short_name(value))
    return f'<span title="{full}">{shown}</span>' if shown != full else shown


def num(
    value: object,
    src: Src | None,
    *,
    digits: int = 1,
    unit: str = "",
    scale: float = 1.0,
    signed: bool = False,
) -> str:
    """A shown number: `value × scale` to `digits` decimals, unit after it; `–` when missing."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return MISSING
    shown = f"{value * scale:{'+' if signed else ''},.{digits}f}"
    attrs = f' value="{value!r}"'
    if src is not None:
        attrs += f' data-src="{esc(json.dumps(list(src)))}"'
        if scale != 1.0:
            attrs += f' data-scale="{scale:g}"'
    unit_html = f'<span class="unit">{esc(unit)}</span>' if unit else ""
    return f"<data{attrs}>{shown}</data>{unit_html}"


def attr_src(src: Src) -> str:
    """`data-src` for a chart mark whose `data-value` is a reader's number."""
    return f'data-src="{esc(json.dumps(list(src)))}"'


@dataclass(frozen=True, slots=True)
class Column:
    title: str
    numeric: bool = True  # right-aligned, sorted as numbers
    hint: str = ""  # the header's tooltip


def table(
    columns: Sequence[Column],
    rows: Iterable[Sequence[str]],
    *,
    sort_keys: Iterable[Sequence[object]] | None = None,
    sortable: bool = True,
    caption: str = "",
    row_classes: Sequence[str] | None = None,
) -> str:
    """A table of pre-rendered cells; `sort_keys` gives each cell's sort value (the script
    sorts by it; without JavaScript the rows stay in the order given); `row_classes` a class
    per row ("" for none: `best`, `bad`)."""
    head = "".join(
        f'<th scope="col"{" class=num" if c.numeric else ""}'
        f"{f' title={chr(34)}{esc(c.hint)}{chr(34)}' if c.hint else ''}>{esc(c.title)}</th>"
        for c in columns
    )
    keys = list(sort_keys) if sort_keys is not None else None
    body = []
    for i, row in enumerate(rows):
        cells = []
        for j, (column, cell) in enumerate(zip(columns, row, strict=True)):
            key = "" if keys is None else f' data-key="{esc(_key(keys[i][j]))}"'
            cells.append(f"<td{' class=num' if column.numeric else ''}{key}>{cell}</td>")
        cls = row_classes[i] if row_classes is not None else ""
        body.append((f'<tr class="{esc(cls)}">' if cls else "<tr>") + "".join(cells) + "</tr>")
    table_cls = ' class="sortable"' if sortable else ""
    cap = f"<caption>{esc(caption)}</caption>" if caption else ""
    return (
        f'<div class="scroll"><table{table_cls}>{cap}<thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )


def _key(value: object) -> str:
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, int | float):
        return repr(value) if math.isfinite(value) else ""
    return "" if value is None else str(value)


def scope(inputs: Sequence[str], body: str, *, tag: str = "div") -> str:
    """`body` with its numbers read from `inputs` (a sweep point's profile, a comparison's
    side) instead of the page's."""
    return f'<{tag} data-input="{esc(json.dumps(list(inputs)))}">{body}</{tag}>'


def input_attr(inputs: Sequence[str]) -> str:
    """The `data-input` attribute naming the files a page's numbers come from."""
    return f'data-input="{esc(json.dumps(list(inputs)))}"'


def section(anchor: str, title: str, body: str, *, intro: str = "") -> str:
    """One titled part of a page, reachable from the page's contents line."""
    lead = f'<p class="intro">{intro}</p>' if intro else ""
    return f'<section id="{anchor}"><h2>{esc(title)}</h2>{lead}{body}</section>'


def note_list(notes: Iterable[str], *, cls: str = "notes") -> str:
    """Notes and warnings as a list (empty string when there are none)."""
    items = "".join(f"<li>{esc(n)}</li>" for n in notes)
    return f'<ul class="{cls}">{items}</ul>' if items else ""


def banner(text: str, *, kind: str = "warn") -> str:
    """A full-width warning (random weights, contended host, memory pressure)."""
    return f'<div class="banner {kind}" role="alert">{esc(text)}</div>'


WIDE = frozenset({"window"})  # facts whose values need two grid columns


def definition_list(items: Iterable[tuple[str, str]]) -> str:
    """Label/value pairs (values pre-rendered)."""
    body = "".join(
        f"<div{' class=wide' if k in WIDE else ''}><dt>{esc(k)}</dt><dd>{v}</dd></div>"
        for k, v in items
    )
    return f'<dl class="facts">{body}</dl>'


def card(label: str, value_html: str, *, sub: str = "") -> str:
    """One headline number."""
    sub_html = f'<div class="sub">{sub}</div>' if sub else ""
    return (
        f'<div class="card"><div class="label">{esc(label)}</div>'
        f'<div class="value">{value_html}</div>{sub_html}</div>'
    )


def cards(items: Iterable[str]) -> str:
    return f'<div class="cards">{"".join(items)}</div>'
