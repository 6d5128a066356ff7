"""One short function per subcommand: arguments in, (result, source) out. No formatting.

Each command imports the analysis it needs inside its body, so `get` does not pay for the
import of `compare` or `what-if`: reader start-up is a product feature (~0.1 s). `run` and
`infer` import the measurement stack (torch) the same way, and readers never do.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING

from libreyolo.cli.sources import open_metrics, open_profile, open_sweep
from libreyolo.errors import UsageError

if TYPE_CHECKING:
    from libreyolo.analysis.sweep import SweepView
    from libreyolo.document.model import Profile

CommandResult = tuple[object, str | tuple[str, str] | None]


def _profile(args: argparse.Namespace, path: str) -> Profile:
    """A reader's input, read within its --max-input-bytes."""
    return open_profile(path, max_input_bytes=args.max_input_bytes)


def list_subcommands(args: argparse.Namespace) -> CommandResult:
    from libreyolo.cli.parser import SUBCOMMANDS
    from libreyolo.render.listing import SubcommandList

    return SubcommandList(SUBCOMMANDS), None


def summary(args: argparse.Namespace) -> CommandResult:
    sweep = open_sweep(args.trace)
    if sweep is not None:
        return sweep, args.trace
    if args.csv:  # a document of nested sections, not rows: a table would drop most of it
        raise UsageError(
            "a profile's summary is not a table: use --json",
            hint="kernels, ops, phases and compare take --csv",
        )
    from libreyolo.analysis.summary import summarize

    return summarize(_profile(args, args.trace)), args.trace


def get(args: argparse.Namespace) -> CommandResult:
    from libreyolo.analysis.lookup import get_metric, metric_names

    metrics = open_metrics(args.trace, max_input_bytes=args.max_input_bytes)
    if args.field is None:
        return metric_names(metrics), args.trace
    return get_metric(metrics, args.field, source=args.trace), args.trace


def _ranked(args: argparse.Namespace) -> str:
    """The profile a reader with `--rank` reads: that rank's, beside the world profile."""
    if args.rank is None:
        return str(args.trace)
    from libreyolo.cli.sources import rank_profile_path

    return rank_profile_path(args.trace, args.rank, max_input_bytes=args.max_input_bytes)


def phases(args: argparse.Namespace) -> CommandResult:
    from libreyolo.analysis.phases import phase_breakdown

    path = _ranked(args)
    return phase_breakdown(_profile(args, path)), path


def kernels(args: argparse.Namespace) -> CommandResult:
    from libreyolo.analysis.kernels import top_kernels

    path = _ranked(args)
    table = top_kernels(
        _profile(args, path),
        top=args.top,
        category=args.category,
        pattern=args.grep,
        tensor_core_only=args.tensorcore,
        sort=args.sort,
        phase=args.phase,
    )
    return table, path


def ops(args: argparse.Namespace) -> CommandResult:
    from libreyolo.analysis.ops import top_ops

    path = _ranked(args)
    return top_ops(_profile(args, path), top=args.top, phase=args.phase), path


def memory(args: argparse.Namespace) -> CommandResult:
    from libreyolo.analysis.tensor_memory import memory_view
    from libreyolo.document.snapshot_file import is_snapshot

    if args.trace != "-" and is_snapshot(args.trace, max_input_bytes=args.max_input_bytes):
        return _oom(args)
    view = memory_view(
        _profile(args, args.trace),
        origin=args.trace,
        top=args.top,
        at_batch=args.batch,
        budget_mb=args.budget_mb,
    )
    return view, args.trace


def _oom(args: argparse.Namespace) -> CommandResult:
    """`memory` of a CUDA memory snapshot: what held the device when it ran out."""
    from libreyolo.analysis.oom_sites import oom_view
    from libreyolo.document.snapshot_file import load_snapshot

    if args.batch is not None or args.budget_mb is not None:
        raise UsageError(
            "--batch and --budget-mb predict from a training profile; a memory snapshot has "
            "no prediction",
            hint="pass the run's profile.json for a prediction",
        )
    data = load_snapshot(args.trace, max_input_bytes=args.max_input_bytes)
    return oom_view(data, origin=args.trace, top=args.top), args.trace


def compare(args: argparse.Namespace) -> CommandResult:
    from libreyolo.analysis.compare import compare as compare_profiles

    if args.metric is not None and args.fail_on_regression is None:
        raise UsageError("--metric names the gated metric: it needs --fail-on-regression PCT")
    sweeps = open_sweep(args.before), open_sweep(args.after)
    if sweeps[0] is not None and sweeps[1] is not None:
        return _compare_sweeps(args, sweeps[0], sweeps[1])
    if sweeps[0] is not None or sweeps[1] is not None:
        raise UsageError("compare takes two profiles or two sweep folders, not one of each")
    result = compare_profiles(
        _profile(args, args.before),
        _profile(args, args.after),
        fail_on_regression_pct=args.fail_on_regression,
        metric=args.metric,
        top=args.top,
        allow_suspect=args.allow_suspect,
        min_agreement=args.min_agreement,
    )
    return result, (args.before, args.after)


def _compare_sweeps(args: argparse.Namespace, before: SweepView, after: SweepView) -> CommandResult:
    from libreyolo.analysis.sweep_compare import SweepSide, compare_sweeps
    from libreyolo.document.point_profiles import read_point_profiles

    sides = []
    for path, view in ((args.before, before), (args.after, after)):
        profiles, lost = read_point_profiles(Path(os.path.realpath(path)), view.record)
        sides.append(SweepSide(view.record.points, profiles, lost))
    result = compare_sweeps(
        sides[0], sides[1], fail_on_regression_pct=args.fail_on_regression, metric=args.metric
    )
    return result, (args.before, args.after)


def what_if(args: argparse.Namespace) -> CommandResult:
    from libreyolo.analysis.whatif import project

    result = project(
        _profile(args, args.trace),
        category=args.remove_category or None,
        launches=args.remove_launches,
        variant=args.variant,
    )
    return result, args.trace


def report(args: argparse.Namespace) -> CommandResult:
    from libreyolo.cli.report import write_report

    return write_report(args.inputs, args.output, max_input_bytes=args.max_input_bytes), None


def log(args: argparse.Namespace) -> CommandResult:
    from libreyolo.tracking.log import log_source

    result = log_source(
        args.source,
        mlflow_uri=args.mlflow,
        experiment=args.experiment,
        tensorboard_dir=args.tensorboard,
    )
    return result, args.source


def run(args: argparse.Namespace) -> CommandResult:
    from libreyolo.cli.measuring import measure

    return measure(args, "run", args.progress), None


def infer(args: argparse.Namespace) -> CommandResult:
    from libreyolo.cli.measuring import measure

    return measure(args, "infer", args.progress), None
