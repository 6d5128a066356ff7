"""Results -> text lines for people. Lines libreyolo 1.6.0 printed keep its wording and
number formats (scripts grep them); new information goes on new lines.

Views return plain lines; `render/style.py` turns them into styled rich text for a colour
terminal. Data never enters markup: kernel names contain `[` and `]`. Rich is not imported here,
so a reader whose output is piped starts without it.
Pure: no clock, environment or filesystem.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from libreyolo.analysis.result_kind import ResultKind, kind_of
from libreyolo.document.mode import Mode
from libreyolo.render.compute_text import compare_compute_lines
from libreyolo.render.diff_text import diff_lines
from libreyolo.render.memory_text import compare_tensor_lines, memory_lines
from libreyolo.render.oom_text import oom_lines
from libreyolo.render.safe import safe_text, short_name
from libreyolo.render.summary_text import note_lines, quiet_verdict_line, summary_lines
from libreyolo.render.trainer_gap_view import trainer_gap_lines
from libreyolo.render.units import (
    fmt_count,
    fmt_or_unknown,
    fmt_pct_change,
    fmt_share,
    fmt_value,
)

if TYPE_CHECKING:  # result types only; importing them would cost every reader start-up time
    from libreyolo.analysis.compare import Comparison, Delta, ShareDelta, Significance
    from libreyolo.analysis.kernels import KernelTable
    from libreyolo.analysis.lookup import MetricList, MetricValue
    from libreyolo.analysis.oom_sites import OomView
    from libreyolo.analysis.ops import OpTable
    from libreyolo.analysis.outcome import ConfigView, MeasurementOutcome
    from libreyolo.analysis.phases import PhaseBreakdown
    from libreyolo.analysis.scaling import Scaling
    from libreyolo.analysis.summary import Summary
    from libreyolo.analysis.sweep import SweepView
    from libreyolo.analysis.sweep_compare import SweepComparison
    from libreyolo.analysis.tensor_memory import TensorMemoryView
    from libreyolo.analysis.tracked import LoggedRuns
    from libreyolo.analysis.whatif import Projection
    from libreyolo.render.html.written import ReportWritten
    from libreyolo.render.listing import SubcommandList

KERNELS_HEADER = "  %GPU   ms/step  x/step TC  kernel  [category]"
OPS_HEADER = "  %cpu   ms/step  x/step  op"
PHASES_HEADER = "phase         gpu_ms  wall_ms  kernels     ops"


Lines = list[str]
_VIEWS: dict[ResultKind, Callable[[Any], Lines]] = {}


def _view(
    kind: ResultKind,
) -> Callable[[Callable[[Any], Lines]], Callable[[Any], Lines]]:
    def register(func: Callable[[Any], Lines]) -> Callable[[Any], Lines]:
        _VIEWS[kind] = func
        return func

    return register


def to_lines(result: Any) -> Lines:
    """The text view of a result, chosen by its `result_kind`; no line holds a control
    character."""
    kind = kind_of(result)
    view = None if kind is None else _VIEWS.get(kind)
    if view is None:
        raise TypeError(f"no text view for {type(result).__name__}")
    # The views escape what they take from files; this guard covers any string they miss.
    return [safe_text(line) for line in view(result)]


@_view(ResultKind.SUMMARY)
def _(result: Summary) -> Lines:
    return summary_lines(result)


@_view(ResultKind.METRIC)
def _(result: MetricValue) -> Lines:
    return [fmt_value(result.value)]


@_view(ResultKind.METRIC_LIST)
def _(result: MetricList) -> Lines:
    return ["available metrics:", *(f"  {short_name(name)}" for name in result.names)]


@_view(ResultKind.KERNELS)
def _(result: KernelTable) -> Lines:
    lines: Lines = [KERNELS_HEADER]
    for row in result.rows:
        lines.append(
            f"{row.share * 100:6.2f} {row.ms_per_step:9.3f} "
            f"{fmt_count(row.num_per_step):>7}  {'Y' if row.tensor_core else ' '}  "
            f"{short_name(row.label)}  [{short_name(row.category)}]"
        )
    return lines


@_view(ResultKind.OPS)
def _(result: OpTable) -> Lines:
    lines: Lines = [OPS_HEADER]
    for row in result.rows:
        ms = row.total_ms_per_step if row.self_ms_per_step is None else row.self_ms_per_step
        line = (
            f"{row.share * 100:6.2f} {ms:9.3f} {fmt_count(row.num_per_step):>7}  "
            f"{short_name(row.name)}"
        )
        if row.self_ms_per_step is not None:
            line += f"  [total {row.total_ms_per_step:.3f} ms]"
        lines.append(line)
    if result.inclusive_only:
        lines.append("note: this profile stores inclusive op time only (libreyolo 1.6.0 file)")
    return lines


@_view(ResultKind.PHASES)
def _(result: PhaseBreakdown) -> Lines:
    lines: Lines = [PHASES_HEADER]
    for row in result.rows:
        wall = "-" if row.wall_ms_per_step is None else f"{row.wall_ms_per_step:.1f}"
        lines.append(
            f"{short_name(row.phase):<11} {row.gpu_ms_per_step:8.1f} {wall:>8} "
            f"{fmt_count(row.kernels_per_step):>8} {fmt_count(row.ops_per_step):>7}"
        )
    if result.comm is not None:
        exposed = result.comm.exposed_ms_per_step
        lines.append(
            f"comm: {result.comm.comm_ms_per_step:.1f} ms/step in collectives, beside the phases "
            f"above ({'?' if exposed is None else f'{exposed:.1f}'} ms of it exposed)"
        )
    return lines


@_view(ResultKind.MEMORY)
def _(result: TensorMemoryView) -> Lines:
    return memory_lines(result)


@_view(ResultKind.OOM)
def _(result: OomView) -> Lines:
    return oom_lines(result)


def _arrow(delta: Delta, suffix: str = "") -> str:
    return f"{fmt_or_unknown(delta.before)} -> {fmt_or_unknown(delta.after)}{suffix}"


def _points(delta: ShareDelta) -> str:
    """A share's move in percentage points (never a ratio), and whether it is noise."""
    points = delta.change_points
    if points is None:
        return ""
    return f" ({points:+.1f} points{'' if delta.moved else ', within noise'})"


def _tested(sig: Significance) -> str:
    """The tag of a delta tested like img/s: the call and its numbers, or where it came from."""
    if sig.significant is None:
        return f"  [{sig.text}]"
    return f"  [{'significant' if sig.significant else 'NOT significant'}: {sig.text}]"


def _scaling_line(scaling: Scaling) -> str:
    """The world's throughput on each side and how far from linear the ranks scale."""
    (ranks_b, ranks_a), (rate_b, rate_a) = scaling.ranks, scaling.img_per_s
    return (
        f"scaling        {ranks_b} -> {ranks_a} rank{'s' if ranks_a != 1 else ''}: "
        f"{rate_b:.2f} -> {rate_a:.2f} img/s over all ranks, {scaling.speedup:.2f}x of an "
        f"ideal {ranks_a / ranks_b:.2f}x: {scaling.efficiency * 100:.0f}% scaling efficiency"
    )


@_view(ResultKind.COMPARE)
def _(result: Comparison) -> Lines:
    sig = result.significance
    tag = {True: "  [significant]", False: "  [NOT significant]"}.get(
        sig.significant,  # type: ignore[arg-type]
        f"  [{sig.text}]",
    )
    lines: Lines = [
        f"img/s          {_arrow(result.img_per_s)}{fmt_pct_change(result.img_per_s.change)}{tag}"
    ]
    if result.scaling is not None:
        lines.append(_scaling_line(result.scaling))
    if sig.significant is not None:
        lines.append(
            f"               trials: mean {sig.mean_before:.2f} (n={sig.n[0]}) -> "
            f"{sig.mean_after:.2f} (n={sig.n[1]}); {sig.text}"
        )
    if result.ms_per_image.before and result.ms_per_image.after:
        lines.append(
            f"ms/image       {_arrow(result.ms_per_image)}"
            f"{fmt_pct_change(result.ms_per_image.change)}   (batch-independent speed)"
        )
    step = result.step_ms
    if step.before is not None or step.after is not None:
        lines.append(
            f"step           {_arrow(step, ' ms')}{fmt_pct_change(step.change)}"
            f"{_tested(result.tested['step_ms'])}"
        )
    if result.has_gpu:  # on CPU-only profiles these read 0% / 0: noise, not information
        lines += [
            f"GPU util       {fmt_share(result.gpu_util.before)} -> "
            f"{fmt_share(result.gpu_util.after)}",
            f"host overhead  {_arrow(result.host_overhead_ms, ' ms/step')}",
            f"launches/step  {_arrow(result.launches_per_step)}",
        ]
    lines.append(f"verdict        {_arrow(result.bound)}")
    for label, key, delta in (
        ("latency p50", "latency_p50_ms", result.latency_p50_ms),
        ("latency p99", "latency_p99_ms", result.latency_p99_ms),
    ):
        if delta is not None:
            lines.append(
                f"{label:<15}{_arrow(delta, ' ms')}{fmt_pct_change(delta.change)}"
                f"{_tested(result.tested[key])}"
            )
    lines += compare_compute_lines(result.compute)
    lines += compare_tensor_lines(result.tensors)
    wait = result.cpu_wait_frac
    if wait.before is not None or wait.after is not None:
        lines.append(
            f"CPU wait       {fmt_share(wait.before)} -> {fmt_share(wait.after)}{_points(wait)}"
        )
    lines += [f"warning: {safe_text(w)}" for w in result.warnings]
    if result.trainer_gap is not None:
        lines += trainer_gap_lines(result.trainer_gap)
    if result.diff is not None:
        lines += diff_lines(result.diff)
    if result.gate is not None:
        from libreyolo.render.gate_text import gate_line

        lines.append(gate_line(result.gate))
    return lines


@_view(ResultKind.WHAT_IF)
def _(result: Projection) -> Lines:
    lines: Lines = [
        f"what-if [{safe_text(result.bound)}]: {safe_text(result.mechanism)}",
        f"  step   {result.step_ms} -> ~{result.projected_step_ms:.0f} ms",
    ]
    if result.img_per_s and result.projected_img_per_s:
        change = (result.projected_img_per_s - result.img_per_s) / result.img_per_s
        lines.append(
            f"  img/s  {result.img_per_s} -> ~{result.projected_img_per_s:.0f}"
            f"{fmt_pct_change(change)}"
        )
    lines += [f"  assumes: {safe_text(a)}" for a in result.assumptions]
    lines.append(f"  {safe_text(result.checked)}")
    if result.regime == "measured":  # a variant's trial: measured, so not "rough"
        lines.append(f"  ({safe_text(result.caveat)})")
    else:
        lines.append("  (rough, verify by actually profiling the change)")
    return lines


def _throughput(result: MeasurementOutcome) -> str:
    ranks = result.metrics.get("world_size")
    if isinstance(ranks, int):  # a multi-process run: the world's pace, and rank 0's own
        return (
            f"{fmt_or_unknown(result.metrics.get('global_img_per_s'))} over {ranks} ranks "
            f"({fmt_or_unknown(result.metrics.get('img_per_s'))} on rank 0)"
        )
    text = fmt_or_unknown(result.metrics.get("img_per_s"))
    if result.num_trials > 1 and result.img_per_s_std is not None:
        text += f" +/- {result.img_per_s_std} (n={result.num_trials})"
    return text


@_view(ResultKind.OUTCOME)
def _(result: MeasurementOutcome) -> Lines:
    m = result.metrics
    if result.mode == Mode.INFER:
        lines = [
            f"latency  p50 {fmt_or_unknown(m.get('latency_p50_ms'))} ms | p90 "
            f"{fmt_or_unknown(m.get('latency_p90_ms'))} ms | p99 "
            f"{fmt_or_unknown(m.get('latency_p99_ms'))} ms  |  {_throughput(result)} img/s",
            f"stages   preprocess {fmt_or_unknown(m.get('preprocess_ms'))} ms | forward "
            f"{fmt_or_unknown(m.get('forward_ms'))} ms | postprocess/NMS "
            f"{fmt_or_unknown(m.get('nms_ms'))} ms",
            f">> {safe_text(result.bound.upper())}: {safe_text(result.why)}",
        ]
    else:
        lines = [f"img/s: {_throughput(result)}  |  {safe_text(result.bound)}"]
        if result.quiet_why is not None:
            lines.append(f">> CONTENDED: {safe_text(result.why)}")
    if result.quiet_why is not None:
        lines.append(quiet_verdict_line(result.quiet_bound, result.quiet_why))
    # Beside the numbers they qualify (random weights, a flag that had no effect), with or
    # without a trace; the path and the next commands stay the last lines.
    lines += note_lines(result.notes, result.trace_notes)
    path = safe_text(result.profile_path)
    program, pasted = safe_text(result.program), shlex.quote(path)  # lines to paste back
    return [
        *lines,
        f"profile: {path}",
        f"next:    {program} profile summary {pasted}",
        f"         {program} profile report {pasted}  (an HTML page)",
    ]


@_view(ResultKind.SWEEP)
def _(result: SweepView) -> Lines:
    # sweeps only: profile readers skip it
    from libreyolo.render.sweep_text import HIGHEST, sweep_lines

    if result.tune is None:
        return sweep_lines(result.record)
    from libreyolo.render.tune_text import tune_lines

    # the search's answer first; the grid's own pick is then only the fastest point
    return tune_lines(result.tune) + sweep_lines(result.record, best=HIGHEST)


@_view(ResultKind.SWEEP_COMPARE)
def _(result: SweepComparison) -> Lines:
    from libreyolo.render.sweep_compare_text import sweep_compare_lines

    return sweep_compare_lines(result)


@_view(ResultKind.REPORT)
def _(result: ReportWritten) -> Lines:
    return [safe_text(result.path)]  # the path alone: `xdg-open "$(libreyolo profile report …)"`


@_view(ResultKind.LOGGED)
def _(result: LoggedRuns) -> Lines:
    lines: Lines = []
    if result.mlflow_uri is not None:
        lines.append(
            f"mlflow: {result.mlflow_uri}  experiment {result.experiment} "
            f"(id {result.experiment_id})"
        )
        if result.parent_run_id is not None:
            lines.append(f"  sweep run {result.parent_run_id}")
    if result.tensorboard_dir is not None:
        lines.append(f"tensorboard: {result.tensorboard_dir}")
    width = max((len(run.name) for run in result.runs), default=0)
    for run in result.runs:
        where = [f"run {run.mlflow_run_id}"] if run.mlflow_run_id else []
        where += [run.tensorboard_dir] if run.tensorboard_dir else []
        lines.append(f"  {run.name:<{width}}  {run.status:<11}  {'  '.join(where)}".rstrip())
        if run.reason:
            lines.append(f"    {run.reason}")
    return lines


@_view(ResultKind.CONFIG)
def _(result: ConfigView) -> Lines:
    return result.yaml_text.rstrip("\n").splitlines()


@_view(ResultKind.SUBCOMMANDS)
def _(result: SubcommandList) -> Lines:
    width = max(len(name) for name, _ in result.entries)
    rows = [f"  {name:<{width}}  {help_text}" for name, help_text in result.entries]
    return [
        "usage: libreyolo profile <subcommand> [<positional>] [--flag value ...]",
        "",
        "subcommands:",
        *rows,
        "",
        "run 'libreyolo profile <subcommand> --help' for its flags.",
    ]
