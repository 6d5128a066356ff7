"""The batch search's answer as text (`tune.json`): what `summary <sweep dir>` prints before the
sweep table when `hydra/sweeper=tune` chose the points.

One line for the search (goal, range, points measured), then per series one line: the
recommendation with its evidence, or why there is none, and the stop reason; for training the
settings line (`train: batch=32 imgsz=640 amp=true workers=8 (tuned.yaml)`), or, for a search
of libreyolo 1.x's own trainer, its command as a line of its own that a shell runs as is
(`train: OMP_NUM_THREADS=2 <env>/bin/libreyolo train data=... batch=32 ...`) and the config
file on the next, with the loader workers marked as given (`config: tuned.yaml; workers=8 as
given, not searched`). The series' label
and its recommendation are the sweep page's too.

Pure: no I/O. Strings from the file pass `safe_text` (every line does again on output).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from libreyolo.render.safe import safe_text, short_name

if TYPE_CHECKING:
    from libreyolo.document.tune_model import (
        Recommendation,
        TunePrior,
        TuneRecord,
        TuneSeries,
        TuneSettings,
    )

_OWN_AXES = ("imgsz=", "amp=", "threads=", "batch=")  # shown from the series' own fields


def series_label(series: TuneSeries) -> str:
    """`imgsz 640, amp on, 2 threads, model=yolox_n`: its values, then every other swept key."""
    parts = [] if series.imgsz is None else [f"imgsz {series.imgsz}"]
    parts += [] if series.amp is None else [f"amp {'on' if series.amp else 'off'}"]
    parts += [] if series.threads is None else [f"{series.threads} threads"]
    parts += [short_name(o) for o in series.overrides if not o.startswith(_OWN_AXES)]
    return ", ".join(parts) or "every point"


def recommendation_of(tune: TuneRecord, series: TuneSeries) -> tuple[int, Recommendation] | None:
    """The series' recommendation and its index in `tune.recommended`: the one whose point its
    path measured (None: the series has none)."""
    points = {step.point for step in series.path}
    return next(((i, rec) for i, rec in enumerate(tune.recommended) if rec.point in points), None)


def goal_line(settings: TuneSettings, num_points: int) -> str:
    """`tune knee over batch 1..64 (step 8), 9 points measured; a gain counts when significant
    and ≥ 5 %`."""
    noun = "point" if num_points == 1 else "points"
    head = (
        f"tune {settings.goal} over batch {settings.batch_min}..{settings.batch_max} "
        f"(step {settings.batch_step}), {num_points} {noun} measured"
    )
    if settings.goal == "knee":
        head += f"; a gain counts when significant and ≥ {settings.min_gain_pct:g} %"
    elif settings.goal == "latency" and settings.max_latency_ms is not None:
        head += f"; p{settings.percentile} ≤ {settings.max_latency_ms:g} ms"
    if settings.memory_budget_mb is not None:
        head += f"; memory budget {settings.memory_budget_mb:g} MB"
    return head


def answer_text(series: TuneSeries, rec: Recommendation | None) -> str:
    """`recommended batch 32: 412.0 ± 3.1 img/s; ...`, or `no recommendation: <why>`."""
    if rec is None:
        return f"no recommendation: {safe_text(series.why)}"
    evidence = safe_text(rec.evidence)
    if evidence.startswith(f"batch {rec.batch}"):  # the sentence names the batch itself
        return f"recommended {evidence}"
    return f"recommended batch {rec.batch}: {evidence}"


def prior_line(prior: TunePrior) -> str:
    """`prior: batch 13 predicted under the budget (peak RSS 2489 MB), from two probe steps
    in 4 s`: where the search started, a prediction and not a measured point."""
    if prior.batch == 0:
        head = "prior: not one image predicted under the budget"
    else:
        head = (
            f"prior: batch {prior.batch} predicted under the budget "
            f"(peak RSS {prior.predicted_mb:.0f} MB)"
        )
    return f"{head}, from two probe steps in {prior.probe_s:.0f} s"


def _workers(settings: str | None) -> str | None:
    """The `workers=N` of a settings line (`batch=32 imgsz=640 amp=true workers=8`)."""
    words = (settings or "").split()
    return next((w.split("=", 1)[1] for w in words if w.startswith("workers=")), None)


def tune_lines(tune: TuneRecord) -> list[str]:
    """The search's lines: its goal, then per series its answer and stop reason (and, for
    training, the settings line; under a memory budget on the CPU, the prior)."""
    lines = [goal_line(tune.settings, tune.num_points)]
    for series in tune.series:
        found = recommendation_of(tune, series)
        rec = None if found is None else found[1]
        lines.append(
            f"{series_label(series)}: {answer_text(series, rec)} (stopped: {series.stopped})"
        )
        if rec is not None and rec.train_command:  # libreyolo 1.x's own: pasted as is
            lines.append(f"train: {safe_text(rec.train_command)}")
            given = _workers(rec.train_settings)
            where = f"config: {short_name(rec.config_file)}" if rec.config_file else ""
            if given is not None:  # the search varies the batch only
                where += f"{'; ' if where else ''}workers={given} as given, not searched"
            if where:
                lines.append(where)
        elif rec is not None and rec.train_settings:
            where = f" ({short_name(rec.config_file)})" if rec.config_file else ""
            lines.append(f"train: {safe_text(rec.train_settings)}{where}")
        if series.prior is not None:
            lines.append(prior_line(series.prior))
    return lines
