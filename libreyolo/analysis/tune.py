"""The batch search of `hydra/sweeper=tune`: from what one series has measured, the next batch
to measure or the answer, and the answer's evidence. Pure and deterministic: the same measured
points give the same decision, so a resumed search (its points reused) walks the same path.

The test between two batches is `analysis.compare`'s rule on their trials' img/s (Welch's t at
5 %, |d| > max(2, t_{0.975, ν}) × SE), the one the compare gate applies; a gain counts when it
is significant and at least `min_gain_pct`. A batch is *as good as* the best measured one
unless the best's gain over it counts.

* knee: the batch grows geometrically from `batch_min` (x2, capped at `batch_max`) until
  `patience` + 1 doublings in a row gain nothing that counts over the last size that did (a
  curve may stall and climb again: measured on a CPU, batch 2 no faster than 1, 4 half again),
  a size does not fit, or it is `batch_max`. The answer is
  the smallest measured batch as good as the best; refinement bisects, on multiples of
  `batch_step`, between it and the largest batch below it that is not, and, when the growth was
  stopped by a batch that does not fit while the largest fitting one still gained, between
  those two first (a bigger batch that fits may be better still).
* maxfit: doubling until a batch does not fit, then bisection: the largest batch that fits.
  Where memory predicts the largest batch under the budget, the search measures that batch,
  then the next multiple of `batch_step` above it: a right prediction is confirmed in two
  points. The prediction comes from the largest point that fit (`predicted_fit`, from its
  tracked step's memory lines anchored at its own peak), else from the smallest that did not
  (where its lines predict below it), else from the prior: the largest batch the series' probe
  steps predicted before its first point (`sweep.tune_prior`). A prediction proven off (a
  batch at or under it does not fit, or the largest that fit is past it) gives way to growth
  from the largest that fit by twice the miss, and bisection.
* latency: as knee, among the batches that fit and whose latency percentile stays within
  `max_latency_ms`; the growth stops at the first that breaks the bound.
* knee and latency under `memory_budget_mb`: a size above the largest batch the largest
  fitting point predicts under the budget (before one does, the prior; never under
  `batch_min`) is not measured; the growth measures that batch as its last size instead (a
  prediction the point itself disproves is ignored).
* knee with ranking windows (`decide(..., ranking=True)`): each new size is measured on the
  short ranking window (`Next.ranked`); the search runs as above on each batch's latest
  measurement, a gain involving a ranked one counting on its mean alone (two short trials
  have too little power for the test), and an answer is given only once it and the best were
  measured on the full window (`_contenders`), where the test decides; where the full windows
  move the answer, the new one is measured in full too.
A search ends when no multiple of `batch_step` lies strictly inside the interval it refines.
An answer is given only when the points that decide it (itself, the best, its measured
neighbours; none for maxfit, which memory decides) were measured on a quiet host: a busy one's
point is measured again, `tune.remeasure` times at most, and counts by its newest numbers; still
busy, the search ends `contended` without an answer.

Must not: read or write files, import torch, numpy, Hydra or OmegaConf.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from libreyolo.analysis import stats
from libreyolo.analysis.compare import threshold_multiplier
from libreyolo.document.tune_model import Bound, Stop, TuneSettings, Versus

MEMORY_COST = 1.1  # a bigger batch's peak from this many times the answer's is a cost

__all__ = [
    "Done",
    "Measured",
    "Next",
    "Test",
    "as_good_as_best",
    "decide",
    "evidence",
    "gain_test",
    "growth",
    "latest",
    "versus",
]


@dataclass(frozen=True, slots=True)
class Measured:
    """One measured batch of a series, as the search reads it."""

    point: str  # its folder, relative to the sweep folder
    batch: int
    fits: bool
    bound: Bound | None = None  # why it does not fit
    trials: tuple[float, ...] = ()  # img/s of each trial
    latency_ms: float | None = None  # at the goal's percentile (trial mean)
    peak_mb: float | None = None  # VRAM on CUDA, resident memory on the CPU
    failed: str | None = None  # it failed for another reason than not fitting: the reason
    reused: bool = False
    contended: bool = False  # measured on a busy host
    # maxfit: the largest batch this point's memory lines predict under the budget (None:
    # no prediction, no budget, or not a training point).
    predicted_fit: int | None = None
    ranked: bool = False  # measured on the knee's short ranking window

    @property
    def mean(self) -> float | None:
        return stats.mean(self.trials)

    @property
    def sd(self) -> float | None:
        return stats.sample_sd(self.trials)


@dataclass(frozen=True, slots=True)
class Next:
    """Measure this batch next; `again`: once more, though it was measured (on a busy host, or
    on a ranking window); `ranked`: on the short ranking window."""

    batch: int
    again: bool = False
    ranked: bool = False


@dataclass(frozen=True, slots=True)
class Done:
    """The search is over: why, in a word and a sentence, and the batch it recommends."""

    stopped: Stop
    why: str
    batch: int | None


@dataclass(frozen=True, slots=True)
class Test:
    """The bigger batch's img/s against the smaller's: gain, and Welch's call on the trials
    (None: a side has fewer than two trials)."""

    gain_pct: float
    significant: bool | None
    p_value: float | None


def gain_test(smaller: Measured, bigger: Measured) -> Test | None:
    """`bigger`'s img/s gain over `smaller`'s and its significance; None without img/s."""
    a, b = smaller.mean, bigger.mean
    if a is None or b is None or a <= 0:
        return None
    gain = (b - a) / a * 100
    se = stats.combined_standard_error(smaller.trials, bigger.trials)
    if se is None:
        return Test(gain, None, None)
    diff = abs(b - a)
    if se == 0.0:  # neither side varies: any difference is one (compare's rule)
        return Test(gain, diff > 0.0, 0.0 if diff > 0.0 else 1.0)
    df = stats.welch_df(smaller.trials, bigger.trials)
    p_value = min(1.0, 2 * stats.t_upper_tail(diff / se, df)) if df else None
    return Test(gain, diff > threshold_multiplier(df) * se, p_value)


def _counts(settings: TuneSettings, smaller: Measured, bigger: Measured) -> bool:
    """Whether `bigger` gains over `smaller` what counts: significant and ≥ min_gain_pct.
    Where either was measured on a ranking window, its mean gain alone ranks them (two short
    trials have too little power for the test: taken as "no gain", they would stop the growth
    at every stall); the test decides between full windows (`_contenders`)."""
    result = gain_test(smaller, bigger)
    if result is None:
        return False
    if smaller.ranked or bigger.ranked:
        return result.gain_pct >= settings.min_gain_pct
    return result.significant is True and result.gain_pct >= settings.min_gain_pct


def growth(settings: TuneSettings) -> Iterator[int]:
    """The geometric sizes: batch_min, x2, ..., capped at (and ending with) batch_max."""
    batch = settings.batch_min
    while batch < settings.batch_max:
        yield batch
        batch *= 2
    yield settings.batch_max


def _feasible(settings: TuneSettings, point: Measured) -> bool:
    """It fits and, for the latency goal, meets the latency bound."""
    if not point.fits or point.failed is not None:
        return False
    if settings.goal != "latency":
        return True
    bound = settings.max_latency_ms
    return point.latency_ms is not None and bound is not None and point.latency_ms <= bound


def _inside(settings: TuneSettings, lo: int, hi: int, measured: set[int]) -> int | None:
    """The middle unmeasured multiple of batch_step strictly between lo and hi, if any."""
    step = settings.batch_step
    first = (lo // step + 1) * step
    candidates = [b for b in range(first, hi, step) if b not in measured]
    return candidates[len(candidates) // 2] if candidates else None


def _top(feasible: Sequence[Measured]) -> Measured:
    """The feasible batch with the highest mean img/s (the smaller one on a tie)."""
    return max(feasible, key=lambda m: (m.mean or 0.0, -m.batch))


def _as_good(settings: TuneSettings, point: Measured, top: Measured) -> bool:
    """`point` is as good as the best: the best's gain over it does not count."""
    return point is top or not _counts(settings, point, top)


def _still_gaining(settings: TuneSettings, feasible: Sequence[Measured]) -> bool:
    """The largest feasible batch gains what counts over the next smaller one (or is alone)."""
    if len(feasible) < 2:
        return True
    return _counts(settings, feasible[-2], feasible[-1])


def as_good_as_best(settings: TuneSettings, measured: Sequence[Measured]) -> list[int]:
    """The feasible batches, in order, whose img/s the best one's does not beat by a gain that
    counts: the set any of whose members a search may fairly recommend (a grid's, for one)."""
    feasible = [m for m in latest(measured) if _feasible(settings, m)]
    if not feasible:
        return []
    top = _top(feasible)
    return sorted(m.batch for m in feasible if _as_good(settings, m, top))


def _answer(settings: TuneSettings, feasible: Sequence[Measured]) -> Measured:
    """The smallest feasible batch as good as the best one (maxfit: the largest that fits)."""
    if settings.goal == "maxfit":
        return max(feasible, key=lambda m: m.batch)
    top = _top(feasible)
    return min((m for m in feasible if _as_good(settings, m, top)), key=lambda m: m.batch)


def _predicted_limit(
    settings: TuneSettings, measured: Sequence[Measured], prior: int | None
) -> int | None:
    """knee and latency under a memory budget: the largest batch (a multiple of batch_step)
    the largest fitting point's memory lines predict under it, or before any does, the prior
    (never under batch_min: that one is measured, not assumed); None without a prediction."""
    if settings.goal == "maxfit":
        return None
    guides = [m for m in measured if m.predicted_fit is not None and _feasible(settings, m)]
    if not guides:
        if prior is None:
            return None
        return max(prior // settings.batch_step * settings.batch_step, settings.batch_min)
    guide = max(guides, key=lambda m: m.batch)
    assert guide.predicted_fit is not None
    if guide.predicted_fit < guide.batch:  # proven off by the point itself: measure instead
        return None
    return max(guide.predicted_fit // settings.batch_step * settings.batch_step, guide.batch)


def _grow(
    settings: TuneSettings, by_batch: dict[int, Measured], limit: int | None = None
) -> Next | Done | None:
    """The next growth size, or how the growth ended (its `Done` carries no batch yet). A
    size above `limit` (predicted not to fit the memory budget) is not measured: the growth
    takes `limit` itself as its last size instead."""
    level: Measured | None = None  # the last size that gained what counts (the first at first)
    misses = 0  # doublings since `level` that gained nothing that counts
    for size in growth(settings):
        if limit is not None and size > limit:
            if limit > max(by_batch, default=0) and limit >= settings.batch_min:
                return Next(limit)
            why = (
                f"batch {size} and above are predicted over tune.memory_budget_mb "
                f"({settings.memory_budget_mb:g} MB; up to {limit} predicted to fit): not measured"
            )
            if limit in by_batch and not by_batch[limit].fits:
                why = f"batch {limit} does not fit ({_bound_text(by_batch[limit])})"
            return Done("no_fit", why, None)
        point = by_batch.get(size)
        if point is None:
            return Next(size)
        if not point.fits:
            return Done("no_fit", f"batch {size} does not fit ({_bound_text(point)})", None)
        if not _feasible(settings, point):
            return Done("latency_bound", f"batch {size}: {_latency_text(settings, point)}", None)
        if level is None or settings.goal == "maxfit" or _counts(settings, level, point):
            level, misses = point, 0
        else:
            misses += 1
            if misses > settings.patience:
                return Done("no_gain", _no_gain_why(settings, level, point), None)
        if size == settings.batch_max:
            return Done("batch_max", f"reached tune.batch_max ({size})", None)
    return None  # growth() always ends with batch_max, which returns above


def _maxfit_guide(
    fitting: Sequence[Measured], over: Sequence[Measured], prior: int | None
) -> tuple[str, int] | None:
    """Where maxfit's prediction comes from, and the batch it predicts: the largest fitting
    point's own lines (each point predicts from its own peak, so the guess sharpens near the
    limit); else the smallest point that did not fit, where its lines predict below it; else
    the prior (the probe steps before the first point); None: no prediction at all."""
    guides = [m for m in fitting if m.predicted_fit is not None]
    if guides:
        guide = max(guides, key=lambda m: m.batch)
        assert guide.predicted_fit is not None
        return f"predicted from batch {guide.batch}", guide.predicted_fit
    below = [m for m in over if m.predicted_fit is not None and m.predicted_fit < m.batch]
    if below:
        guide = min(below, key=lambda m: m.batch)
        assert guide.predicted_fit is not None
        return f"predicted from batch {guide.batch}", guide.predicted_fit
    if prior is not None:
        return "predicted before the first point", prior
    return None


def _guided_maxfit(
    settings: TuneSettings, measured: Sequence[Measured], prior: int | None
) -> Next | Done | None:
    """maxfit from the memory prediction (`_maxfit_guide`): measure the predicted batch, else
    the next step up from the largest that fit; bisect between the largest that fit and the
    smallest that did not once a prediction has been wrong. None (the doubling search) when
    nothing predicts anything."""
    step = settings.batch_step
    fitting = [m for m in measured if _feasible(settings, m)]
    lo = max((m.batch for m in fitting), default=0)  # 0: nothing fits yet
    over = [m for m in measured if not m.fits and m.batch > lo]
    found = _maxfit_guide(fitting, over, prior)
    if found is None:
        return None
    source, predicted = found
    hi = min((m.batch for m in over), default=None)
    done = {m.batch for m in measured}
    target = min(max(predicted // step * step, settings.batch_min), settings.batch_max)
    above = (lo // step + 1) * step if lo else settings.batch_min  # the next step up
    below_hi = hi is None or target < hi  # no batch at or under the prediction failed
    if lo < target and below_hi and target not in done:
        return Next(target)
    if lo <= target and below_hi and above <= settings.batch_max and above not in done:
        return Next(above)  # the prediction confirmed: the next step up must not fit
    # The prediction was off: grow from what fit by twice what it missed by, then bisect.
    if hi is None:
        if lo >= settings.batch_max:
            return Done("batch_max", f"reached tune.batch_max ({lo})", lo)
        grown = (lo + 2 * max(lo - target, step)) // step * step
        return Next(min(max(grown, above), settings.batch_max))
    inside = _inside(settings, lo, hi, done)
    if inside is not None and inside >= settings.batch_min:
        return Next(inside)
    smallest_over = next(m for m in over if m.batch == hi)
    why = f"batch {hi} does not fit ({_bound_text(smallest_over)})"
    if not lo:
        if settings.batch_min not in done:
            return Next(settings.batch_min)
        return Done("none_fits", why, None)
    return Done("no_fit", f"{why}; {source}: {target}", lo)


def latest(measured: Sequence[Measured]) -> list[Measured]:
    """Each batch's last measurement, in the order the batches were first measured (a point
    measured again on a busy host counts by its newest numbers)."""
    by_batch: dict[int, Measured] = {}
    for point in measured:
        by_batch[point.batch] = point
    return [by_batch[b] for b in dict.fromkeys(m.batch for m in measured)]


def decide(
    settings: TuneSettings,
    measured: Sequence[Measured],
    prior: int | None = None,
    *,
    ranking: bool = False,
) -> Next | Done:
    """The next batch to measure in this series, or the search's end with its answer.
    `prior`: the largest batch predicted under `memory_budget_mb` before any point was
    measured (maxfit starts there; knee and latency grow no further). `ranking` (knee): each
    new size is measured on the short ranking window, and an answer is given only once it and
    the best are measured on the full one (`_contenders`). An answer whose deciding points
    were measured on a busy host is not given at once: those points are measured again
    (`tune.remeasure` times each at most), and while still busy, the search ends `contended`
    without one."""
    ranking = ranking and settings.goal == "knee"
    newest = latest(measured)
    step = _decide(settings, newest, prior)
    if isinstance(step, Next):
        return Next(step.batch, ranked=ranking)
    if step.batch is None:
        return step
    if ranking:
        short = [m for m in _contenders(settings, newest, step.batch) if m.ranked]
        if short:
            return Next(min(m.batch for m in short), again=True)
    return _trusted(settings, measured, step)


def _contenders(settings: TuneSettings, measured: Sequence[Measured], batch: int) -> list[Measured]:
    """The points whose ranking-window verdict could change the answer `batch`: itself and
    the best, both judged as good by a test short windows have little power for. A batch
    below the answer is out on a significant loss, which short windows do show."""
    feasible = [m for m in measured if _feasible(settings, m)]
    answer = next(m for m in feasible if m.batch == batch)
    top = _top(feasible)
    return [answer] if top is answer else [answer, top]


def _trusted(settings: TuneSettings, measured: Sequence[Measured], done: Done) -> Next | Done:
    """`done` when its deciding points were measured on a quiet host; else the next of them
    to measure again, or the `contended` end once each had its `remeasure` more tries."""
    assert done.batch is not None
    busy = [m for m in _deciding(settings, latest(measured), done.batch) if m.contended]
    if not busy:
        return done
    # a ranking window's measurement is no try of the full one that replaced it
    tries = {
        m.batch: sum(p.batch == m.batch and p.ranked == m.ranked for p in measured) for m in busy
    }
    again = [m.batch for m in busy if tries[m.batch] <= settings.remeasure]
    if again:
        return Next(min(again), again=True)
    batches = ", ".join(str(m.batch) for m in busy)
    most = max(tries.values())
    return Done(
        "contended",
        f"batch {batches} measured on a busy host {most} time{'s' if most > 1 else ''} (the "
        f"host took CPU time from the steps): batch {done.batch} cannot be trusted; stop the "
        "other work on this machine and search again",
        None,
    )


def _deciding(settings: TuneSettings, measured: Sequence[Measured], batch: int) -> list[Measured]:
    """The points whose img/s decides `batch` as the answer: itself, the best, and the
    nearest measured batches that fit on either side."""
    if settings.goal == "maxfit":  # the largest that fits: memory decides, not img/s
        return []
    fitting = sorted((m for m in measured if m.fits and m.failed is None), key=lambda m: m.batch)
    answer = next(m for m in fitting if m.batch == batch)
    below = [m for m in fitting if m.batch < batch][-1:]
    above = [m for m in fitting if m.batch > batch][:1]
    feasible = [m for m in fitting if _feasible(settings, m)]
    top = [_top(feasible)] if feasible else []
    chosen = {m.batch: m for m in [answer, *below, *above, *top]}
    return sorted(chosen.values(), key=lambda m: m.batch)


def _decide(settings: TuneSettings, measured: Sequence[Measured], prior: int | None) -> Next | Done:
    """`decide` on each batch's latest measurement, before the busy host is weighed."""
    for point in measured:
        if point.failed is not None:
            return Done("failed", f"batch {point.batch} failed: {point.failed}", None)
    by_batch = {point.batch: point for point in measured}
    if settings.goal == "maxfit":
        guided = _guided_maxfit(settings, measured, prior)
        if guided is not None:
            return guided
    grown = _grow(settings, by_batch, _predicted_limit(settings, measured, prior))
    if isinstance(grown, Next) or grown is None:
        return grown or Done("batch_max", "reached tune.batch_max", None)
    feasible = sorted((m for m in measured if _feasible(settings, m)), key=lambda m: m.batch)
    if not feasible:
        return Done("none_fits", grown.why, None)
    done = set(by_batch)
    largest = feasible[-1]
    above = [m.batch for m in measured if m.batch > largest.batch and not _feasible(settings, m)]
    # A bigger batch may fit (and be better) below the first that does not: look there first,
    # unless the knee is behind the largest that fits (it gained nothing that counts).
    if above and (settings.goal != "knee" or _still_gaining(settings, feasible)):
        upward = _inside(settings, largest.batch, min(above), done)
        if upward is not None:
            return Next(upward)
    answer = _answer(settings, feasible)
    below = [m.batch for m in feasible if m.batch < answer.batch]
    if settings.goal != "maxfit" and below:
        downward = _inside(settings, max(below), answer.batch, done)
        if downward is not None:
            return Next(downward)
    return Done(grown.stopped, grown.why, answer.batch)


def versus(measured: Sequence[Measured], point: Measured) -> Versus | None:
    """`point` against the next smaller measured batch that fits, by that batch's newest
    measurement (a ranked size measured again in full counts by the full window), None: it is
    the smallest, or either has no img/s."""
    smaller = [m for m in latest(measured) if m.fits and m.failed is None and m.batch < point.batch]
    if not smaller or not point.fits:
        return None
    previous = max(smaller, key=lambda m: m.batch)
    result = gain_test(previous, point)
    if result is None:
        return None
    p_value = None if result.p_value is None else round(result.p_value, 4)
    return Versus(
        batch=previous.batch,
        gain_pct=round(result.gain_pct, 2),
        significant=result.significant,
        p_value=p_value,
    )


def _rate(point: Measured) -> str:
    """`412 ± 3 img/s` (no ± with a single trial)."""
    mean, sd = point.mean or 0.0, point.sd
    return f"{mean:.1f} img/s" if sd is None else f"{mean:.1f} ± {sd:.1f} img/s"


def _p_text(result: Test) -> str:
    if result.p_value is None:
        return "no trials to test"
    return f"Welch p {result.p_value:.2f}" if result.p_value >= 0.01 else "Welch p < 0.01"


def _no_gain_why(settings: TuneSettings, smaller: Measured, bigger: Measured) -> str:
    result = gain_test(smaller, bigger)
    if result is None:
        return f"batch {bigger.batch} has no img/s to compare"
    verdict = "not significant" if not result.significant else "significant but small"
    return (
        f"batch {bigger.batch} adds {result.gain_pct:+.1f} % over {smaller.batch}, {verdict} "
        f"({_p_text(result)}; a gain counts at ≥ {settings.min_gain_pct:g} %)"
    )


def _bound_text(point: Measured) -> str:
    what = "over the memory budget" if point.bound == "over_budget" else "out of memory"
    return what if point.peak_mb is None else f"{what}, peak {point.peak_mb:.0f} MB"


def _latency_text(settings: TuneSettings, point: Measured) -> str:
    bound = settings.max_latency_ms
    latency = "no latency" if point.latency_ms is None else f"{point.latency_ms:.1f} ms"
    return f"p{settings.percentile} {latency}, over the {bound:g} ms bound"


def _memory_ratio(answer: Measured, other: Measured) -> str:
    """`, at 1.9× the memory` when the bigger batch needs clearly more (a peak within 10 %,
    or lower, is the allocator's and the host's noise, not a cost of the batch)."""
    if answer.peak_mb and other.peak_mb and other.peak_mb >= MEMORY_COST * answer.peak_mb:
        return f", at {other.peak_mb / answer.peak_mb:.1f}× the memory"
    return ""


def evidence(
    settings: TuneSettings, measured: Sequence[Measured], batch: int, *, ranks: int = 1
) -> str:
    """The recommendation in one sentence: its throughput (or peak, for maxfit) and what the
    best measured batch, when bigger, or else the next measured batch up showed ("batch 32:
    412.0 ± 3.1 img/s; 64 adds +1.2 %, not significant (Welch p 0.41), at 1.9× the memory"),
    and a second when points of the series were measured on a busy host (their img/s ranks the
    host's load as much as the batch). On several `ranks` a point's peak is its largest
    rank's, and the sentence says so."""
    measured = latest(measured)
    busy = sum(m.contended for m in measured)
    if not busy or settings.goal == "maxfit":
        return _evidence(settings, measured, batch, ranks)
    return (
        f"{_evidence(settings, measured, batch, ranks)}. {busy} of {len(measured)} points were "
        "measured on a busy host: measure again on a quiet one (sweep.resume=false) before "
        "trusting the answer"
    )


def _evidence(settings: TuneSettings, measured: Sequence[Measured], batch: int, ranks: int) -> str:
    answer = next(m for m in measured if m.batch == batch)
    bigger = sorted((m for m in measured if m.batch > batch), key=lambda m: m.batch)
    if settings.goal == "maxfit":
        whose = "peak" if ranks < 2 else f"largest peak of its {ranks} ranks"
        peak = "" if answer.peak_mb is None else f" ({whose} {answer.peak_mb:.0f} MB)"
        head = f"batch {batch} fits{peak}"
    elif settings.goal == "latency":
        latency = "" if answer.latency_ms is None else f" at p{settings.percentile} "
        latency += "" if answer.latency_ms is None else f"{answer.latency_ms:.1f} ms"
        head = f"batch {batch}: {_rate(answer)}{latency}"
    else:
        head = f"batch {batch}: {_rate(answer)}"
    if not bigger:
        if batch == settings.batch_max and settings.goal != "latency":
            return f"{head}; tune.batch_max reached: raise it to look further"
        return head
    up = bigger[0]
    feasible = [m for m in measured if _feasible(settings, m)]
    top = _top(feasible) if feasible and settings.goal != "maxfit" else None
    if top is not None and top.batch > batch:  # the best does not beat it: say by how much
        up = top
    if not up.fits:
        return f"{head}; {up.batch} does not fit ({_bound_text(up)})"
    if settings.goal == "latency" and not _feasible(settings, up):
        return f"{head}; {up.batch}: {_latency_text(settings, up)}"
    result = gain_test(answer, up)
    if result is None:
        return head
    verdict = "not significant" if not result.significant else "below what counts"
    if result.significant and result.gain_pct < 0:
        verdict = "significantly slower"
    undecided = ""  # a gain that would count, were it significant: the trials decide nothing
    if result.significant is False and result.gain_pct >= settings.min_gain_pct:
        undecided = (
            ": the trials vary too much to tell; more trials (window.repeat) or longer windows "
            "would decide"
        )
    return (
        f"{head}; {up.batch} adds {result.gain_pct:+.1f} %, {verdict} ({_p_text(result)})"
        f"{_memory_ratio(answer, up)}{undecided}"
    )
