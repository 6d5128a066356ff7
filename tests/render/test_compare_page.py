"""The comparison page: its marks, its numbers against `compare --json`, its significance
arithmetic, escaping and offline-ness, on real fixtures (v1 files, a trial pair made from the
v1 training profile, a GPU pair made from a real trace with hostile names)."""

from __future__ import annotations

import json
import math
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import msgspec.structs
import pytest

from libreyolo.cli.sources import open_profile
from libreyolo.document.files import save
from libreyolo.document.model import Profile, Scalar, Trial
from tests.conftest import invoke
from tests.render.hostile import SMALL_TRACE, make_hostile, v2_raw, write_json

PHASE_SCALE = 1.25  # the "after" side of the trial pair: every phase 25 % slower


VOID = {"meta", "br", "input", "img", "link", "hr"}  # no end tag: never a scope


class Page(HTMLParser):
    """The page's numbers (data-src, value, the nearest enclosing data-input), marks, links
    and text."""

    def __init__(self) -> None:
        super().__init__()
        self.numbers: list[tuple[list[Any], float, list[str]]] = []
        self.marks: list[dict[str, str]] = []
        self.urls: list[str] = []
        self.text: list[str] = []
        self._scopes: list[list[str] | None] = []  # one per open element

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        here = json.loads(a["data-input"]) if "data-input" in a else None
        scope: list[str] = next((s for s in reversed([*self._scopes, here]) if s is not None), [])
        if tag == "data" and "data-src" in a:
            self.numbers.append((json.loads(a["data-src"]), float(a["value"]), scope))
        if "mark" in a.get("class", "").split():
            self.marks.append(a)
        self.urls += [a[k] for k in ("href", "src") if k in a]
        if tag not in VOID:
            self._scopes.append(here)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self._scopes.pop()

    def handle_endtag(self, tag: str) -> None:
        self._scopes.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _report(before: str, after: str, tmp_path: Path) -> tuple[str, Page]:
    out = tmp_path / "compare.html"
    result = invoke(["profile", "report", before, after, "-o", str(out)])
    assert result.status == 0, result.stderr
    page = out.read_text(encoding="utf-8")
    parser = Page()
    parser.feed(page)
    return page, parser


def _at(doc: Any, path: list[Any]) -> Any:
    for key in path:
        doc = doc[key]
    return doc


def _check_numbers(parser: Page, before: str, after: str) -> int:
    """Every number equals the reader's --json value at its data-src, for its scope's inputs."""
    docs: dict[tuple[str, ...], Any] = {}
    for src, value, scope in parser.numbers:
        reader, *path = src
        key = (reader, *scope)
        if key not in docs:
            argv = ["profile", reader, *scope, "--json"]
            assert reader != "compare" or scope == [before, after]
            result = invoke(argv)
            assert result.status == 0, result.stderr
            docs[key] = result.json()
        expected = _at(docs[key], path)
        assert math.isclose(value, expected, rel_tol=1e-9, abs_tol=1e-12), (src, value, expected)
    return len(parser.numbers)


def _trial_metrics(img: float, walls: dict[str, float | None], spread: float) -> dict[str, Scalar]:
    out: dict[str, Scalar] = {"img_per_s": img, "step_ms": 4000.0 / img}
    return out | {k: (w or 0.0) * spread for k, w in walls.items()}


def _trial_profile(path: Path, source: Profile, scale: float, img: list[float]) -> str:
    """`source` with its phases scaled and one trial per img/s value, each trial carrying the
    phases' wall times (what `--repeat` writes), saved to `path`."""
    assert source.trace is not None
    phases = [
        msgspec.structs.replace(p, wall_ms_per_step=(p.wall_ms_per_step or 0.0) * scale)
        for p in source.trace.phases
    ]
    walls = {f"{p.name}_wall_ms": p.wall_ms_per_step for p in phases}
    trials = [
        Trial(index=i, metrics=_trial_metrics(v, walls, 1 + 0.01 * i)) for i, v in enumerate(img)
    ]
    mean = sum(img) / len(img)
    profile = msgspec.structs.replace(
        source,
        trace=msgspec.structs.replace(source.trace, phases=phases),
        metrics=source.metrics | walls | {"img_per_s": mean, "step_ms": round(4000.0 / mean, 2)},
        trials=trials,
    )
    return str(save(profile, path))


@pytest.fixture
def trial_pair(reference_v1: Path, tmp_path: Path) -> tuple[str, str]:
    train = open_profile(str(reference_v1 / "train_cpu.profile.json"))
    return (
        _trial_profile(tmp_path / "before.json", train, 1.0, [4.2, 4.3, 4.1]),
        _trial_profile(tmp_path / "after.json", train, PHASE_SCALE, [3.4, 3.3, 3.5]),
    )


@pytest.fixture
def hostile_pair(gpu_traces: Path, tmp_path: Path) -> tuple[str, str]:
    raw = v2_raw(gpu_traces / SMALL_TRACE)
    before = write_json(tmp_path / "gpu_before.json", raw)
    after = write_json(tmp_path / "gpu_after.json", make_hostile(v2_raw(gpu_traces / SMALL_TRACE)))
    return str(before), str(after)


def _no_external_url(page: str, parser: Page) -> None:
    assert all(url.startswith("#") for url in parser.urls), parser.urls
    assert "url(" not in page and "@import" not in page
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in page


def test_v1_pair(reference_v1: Path, tmp_path: Path) -> None:
    before = str(reference_v1 / "infer_b1.profile.json")
    after = str(reference_v1 / "infer_b4.profile.json")
    page, parser = _report(before, after, tmp_path)
    assert _check_numbers(parser, before, after) > 40
    text = "".join(parser.text)
    assert "the profiles differ in batch: 1 vs 4" in text  # compare's own warning
    assert "single window" in text and "before and after sides are single windows" in text
    # Inference profiles: the advice names the command that made them.
    assert "[single run, use 'infer --repeat N' for a significance call]" in text
    assert "measure both with 'infer --repeat N' for one" in text and "'run --repeat" not in text
    assert "trials1 run (a single window, no --repeat trials)" in text and "trials0" not in text
    srcs = {tuple(s) for s, _, _ in parser.numbers}
    for key in ("img_per_s", "step_ms", "latency_p50_ms", "latency_p99_ms", "ms_per_image"):
        assert ("compare", key, "before") in srcs and ("compare", key, "change") in srcs
    assert ("compare", "changes", "ops", "changed", 0, "change_ms") in srcs
    assert ("compare", "changes", "ops", "gone", 0, "ms", 0) in srcs
    assert ("summary", "img_per_s") in srcs  # each side's headline, in its own scope
    assert ("summary", "num_trials") not in srcs  # no "0": the side is one window
    assert "↓ worse" in text  # img/s fell: an arrow and a word, not only a colour
    _no_external_url(page, parser)


def test_training_single_runs_keep_the_v1_advice(reference_v1: Path, tmp_path: Path) -> None:
    train = str(reference_v1 / "train_cpu.profile.json")
    _, parser = _report(train, train, tmp_path)
    text = "".join(parser.text)
    assert "[single run, use 'run --repeat N' for a significance call]" in text
    assert "measure both with 'run --repeat N' for one" in text and "infer --repeat" not in text


def _wait_pair(tmp_path: Path, after_waits: list[float]) -> tuple[str, str]:
    """Two inference profiles with host records: CPU wait 0.1 % before, `after_waits` after."""
    from tests.analysis.test_contention import _profile

    before = save(_profile([0.02] * 4), tmp_path / "before.json")
    after = save(_profile(after_waits), tmp_path / "after.json")
    return str(before), str(after)


def _cpu_wait_row(page: str) -> str:
    start = page.index("<td>CPU wait</td>")
    return page[start : page.index("</tr>", start)]


def test_a_small_cpu_wait_move_is_within_noise_not_worse(tmp_path: Path) -> None:
    pair = _wait_pair(tmp_path, [0.18] * 4)  # 0.1 % -> 0.9 %: once "+800 % worse"
    page, parser = _report(*pair, tmp_path)
    _check_numbers(parser, *pair)
    row = _cpu_wait_row(page)
    assert '<data value="0.8" data-src="[&quot;compare&quot;, &quot;cpu_wait_frac&quot;, ' in row
    assert "+0.8</data>" in row and "points" in row and "= within noise" in row
    assert "worse" not in row and "800" not in row


def test_a_large_cpu_wait_move_is_worse_in_points(tmp_path: Path) -> None:
    pair = _wait_pair(tmp_path, [18.5] * 4)  # 0.1 % -> 48.1 %
    page, parser = _report(*pair, tmp_path)
    _check_numbers(parser, *pair)
    row = _cpu_wait_row(page)
    assert "+48.0</data>" in row and "↑ worse" in row


def test_trial_pair_shows_the_significance_arithmetic(
    trial_pair: tuple[str, str], tmp_path: Path
) -> None:
    page, parser = _report(*trial_pair, tmp_path)
    _check_numbers(parser, *trial_pair)
    doc = invoke(["profile", "compare", *trial_pair, "--json"]).json()
    assert isinstance(doc, dict)
    srcs = {tuple(s) for s, _, _ in parser.numbers}
    for field in ("standard_error", "threshold_multiplier", "df"):
        assert ("compare", "img_per_s", field) in srcs
    for side in (0, 1):
        for field in ("mean", "std", "n"):
            assert ("compare", "img_per_s", field, side) in srcs
    text = "".join(parser.text)
    assert doc["img_per_s"]["significance"] in text  # |d| vs k*SE and the test's name
    assert "Welch t, df=" in doc["img_per_s"]["significance"]
    assert "significant" in text and "single window" not in text
    assert ("summary", "num_trials") in srcs  # three trials a side, from each side's summary
    phases = doc["changes"]["phases"]
    wall = [m for m in parser.marks if m["data-mark"] == "phases-wall"]
    assert len(wall) == 2 * len(phases)  # before and after, per phase
    for i, row in enumerate(phases):
        pair = [m for m in wall if json.loads(m["data-src"])[3] == i]
        assert [float(m["data-value"]) for m in pair] == row["wall_ms"]
        assert row["significance"] in text
    assert not [m for m in parser.marks if m["data-mark"] == "phases-gpu"]  # CPU only
    forward = next(r for r in phases if r["phase"] == "forward")
    assert forward["wall_ms"][1] == pytest.approx(forward["wall_ms"][0] * PHASE_SCALE, rel=1e-3)
    _no_external_url(page, parser)


def test_gpu_pair_escapes_hostile_names(hostile_pair: tuple[str, str], tmp_path: Path) -> None:
    page, parser = _report(*hostile_pair, tmp_path)
    _check_numbers(parser, *hostile_pair)
    doc = invoke(["profile", "compare", *hostile_pair, "--json"]).json()
    assert isinstance(doc, dict)
    phases = doc["changes"]["phases"]
    gpu = [m for m in parser.marks if m["data-mark"] == "phases-gpu"]
    assert len(gpu) == 2 * len(phases) and len(phases) >= 2  # the renamed phase: gone and new
    assert doc["changes"]["kernels"] is not None
    srcs = {tuple(s) for s, _, _ in parser.numbers}
    assert any(s[:4] == ("compare", "changes", "kernels", "changed") for s in srcs)
    assert ("compare", "gpu_util", "after") in srcs
    assert "\x1b" not in page and "\u202e" not in page and "\x07" not in page
    assert "<script" not in page.replace("<script>", "", 1)  # only the page's own script
    assert "[bold]markup[/]" in "".join(parser.text)  # shown as text, not obeyed
    _no_external_url(page, parser)
