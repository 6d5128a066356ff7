"""The end of a `hydra/sweeper=tune` search: `tune.json` (and, for training, `tuned*.yaml`).

Role: `tune_record` turns each series' measured path and `Done` (None: the sweep stopped
first) into the `libreyolo.tune/v1` record (`document.tune_model.TuneRecord`): the path in
measured order, each step tested against the next smaller batch measured before it
(`analysis.tune.versus`), why the search stopped, and one recommendation per series that found
an answer, with its evidence (`analysis.tune.evidence`) and, for `mode=run`, its settings line
and config file (`tuned_config.py`). `write_tune` writes the config files, then `tune.json`
over the sweep folder's (atomically, canonical JSON).

Must not: import Hydra or OmegaConf, measure, or read a point's files outside the sweep folder.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from libreyolo.analysis.tune import Done, Measured, evidence, versus
from libreyolo.document.codec import document_bytes
from libreyolo.document.files import load, write_atomic
from libreyolo.document.json_value import JsonObject
from libreyolo.document.limits import MAX_PROFILE_BYTES
from libreyolo.document.sweep_io import (
    REQUEST_FILE,
    STATUS_FILE,
    TUNE_FILE,
    inside,
    read_request,
    read_status,
)
from libreyolo.document.tune_model import (
    Recommendation,
    TunePrior,
    TuneRecord,
    TuneSeries,
    TuneSettings,
    TuneStep,
)
from libreyolo.errors import ProfileError
from libreyolo.sweep.tuned_config import (
    train_settings,
    tuned_name,
    tuned_text,
    workers_of,
    world_of,
    write_tuned,
)

INTERRUPTED_WHY = "the sweep was stopped before this search ended"


@dataclass(frozen=True, slots=True)
class SeriesResult:
    """One series' search as it ended: its settings, what it measured, its answer."""

    overrides: tuple[str, ...]  # the values of its swept axes (every one but the batch)
    imgsz: int | None
    amp: bool | None
    threads: int | None
    measured: tuple[Measured, ...]
    done: Done | None  # None: stopped before the search ended
    prior: TunePrior | None = None  # what its probe steps predicted before its first point
    ranks: int = 1  # training ranks of each point: a point's peak is its largest rank's


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def _path(measured: Sequence[Measured]) -> list[TuneStep]:
    return [
        TuneStep(
            point=point.point,
            batch=point.batch,
            fits=point.fits,
            bound=point.bound,
            img_per_s=_rounded(point.mean),
            img_per_s_sd=_rounded(point.sd),
            trials=len(point.trials),
            peak_mb=point.peak_mb,
            latency_ms=point.latency_ms,
            versus=versus(measured[: index + 1], point),
            reused=point.reused,
            contended=point.contended,
            ranked=point.ranked,
        )
        for index, point in enumerate(measured)
    ]


def _series(result: SeriesResult) -> TuneSeries:
    done = result.done
    return TuneSeries(
        imgsz=result.imgsz,
        amp=result.amp,
        threads=result.threads,
        overrides=list(result.overrides),
        path=_path(result.measured),
        stopped="interrupted" if done is None else done.stopped,
        why=INTERRUPTED_WHY if done is None else done.why,
        batch=None if done is None else done.batch,
        prior=result.prior,
    )


def _point_config(root: Path, point: str) -> JsonObject:
    """The resolved config in `point`'s `point.json` ({} when it has none of ours)."""
    folder = inside(root, point)
    request = None if folder is None else read_request(folder / REQUEST_FILE)
    return {} if request is None else request.config


def _trainer_command(root: Path, point: str) -> str | None:
    """The command of libreyolo 1.x's training the point measured (its profile's
    `run.trainer.command`); None for this package's own step or a profile that is lost."""
    folder = inside(root, point)
    status = None if folder is None else read_status(folder / STATUS_FILE)
    path = None if folder is None or status is None else inside(folder, status.profile or "")
    if path is None or not path.is_file():
        return None
    try:
        profile = load(str(path), max_input_bytes=MAX_PROFILE_BYTES)
    except ProfileError:
        return None
    trainer = profile.run.trainer
    return None if trainer is None else trainer.command


def tune_record(
    root: Path, mode: str, settings: TuneSettings, results: Sequence[SeriesResult]
) -> tuple[TuneRecord, dict[str, str]]:
    """The record of the search at `root`, and for `mode=run` the config files (name -> text)
    its recommendations name."""
    recommended: list[Recommendation] = []
    texts: dict[str, str] = {}
    for index, result in enumerate(results):
        batch = None if result.done is None else result.done.batch
        if batch is None:
            continue
        answer = next(m for m in reversed(result.measured) if m.batch == batch)
        said = evidence(settings, result.measured, batch, ranks=result.ranks)
        recommendation = Recommendation(
            imgsz=result.imgsz,
            amp=result.amp,
            threads=result.threads,
            batch=batch,
            img_per_s=_rounded(answer.mean),
            point=answer.point,
            evidence=said,
        )
        if mode == "run":
            config = _point_config(root, answer.point)
            name = tuned_name(answer.point, batch, index=index, num_series=len(results))
            name = f"tuned_{index + 1}.yaml" if name in texts else name
            imgsz, amp, threads = result.imgsz, result.amp, result.threads
            why = f"{settings.goal}: {said}"
            command = _trainer_command(root, answer.point)
            texts[name] = tuned_text(
                config,
                batch=batch,
                imgsz=imgsz,
                amp=amp,
                threads=threads,
                why=why,
                command=command,
            )
            workers = workers_of(config)
            line = train_settings(
                batch=batch,
                imgsz=imgsz,
                amp=amp,
                threads=threads,
                workers=workers,
                world=world_of(config),
            )
            recommendation = dataclasses.replace(
                recommendation,
                train_settings=line,
                config_file=name,
                train_command=command,
            )
        recommended.append(recommendation)
    record = TuneRecord(
        mode="run" if mode == "run" else "infer",
        settings=settings,
        series=[_series(result) for result in results],
        recommended=recommended,
        num_points=sum(len(result.measured) for result in results),
    )
    return record, texts


def write_tune(root: Path, record: TuneRecord, texts: Mapping[str, str]) -> Path:
    """Write the config files `texts`, then `root`'s tune.json; return its path."""
    write_tuned(root, texts)
    path = root / TUNE_FILE
    write_atomic(path, document_bytes(record))
    return path
