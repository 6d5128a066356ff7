"""`tune.json` records for the readers' tests, built in Python as the sweeper builds them: the
search (`analysis.tune.decide`) played against a planted throughput curve, each step with its
`versus` and the answer with its `evidence`; and a sweep folder whose point folders match.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from libreyolo.analysis.tune import Done, Measured, decide, evidence, versus
from libreyolo.document.codec import document_bytes
from libreyolo.document.sweep_io import TUNE_FILE
from libreyolo.document.tune_model import (
    Bound,
    Recommendation,
    TuneRecord,
    TuneSeries,
    TuneSettings,
    TuneStep,
)
from tests.sweep.test_report import make_point

# Three trials around each mean: ±0.5 %, so a 1 % step is noise and a 10 % one is not.
SPREAD = (-0.005, 0.0, 0.005)
# patience 0: the path these views are drawn from stops at the first doubling that buys nothing
KNEE = TuneSettings(goal="knee", batch_min=1, batch_max=64, batch_step=2, patience=0)


def point_name(batch: int, imgsz: int, amp: bool = True) -> str:
    """The folder `make_point` makes for a point."""
    return f"b{batch}_s{imgsz}_amp{int(amp)}"


def saturating(knee: int, top: float) -> Callable[[int], float]:
    """img/s rising linearly to `top` at `knee`, flat (+0.2 % per doubling) after."""
    return lambda b: top * min(b, knee) / knee * (1 + 0.002 * (b > knee))


@dataclass(frozen=True)
class Curve:
    """What a series measures: img/s by batch, the largest batch that fits and why a bigger
    one does not, p99 latency by batch."""

    imgsz: int
    rate: Callable[[int], float]
    fits_up_to: int = 1 << 20
    bound: Bound = "oom"
    latency_ms: Callable[[int], float] = lambda b: 2.0 * b
    amp: bool = True


def _measure(curve: Curve, batch: int) -> Measured:
    name = point_name(batch, curve.imgsz, curve.amp)
    peak = round(100.0 * batch, 1)
    if batch > curve.fits_up_to:
        return Measured(name, batch, False, curve.bound, peak_mb=peak)
    mean = curve.rate(batch)
    trials = tuple(round(mean * (1 + d), 3) for d in SPREAD)
    return Measured(
        name, batch, True, trials=trials, latency_ms=curve.latency_ms(batch), peak_mb=peak
    )


def _step(measured: list[Measured], point: Measured) -> TuneStep:
    mean, sd = point.mean, point.sd
    return TuneStep(
        point=point.point,
        batch=point.batch,
        fits=point.fits,
        bound=point.bound,
        img_per_s=None if mean is None else round(mean, 3),
        img_per_s_sd=None if sd is None else round(sd, 3),
        trials=len(point.trials),
        peak_mb=point.peak_mb,
        latency_ms=point.latency_ms,
        versus=versus(measured, point),
    )


def play(settings: TuneSettings, curve: Curve) -> tuple[TuneSeries, Recommendation | None]:
    """The search on `curve`, one batch at a time, as the sweeper runs it."""
    measured: list[Measured] = []
    decision = decide(settings, measured)
    while not isinstance(decision, Done):
        measured.append(_measure(curve, decision.batch))
        decision = decide(settings, measured)
    series = TuneSeries(
        imgsz=curve.imgsz,
        amp=curve.amp,
        overrides=[f"imgsz={curve.imgsz}", f"amp={str(curve.amp).lower()}"],
        path=[_step(measured, m) for m in measured],
        stopped=decision.stopped,
        why=decision.why,
        batch=decision.batch,
    )
    if decision.batch is None:
        return series, None
    answer = next(m for m in measured if m.batch == decision.batch)
    mean = answer.mean
    recommendation = Recommendation(
        imgsz=curve.imgsz,
        amp=curve.amp,
        batch=decision.batch,
        img_per_s=None if mean is None else round(mean, 3),
        point=answer.point,
        evidence=evidence(settings, measured, decision.batch),
    )
    return series, recommendation


def record_of(mode: str, settings: TuneSettings, *curves: Curve, train: bool = False) -> TuneRecord:
    """The record of one search per curve (training: each answer with its settings line)."""
    series, recommended = [], []
    for curve in curves:
        one, answer = play(settings, curve)
        series.append(one)
        if answer is not None and train:
            line = f"batch={answer.batch} imgsz={curve.imgsz} amp=true workers=8"
            name = "tuned.yaml" if len(curves) == 1 else f"tuned_s{curve.imgsz}_amp1.yaml"
            answer = replace(answer, train_settings=line, config_file=name)
        recommended += [] if answer is None else [answer]
    return TuneRecord(
        mode="run" if train else mode,  # type: ignore[arg-type]
        settings=settings,
        series=series,
        recommended=recommended,
        num_points=sum(len(s.path) for s in series),
    )


def knee_record(*, train: bool = False) -> TuneRecord:
    """Two series: imgsz 64 with its knee at 8 (refined to 6), imgsz 96 where 4 is out of
    memory."""
    return record_of(
        "infer",
        KNEE,
        Curve(64, saturating(8, 400.0)),
        Curve(96, saturating(16, 200.0), fits_up_to=2),
        train=train,
    )


def write_tune_sweep(root: Path, record: TuneRecord) -> Path:
    """A sweep folder holding a point folder per measured step (a failed one, code oom or
    over_budget, for a step that does not fit) and `record` as its tune.json."""
    for series in record.series:
        for step in series.path:
            imgsz = series.imgsz or 64
            if step.fits:
                make_point(root, step.batch, imgsz, float(step.img_per_s or 0.0))
            else:
                code = step.bound or "crashed"
                make_point(root, step.batch, imgsz, None, status={"code": code})
    (root / TUNE_FILE).write_bytes(document_bytes(record))
    return root
