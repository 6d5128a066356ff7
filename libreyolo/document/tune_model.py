"""`tune.json`: what `hydra/sweeper=tune` measured, why it stopped and the batch it recommends
(`libreyolo.tune/v1`; docs/sweep-format.md describes it field by field).

* `TuneSettings`: the search's settings (`tune.*` of the config).
* `TuneSeries`: one series (a value of every other swept axis): its measured path in the order
  the search measured it (`TuneStep`), why the search stopped, the batch it recommends.
* `TunePrior`: what a series' probe steps predicted under the memory budget before its
  first point.
* `Recommendation`: one series' answer, with the sentence of evidence behind it.

Like `sweep_model.py`: data only, frozen, slotted, keyword-only dataclasses, each field with the
rule a reader checks (`rules.RULE`), no I/O.
"""

# No `from __future__ import annotations`: the converter reads real annotation objects.
from dataclasses import dataclass, field
from typing import Literal, get_args

from libreyolo.document.rules import (
    RULE,
    Choice,
    Count,
    Fields,
    Flag,
    Items,
    Number,
    Rule,
    Signed,
    Text,
)
from libreyolo.document.sweep_model import (
    MAX_BATCH,
    MAX_IMGSZ,
    MAX_METRIC,
    MAX_NAME_CHARS,
    MAX_TEXT_CHARS,
    MAX_THREADS,
    METRIC,
    OVERRIDES,
    Number_,
)

TUNE_SCHEMA = "libreyolo.tune/v1"
GOALS = ("knee", "maxfit", "latency")
Goal = Literal["knee", "maxfit", "latency"]
# Why a point does not fit: out of memory, or its measured peak above tune.memory_budget_mb.
BOUNDS = ("oom", "over_budget")
Bound = Literal["oom", "over_budget"]
# Why a series' search ended:
# no_gain: the next batch bought no significant img/s (knee found, then refined);
# no_fit: a bigger batch did not fit (the largest that fits found, then refined);
# batch_max: tune.batch_max reached while still gaining;
# latency_bound: a bigger batch broke the latency bound (then refined);
# none_fits: not even tune.batch_min fits or meets the bound: no recommendation;
# failed: a point failed for another reason (its reason is the why): no recommendation;
# contended: the points that decide the answer were measured on a busy host, also after
# tune.remeasure more tries each: no recommendation;
# interrupted: the sweep was stopped before the search ended.
Stop = Literal[
    "no_gain",
    "no_fit",
    "batch_max",
    "latency_bound",
    "none_fits",
    "failed",
    "contended",
    "interrupted",
]
STOPS: tuple[str, ...] = get_args(Stop)
MAX_STEPS = 256  # measured points in one series: far beyond a geometric search of 2**20
MAX_SERIES = 4096

BATCH: Rule = Count(1, MAX_BATCH)
NAME: Rule = Text(MAX_NAME_CHARS)
SENTENCE: Rule = Text(MAX_TEXT_CHARS)
PERCENT: Rule = Number(MAX_METRIC)
P_VALUE: Rule = Number(1.0)


def _meta(rule: Rule) -> dict[str, object]:
    return {RULE: rule}


@dataclass(frozen=True, slots=True, kw_only=True)
class TuneSettings:
    """The search's settings, as the config gave them (`libreyolo.config.schema.TuneConfig`)."""

    goal: Goal = field(default="knee", metadata=_meta(Choice(GOALS)))
    batch_min: int = field(default=1, metadata=_meta(BATCH))
    batch_max: int = field(default=64, metadata=_meta(BATCH))
    batch_step: int = field(default=8, metadata=_meta(BATCH))
    min_gain_pct: Number_ = field(default=5.0, metadata=_meta(PERCENT))
    # further doublings tried after one that gains nothing that counts, before the growth stops
    patience: int = field(default=1, metadata=_meta(Count(0, 64)))
    percentile: int = field(default=99, metadata=_meta(Count(1, 100)))
    max_latency_ms: Number_ | None = field(default=None, metadata=_meta(METRIC))
    memory_budget_mb: Number_ | None = field(default=None, metadata=_meta(METRIC))
    # a deciding point measured on a busy host is measured again up to this many times
    remeasure: int = field(default=2, metadata=_meta(Count(0, 16)))
    # knee: the steps (runs) of the ranking window (0: none, every point on the full window)
    rank_steps: int = field(default=0, metadata=_meta(Count(0, 1 << 20)))


@dataclass(frozen=True, slots=True, kw_only=True)
class Versus:
    """A measured batch against the next smaller batch that fits: the img/s gain and Welch's
    test on the trials (`analysis.compare`'s rule), with its two-sided p-value."""

    batch: int = field(metadata=_meta(BATCH))  # the smaller batch
    gain_pct: Number_ = field(metadata=_meta(Signed(MAX_METRIC)))  # may be negative
    significant: bool | None = field(default=None, metadata=_meta(Flag()))
    p_value: Number_ | None = field(default=None, metadata=_meta(P_VALUE))


@dataclass(frozen=True, slots=True, kw_only=True)
class TuneStep:
    """One measured point of a series' search, in measured order."""

    point: str = field(metadata=_meta(NAME))  # its folder, relative to the sweep folder
    batch: int = field(metadata=_meta(BATCH))
    fits: bool = field(metadata=_meta(Flag(null=False)))
    bound: Bound | None = field(
        default=None, metadata=_meta(Choice(BOUNDS, null=True))
    )  # when it does not fit
    img_per_s: Number_ | None = field(default=None, metadata=_meta(METRIC))  # trial mean
    img_per_s_sd: Number_ | None = field(default=None, metadata=_meta(METRIC))
    trials: int = field(default=0, metadata=_meta(Count(0, 1 << 16)))
    peak_mb: Number_ | None = field(default=None, metadata=_meta(METRIC))  # VRAM, else RSS
    latency_ms: Number_ | None = field(default=None, metadata=_meta(METRIC))  # the percentile
    versus: Versus | None = field(default=None, metadata=_meta(Fields(Versus, null=True)))
    reused: bool = field(default=False, metadata=_meta(Flag(null=False)))
    # measured on a busy host: its img/s ranks the host's load as much as the batch
    contended: bool = field(default=False, metadata=_meta(Flag(null=False)))
    # measured on the knee's short ranking window (two trials of `rank_steps`): it ranked the
    # size; where it could change the answer the point was measured again on the full window
    ranked: bool = field(default=False, metadata=_meta(Flag(null=False)))


@dataclass(frozen=True, slots=True, kw_only=True)
class TunePrior:
    """What the series' probe steps predicted before its first point, under
    `memory_budget_mb` (training on the CPU: `libreyolo.measure.budget_prior`)."""

    batch: int = field(metadata=_meta(Count(0, MAX_BATCH)))  # 0: not one image
    predicted_mb: Number_ = field(metadata=_meta(METRIC))  # the peak RSS predicted at `batch`
    anchor_mb: Number_ = field(metadata=_meta(METRIC))  # the last probe step's own peak RSS
    probe_s: Number_ = field(metadata=_meta(METRIC))  # the probe process, start to end


@dataclass(frozen=True, slots=True, kw_only=True)
class TuneSeries:
    """One series: the values of the other swept axes, its measured path and its answer."""

    imgsz: int | None = field(default=None, metadata=_meta(Count(1, MAX_IMGSZ)))
    amp: bool | None = field(default=None, metadata=_meta(Flag()))
    threads: int | None = field(default=None, metadata=_meta(Count(1, MAX_THREADS)))
    overrides: list[str] = field(default_factory=list, metadata=_meta(OVERRIDES))
    path: list[TuneStep] = field(
        default_factory=list, metadata=_meta(Items(Fields(TuneStep), MAX_STEPS))
    )
    stopped: Stop = field(default="interrupted", metadata=_meta(Choice(STOPS)))
    why: str = field(default="", metadata=_meta(SENTENCE))
    batch: int | None = field(default=None, metadata=_meta(BATCH))  # the recommended batch
    prior: TunePrior | None = field(default=None, metadata=_meta(Fields(TunePrior, null=True)))


@dataclass(frozen=True, slots=True, kw_only=True)
class Recommendation:
    """One series' recommended point: its settings, throughput and the evidence in a sentence
    ("batch 32: 412 ± 3 img/s; 64 adds +1.2 %, not significant (Welch p 0.41), at 1.9× the
    memory")."""

    imgsz: int | None = field(default=None, metadata=_meta(Count(1, MAX_IMGSZ)))
    amp: bool | None = field(default=None, metadata=_meta(Flag()))
    threads: int | None = field(default=None, metadata=_meta(Count(1, MAX_THREADS)))
    batch: int = field(metadata=_meta(BATCH))
    img_per_s: Number_ | None = field(default=None, metadata=_meta(METRIC))
    point: str = field(metadata=_meta(NAME))
    evidence: str = field(metadata=_meta(SENTENCE))
    # training: the settings as one line (`batch=32 imgsz=640 amp=true workers=8`) and the
    # `tuned*.yaml` beside tune.json that holds them (relative to the sweep folder)
    train_settings: str | None = field(default=None, metadata=_meta(SENTENCE))
    config_file: str | None = field(default=None, metadata=_meta(NAME))
    # a search of libreyolo 1.x's own trainer (`trainer=`): its training at this batch as one
    # command line a shell runs as is (`OMP_NUM_THREADS=2 <env>/bin/libreyolo train data=...`)
    train_command: str | None = field(default=None, metadata=_meta(SENTENCE))


@dataclass(frozen=True, slots=True, kw_only=True)
class TuneRecord:
    """`tune.json`: the settings, every series' search and the recommendations (one per
    series that found an answer, in series order)."""

    schema: str = field(default=TUNE_SCHEMA, metadata=_meta(Choice((TUNE_SCHEMA,))))
    mode: Literal["run", "infer"] = field(metadata=_meta(Choice(("run", "infer"))))
    settings: TuneSettings = field(metadata=_meta(Fields(TuneSettings)))
    series: list[TuneSeries] = field(
        default_factory=list, metadata=_meta(Items(Fields(TuneSeries), MAX_SERIES))
    )
    recommended: list[Recommendation] = field(
        default_factory=list, metadata=_meta(Items(Fields(Recommendation), MAX_SERIES))
    )
    num_points: int = field(default=0, metadata=_meta(Count(0, 1 << 32)))  # measured, all series
