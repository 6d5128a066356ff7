"""The `summary` text view, line by line (1.6.0's lines first, new information on new lines).

A CPU-only profile gets no GPU-kernel parts (headline kernel counts, empty kernel sections):
they would print zeros or `?` that mean nothing. Pure: a Summary in, lines out; no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from libreyolo.analysis.fragmentation import fragmentation_line
from libreyolo.document.health_names import SHARES
from libreyolo.document.phases import FORWARD, POSTPROCESS, PREPROCESS
from libreyolo.render.compute_text import compute_lines
from libreyolo.render.exec_text import exec_lines
from libreyolo.render.memory_text import split_line
from libreyolo.render.safe import safe_text, short_name
from libreyolo.render.units import bar, fmt_or_unknown, fmt_share, fmt_value
from libreyolo.render.world_text import world_lines

if TYPE_CHECKING:
    from libreyolo.analysis.summary import Summary

MEMORY_PRESSURE_LINE = (
    "** MEMORY-PRESSURE: VRAM thrash, utilisation/throughput here are unreliable **"
)
CONTENDED_LINE = (
    "** CONTENDED: the measured threads queued for CPUs; every time here is inflated **"
)
# The label of a caveat the trace analyser found, kept apart from `note:` (what the run noted
# about itself, or what reading it found) so a reader can tell the two sources apart.
TRACE_NOTE_LABEL = "trace note"


def note_lines(notes: Sequence[str], trace_notes: Sequence[str]) -> list[str]:
    """`note: ...` for each note, then `trace note: ...` for each of the trace's caveats."""
    return [f"note: {safe_text(note)}" for note in notes] + [
        f"{TRACE_NOTE_LABEL}: {safe_text(note)}" for note in trace_notes
    ]


def _num(value: object) -> float:
    return float(value) if isinstance(value, int | float) else 0.0


def _headline(s: Summary) -> str:
    m = s.metrics
    family = f" ({short_name(s.family)})" if s.family else ""
    rank = " on rank 0" if s.world is not None else ""
    line = (
        f"model {short_name(s.model or '?')}{family}  |  "
        f"{fmt_or_unknown(m.get('img_per_s'))} img/s{rank}  |  "
        f"step {fmt_or_unknown(m.get('step_ms'))} ms"
    )
    if not s.has_gpu:  # no kernels ran: "0 kernels/step @ ~0us" (or "?") would mean nothing
        return line
    return (
        f"{line}  |  {fmt_or_unknown(m.get('kernels_per_step'))} kernels/step @ "
        f"~{_num(m.get('mean_kernel_us')):.0f}us"
    )


def _trainer_lines(s: Summary) -> list[str]:
    """Whose steps these are, when libreyolo 1.x's own trainer ran them (`--trainer`)."""
    if s.run.trainer is None:
        return []
    lines = [f"trainer  {safe_text(s.run.trainer)}"]
    if s.run.train_command:
        lines.append(f"train    {safe_text(s.run.train_command)}")
    return lines


def _inference_lines(s: Summary) -> list[str]:
    if s.latency is None or s.stages_ms is None:
        return []
    lat, st = s.latency, s.stages_ms
    lines = [
        f"latency  p50 {fmt_or_unknown(lat.p50_ms)} ms | p90 {fmt_or_unknown(lat.p90_ms)} ms"
        f" | p99 {fmt_or_unknown(lat.p99_ms)} ms  ({lat.num_samples} samples)",
        f"stages   preprocess {fmt_or_unknown(st[PREPROCESS])} ms | forward "
        f"{fmt_or_unknown(st[FORWARD])} ms | postprocess/NMS "
        f"{fmt_or_unknown(st[POSTPROCESS])} ms",
    ]
    weak = weak_percentiles_note(s)
    if weak:
        lines.append(f"note     {weak}")
    return lines


def weak_percentiles_note(s: Summary) -> str | None:
    """The note on percentiles from too few samples (text summary and report page)."""
    lat = s.latency
    if lat is None or not lat.weak:
        return None
    return (
        f"{' and '.join(lat.weak)} from {lat.num_samples} samples are weak "
        "(p90 needs 64, p99 100; raise --runs)"
    )


def _device_lines(s: Summary) -> list[str]:
    m = s.metrics
    if not s.has_gpu and (s.run.device or "").startswith("cuda"):
        return [
            f"device   {s.run.device}, no GPU activity recorded: GPU util, Tensor Cores and "
            f"launches unknown  |  peak VRAM {fmt_or_unknown(m.get('peak_vram_mb'))} MB "
            "(allocator)"
        ]
    if not s.has_gpu:
        return [
            "device   CPU only: no GPU kernels (GPU util, Tensor Cores, VRAM and launches "
            "do not apply)"
        ]
    lines = [
        f"GPU util {_num(m.get('gpu_util')) * 100:.0f}%  "
        f"({fmt_value(m.get('gpu_busy_ms'))} ms busy)"
        f"  |  Tensor Cores {_num(m.get('tensorcore_pct')):.0f}%  |  peak VRAM "
        f"{fmt_or_unknown(m.get('peak_vram_mb'))} MB  |  memcpy {fmt_value(m.get('memcpy_ms'))} ms",
        f"host overhead {fmt_or_unknown(m.get('host_overhead_ms'))} ms/step  |  "
        f"{fmt_value(m.get('launches_per_step'))} kernel launches/step",
    ]
    comm = m.get("comm_ms")
    if isinstance(comm, float) and comm > 0:
        exposed = m.get("comm_exposed_pct")
        share = (
            ""
            if exposed is None
            else f", {fmt_value(exposed)}% of it exposed (no computation beside it)"
        )
        lines.append(f"comm     {fmt_value(comm)} ms/step in collective kernels{share}")
    if m.get("host_us_per_launch") is not None:
        lines.append(
            f"launch   ~{_num(m.get('host_us_per_launch')):.1f}us host time per launch "
            "(median of the launch calls)"
        )
    return lines


def _host_lines(s: Summary) -> list[str]:
    if s.contention_unknown is not None:
        return [f"host     {s.contention_unknown}"]
    m = s.metrics
    lines = [
        f"host     CPU wait {fmt_share(m.get('cpu_wait_frac'))} of runnable time "
        f"({fmt_or_unknown(m.get('cpu_wait_ms_per_step'))} ms/step)  |  steal "
        f"{fmt_share(m.get('steal_frac'))}"
    ]
    if s.hardest_steps:
        worst = ", ".join(
            f"#{row.index}{' (synced)' if row.synced else ''} waited {row.cpu_wait_ms:.1f} ms "
            f"({row.cpu_wait_frac * 100:.0f}%)"
            for row in s.hardest_steps
        )
        lines.append(f"         steps hit hardest: {worst}")
    return lines


def _health_lines(s: Summary) -> list[str]:
    """One line per failed trace health check: what it found against its limit, and why that
    matters."""
    if s.trace_health is None:
        return []
    return [
        f"trace    SUSPECT: {check.name} {_amount(check.name, check.found)} (a sound trace: at "
        f"most {_amount(check.name, check.limit)}): {check.meaning}"
        for check in s.trace_health.failed()
    ]


def _amount(name: str, value: float) -> str:
    if name in SHARES:
        return f"{value * 100:.1f}%"
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _verdict_lines(s: Summary) -> list[str]:
    verdict = s.verdict
    lines = [*_health_lines(s), f">> {safe_text(verdict.bound.upper())}: {safe_text(verdict.why)}"]
    if verdict.levers:
        lines.append(f"   levers: {safe_text('; '.join(verdict.levers))}")
    if verdict.quiet_why is not None:
        lines.append(quiet_verdict_line(verdict.quiet_bound, verdict.quiet_why))
    return lines


def quiet_verdict_line(bound: str | None, why: str | None) -> str:
    """A contended verdict's second line: the verdict its numbers still support if the
    starvation is ignored (not a prediction of a quiet run, whose numbers would differ), or,
    when starving may have made any verdict (`bound` None), only what they measured."""
    if bound is None:
        return f"   as measured on the busy host: {safe_text(why or '')}"
    label = safe_text(bound.upper())
    return f"   read as if the host were quiet, these numbers say {label}: {safe_text(why or '')}"


def _mix_lines(s: Summary) -> list[str]:
    """1.6.0's `kernel mix:` and `top kernels/step:` sections; a section with no rows (every
    CPU-only profile) is left out rather than printed as a bare heading."""
    lines: list[str] = ["kernel mix:"] if s.categories else []
    for c in s.categories:
        lines.append(
            f"  {short_name(c.name):<17} {c.share * 100:5.1f}%   {c.ms_per_step:.1f} ms/step  "
            f"{bar(c.share)}"
        )
    if s.top_kernels:
        lines.append("top kernels/step:")
    for row in s.top_kernels:
        tensor_core = " [TC]" if row.tensor_core else ""
        lines.append(
            f"  {row.share * 100:5.1f}%  {row.ms_per_step:6.3f} ms  x{row.num_per_step:<4.0f} "
            f"{short_name(row.label)}{tensor_core}"
        )
    return lines


def _op_mix_lines(s: Summary) -> list[str]:
    if not s.op_categories:
        return []
    lines = ["op mix (CPU self time):"]
    for c in s.op_categories:
        lines.append(
            f"  {c.name:<17} {c.share * 100:5.1f}%   {c.ms_per_step:.1f} ms/step  {bar(c.share)}"
        )
    lines.append("top ops/step (self time):")
    for row in s.top_ops:
        lines.append(
            f"  {row.share * 100:5.1f}%  {row.self_ms_per_step or 0.0:6.3f} ms  "
            f"x{row.num_per_step:<4.0f} {short_name(row.name)}"
        )
    return lines


def _host_memory_lines(s: Summary) -> list[str]:
    """The window's peak RSS, where the run measured it (a run that could not notes why)."""
    peak = s.metrics.get("peak_rss_mb")
    if peak is None:
        return []
    head = f"memory   peak RSS {fmt_value(peak)} MB over the window"
    if s.metrics.get("library_rss_mb") is None:  # written before the libraries were left out
        return [f"{head} (this process; DataLoader workers not included)"]
    baseline = s.metrics.get("baseline_rss_mb")
    before = "" if baseline is None else f", {fmt_value(baseline)} MB of it before the model"
    return [
        f"{head} (this process's own{before}; shared library pages and DataLoader workers "
        "not included)"
    ]


def _tensor_lines(s: Summary) -> list[str]:
    """A training step's tensors at their peak by category, and the lever the largest names."""
    view = s.tensors
    if view is None:
        return []
    lines = [f"tensors  {split_line(view.peak_mb, view.categories)}"]
    if view.lever:
        lines.append(f"         {view.largest}, the largest: {view.lever}")
    return lines


def _fragmentation_lines(s: Summary) -> list[str]:
    """The CUDA allocator's fragmentation, where it is high enough to name its lever."""
    line = fragmentation_line(s.metrics)
    return [] if line is None else [f"memory   {line}"]


def summary_lines(s: Summary) -> list[str]:
    """Every line of the summary view, in order."""
    lines: list[str] = [_headline(s), *world_lines(s.world, s.metrics)]
    lines += [*_trainer_lines(s), *_inference_lines(s)]
    lines += compute_lines(s.compute)
    lines += exec_lines(s.execution)
    lines += [*_device_lines(s), *_host_lines(s)]
    lines += _host_memory_lines(s)
    lines += _fragmentation_lines(s)
    lines += _tensor_lines(s)
    if s.metrics.get("memory_pressure"):
        lines.append(MEMORY_PRESSURE_LINE)
    if s.metrics.get("contended"):
        lines.append(CONTENDED_LINE)
    lines += _verdict_lines(s)
    if s.num_trials >= 2:
        processes = _trial_processes(s)
        lines.append(
            f"trials   {s.num_trials}{processes}: scalar metrics are means over the trials"
        )
    lines += _mix_lines(s)
    lines += _op_mix_lines(s)
    lines += note_lines(s.notes, s.trace_notes)
    return lines


def _trial_processes(s: Summary) -> str:
    """How the trials' processes were: one each (with their ids), or one for all."""
    if s.isolated_trials is False:
        return ", all in one process (--repeat-in-process)"
    pids = [str(t.pid) for t in s.trials if t.pid is not None]
    if s.isolated_trials and len(pids) == len(s.trials):
        return f", each in a fresh process (pids {', '.join(pids)})"
    return " (in a fresh process each)" if s.isolated_trials else ""
