"""The argparse tree: `libreyolo profile {run,infer,summary,get,phases,kernels,ops,...}`.

Flags, defaults and help follow the interface specification (libreyolo 1.6.0's names); the
defaults of `run` and `infer` are `libreyolo.defaults`'s, the names the config schema uses, so
`--help` shows what a run without the flag measures. Parse errors raise UsageError instead of
exiting, so `main` decides the status and the stderr format. No parser takes an abbreviation
(`--war` for `--warmup`): a flag is spelled in full or refused, and `typed_dests` learns what was
typed from argparse itself, never from the spelling. Must not import the config package, Hydra
or torch: every reader imports this module.
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Callable
from typing import Any, NoReturn

from libreyolo import defaults
from libreyolo.cli import commands
from libreyolo.cli.flags import (
    byte_size,
    non_negative_int,
    positive_int,
    positive_or_auto,
    positive_percent,
    positive_seconds,
    probability,
    regex,
    train_word,
)
from libreyolo.document.limits import LIMIT_FLAG, MAX_INPUT_BYTES
from libreyolo.errors import UsageError

SUBCOMMANDS: tuple[tuple[str, str], ...] = (
    ("run", "Launch a short profiled training and emit a self-contained profile.json."),
    (
        "infer",
        "Profile the inference path: latency p50/p90/p99, stage split "
        "(preprocess/forward/NMS), GPU truth.",
    ),
    ("summary", "High-level diagnosis: utilisation, verdict, kernel mix, top kernels."),
    (
        "get",
        "Print ONE metric, minimal output for tight loops (img_per_s, forward_ms, gpu_util...).",
    ),
    (
        "phases",
        "Per-phase breakdown: GPU ms, wall ms, kernel & op counts (forward/backward/dataload/...).",
    ),
    ("kernels", "Drill to individual GPU kernels, the bottom of the analysis."),
    ("ops", "Framework view: aten/autograd ops by CPU time (host-launch culprits)."),
    (
        "memory",
        "What fills a training step's memory: tensors by category and by block, at the peak.",
    ),
    ("compare", "Diff two profiles: did the change help? (the optimise-loop closer)."),
    ("what-if", "Estimate a change's payoff BEFORE editing code (rough projection)."),
    (
        "report",
        "Write one self-contained HTML page: a profile, a comparison of two, or a sweep.",
    ),
    ("log", "Log a profile or a sweep folder to MLflow and/or TensorBoard (optional extras)."),
)
TRACE_HELP = "Path to profile.json or profile_trace.json (.gz accepted)"
SIZE_HELP = (
    "Model size variant (YOLOv9 t, s, m, c; YOLOX n, t, s, m, l, x); must match the checkpoint "
    "(default: the checkpoint's own, else the weights name's, else t)"
)


class _HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, sized as argparse sizes it but without importing shutil (and the
    compression modules it pulls in): argparse makes a formatter for every argument it adds,
    so a reader's start-up paid for that import before it read a byte."""

    def __init__(
        self,
        prog: str,
        indent_increment: int = 2,
        max_help_position: int = 24,
        width: int | None = None,
    ) -> None:
        width = _columns() - 2 if width is None else width
        super().__init__(prog, indent_increment, max_help_position, width)


def _columns() -> int:
    """`shutil.get_terminal_size().columns`: $COLUMNS, else the terminal's, else 80."""
    try:
        columns = int(os.environ.get("COLUMNS", 0))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size().columns  # file descriptor 1, as shutil's
        except (ValueError, OSError):
            columns = 0
    return columns or 80


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors become UsageError (one line, exit 2) instead of exiting,
    and which takes no abbreviated flag. Sub-parsers are made with `parser_class=Parser`, so
    each `add_parser` builds one of these: argparse's `allow_abbrev` is per parser."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # An abbreviation accepted here would slip past the typed-flag rule of `--config` and,
        # once a later flag shares its prefix, change meaning between releases.
        kwargs.setdefault("allow_abbrev", False)
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}", hint=f"see '{self.prog} --help'")


def _common() -> Parser:
    common = Parser(add_help=False)
    common.add_argument("--json", action="store_true", help="Print one JSON document to stdout")
    common.add_argument("--debug", action="store_true", help="Show a traceback on errors")
    common.add_argument("--no-color", action="store_true", help="Plain text without colour")
    return common


def _add(
    sub: argparse._SubParsersAction[Parser],
    name: str,
    handler: Callable[..., object],
    common: Parser,
) -> argparse.ArgumentParser:
    help_text = dict(SUBCOMMANDS)[name]
    parser = sub.add_parser(name, help=help_text, description=help_text, parents=[common])
    parser.set_defaults(handler=handler)
    return parser


def _add_config_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config-dir", help="Folder of your own Hydra configs / experiments")
    p.add_argument(
        "--config",
        help="Experiment file (in --config-dir) to compose; the flags you type still override it",
    )
    p.add_argument(
        "--print-config",
        action="store_true",
        help="Print the composed config and exit without measuring",
    )


def _show_defaults(parser: argparse.ArgumentParser) -> None:
    """Append `(default: ...)` to the help of each option that has a default and whose help
    does not state it yet: a switch shows its spelling (`--amp`, `--no-trace`), a value its
    value. Plain on/off flags (`--json`) and options without a default are left as they are."""
    for action in parser._actions:
        if not action.option_strings or action.help is None or "default" in action.help:
            continue
        if action.default in (None, argparse.SUPPRESS):
            continue
        if isinstance(action, argparse.BooleanOptionalAction):
            name = action.option_strings[0].removeprefix("--")
            shown = f"--{name}" if action.default else f"--no-{name}"
        elif action.nargs == 0:
            continue
        else:
            shown = str(action.default).replace("%", "%%")  # help is %-formatted
        action.help += f" (default: {shown})"


def _add_run(sub: argparse._SubParsersAction[Parser], common: Parser) -> None:
    p = _add(sub, "run", commands.run, common)
    _add_config_flags(p)
    p.add_argument("data", help="Dataset yaml/name (e.g. coco128)")
    p.add_argument("--weights", default=defaults.WEIGHTS, help="Model weights file / name")
    p.add_argument("--size", default=None, help=SIZE_HELP)
    p.add_argument(
        "--batch",
        type=positive_or_auto,
        default=defaults.RUN_BATCH,
        help=(
            "Micro-batch; -1 auto-fits ~70%% of device memory (on the CPU: of the memory "
            "available to the process)"
        ),
    )
    p.add_argument(
        "--imgsz", type=positive_int, default=defaults.RUN_IMGSZ, help="Training image size"
    )
    p.add_argument(
        "--workers", type=non_negative_int, default=defaults.WORKERS, help="DataLoader workers"
    )
    p.add_argument(
        "--cache",
        action=argparse.BooleanOptionalAction,
        default=defaults.CACHE,
        help="Decode and resize every image once before measuring, keep it in RAM",
    )
    p.add_argument(
        "--amp",
        action=argparse.BooleanOptionalAction,
        default=defaults.AMP,
        help="Use the family's AMP path (CUDA; no effect on CPU)",
    )
    p.add_argument(
        "--steps", type=positive_int, default=defaults.RUN_STEPS, help="Profiled (measured) steps"
    )
    p.add_argument(
        "--warmup",
        type=non_negative_int,
        default=defaults.RUN_WARMUP,
        help="Warmup steps before measuring",
    )
    p.add_argument(
        "--repeat",
        type=positive_int,
        default=defaults.REPEAT,
        help="Repeat N times for mean +/- stdev (a single run lies when launch-bound)",
    )
    p.add_argument(
        "--repeat-in-process",
        action="store_true",
        help="Measure every --repeat trial in this process (default: each in a fresh process "
        "of its own, since a process's later profiler sessions can drop events and drift)",
    )
    p.add_argument(
        "--device",
        default=defaults.DEVICE,
        help="CUDA device index, or cpu; several indices (0,1) train on one rank each (DDP)",
    )
    p.add_argument(
        "--nproc",
        type=positive_int,
        default=1,
        help="Training ranks (DDP, one process each; with --device cpu); --batch is the "
        "global batch, split evenly as libreyolo train splits it",
    )
    p.add_argument("--project", default=defaults.PROJECT, help="Output root directory")
    _add_exec(p, defaults.TRAIN_EXEC_MODES)
    _add_threads(p)
    _add_fidelity(p)
    _add_train_keys(p)
    _add_trainer(p)
    _show_defaults(p)


def _add_fidelity(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--max-labels",
        metavar="N",
        type=positive_int,
        default=defaults.MAX_LABELS,
        help="libreyolo 1.6.0's max_labels: YOLOv9 target rows per image, boxes past it dropped "
        "(default: 1.6.0's 300)",
    )
    p.add_argument(
        "--variant",
        metavar="NAME",
        action="append",
        choices=defaults.TRAIN_VARIANTS,
        help="Opt into one of this package's speed-ups instead of 1.6.0's work (repeatable): "
        "trimmed_targets pads YOLOv9 targets only to the batch's largest box count; "
        "vectorised_assigner gives YOLOv9's loss the same values by cheaper arithmetic; "
        "foreach_updates makes SGD and the EMA one multi-tensor update each on the CPU too; "
        "channels_last trains NHWC (1.6.0: NCHW)",
    )


def _add_train_keys(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--mosaic",
        metavar="P",
        type=probability,
        help="libreyolo 1.6.0's mosaic: the probability an image is a mosaic of four "
        "(default: the checkpoint's training config, else 1.6.0's for the family)",
    )
    p.add_argument(
        "--mixup",
        metavar="P",
        type=probability,
        help="libreyolo 1.6.0's mixup: the probability a mosaic gets a MixUp partner (YOLOX)",
    )
    p.add_argument(
        "--optimizer",
        choices=defaults.OPTIMIZERS,
        help="libreyolo 1.6.0's optimizer (default: the checkpoint's, else sgd)",
    )
    p.add_argument(
        "--ema",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="libreyolo 1.6.0's ema: keep the EMA copy of the weights (default: the "
        "checkpoint's, else on)",
    )
    p.add_argument(
        "--no-aug-phase",
        action="store_true",
        help="Measure a step of 1.6.0's last no_aug_epochs: mosaic and MixUp off (YOLOX adds "
        "its L1 loss)",
    )
    p.add_argument(
        "--checkpoint-config",
        action=argparse.BooleanOptionalAction,
        default=defaults.CHECKPOINT_CONFIG,
        help="Take the training keys you do not set from the training config a 1.6.0 "
        "checkpoint carries (off: 1.6.0's defaults, as a new `libreyolo train model=...` "
        "without resume)",
    )


def _add_trainer(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--trainer",
        metavar="PYTHON",
        default=defaults.TRAINER,
        help="Measure libreyolo 1.x's own `libreyolo train` instead of this package's step: "
        "the Python interpreter of the environment it is installed in, or that environment's "
        "folder",
    )
    p.add_argument(
        "--train-arg",
        metavar="KEY=VALUE",
        action="append",
        type=train_word,
        help="One more libreyolo 1.6.0 training key, in its own syntax (repeatable: "
        "--train-arg mosaic=0.0 --train-arg optimizer=adamw); the built-in step takes the "
        "keys that change a step's work and refuses those it cannot do",
    )
    p.add_argument(
        "--trainer-timeout",
        metavar="SECONDS",
        type=positive_seconds,
        default=defaults.TRAINER_TIMEOUT_S,
        help="With --trainer: how long the trainer may stay silent (its setup, one step) "
        "before it is stopped",
    )


def _add_exec(p: argparse.ArgumentParser, modes: tuple[str, ...]) -> None:
    p.add_argument(
        "--exec",
        choices=modes,
        default=defaults.EXEC,
        help="How the model runs: eager PyTorch, compile (torch.compile, before the window)"
        + (
            ", cudagraphs (the forward as one CUDA graph; CUDA), onnxruntime (an ONNX export "
            "run by ONNX Runtime; pip install 'libreyolo[onnx]')"
            if "onnxruntime" in modes
            else ""
        ),
    )
    p.add_argument(
        "--compile-mode",
        choices=defaults.COMPILE_MODES,
        default=defaults.COMPILE_MODE,
        help="torch.compile mode with --exec compile (reduce-overhead: CUDA graphs)",
    )
    p.add_argument(
        "--channels-last",
        action=argparse.BooleanOptionalAction,
        default=defaults.CHANNELS_LAST,
        help="Weights (and so convolutions) in NHWC; default: the path's own (--fuse full: on; "
        "training: off, as libreyolo 1.6.0; on is --variant channels_last)",
    )


def _add_threads(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--threads",
        type=positive_int,
        default=defaults.THREADS,
        help="torch's intra-op CPU threads while measuring (default: torch's own choice; "
        "training lowers it to the CPUs this process may use, as libreyolo 1.6.0 does)",
    )


def _add_infer(sub: argparse._SubParsersAction[Parser], common: Parser) -> None:
    p = _add(sub, "infer", commands.infer, common)
    _add_config_flags(p)
    p.add_argument(
        "source", nargs="?", default=None, help="Image or directory (default: bundled sample image)"
    )
    p.add_argument("--weights", default=defaults.WEIGHTS, help="Model weights file / name")
    p.add_argument("--size", default=None, help=SIZE_HELP)
    p.add_argument(
        "--batch", type=positive_int, default=defaults.INFER_BATCH, help="Images per forward pass"
    )
    p.add_argument(
        "--imgsz",
        type=positive_int,
        default=defaults.INFER_IMGSZ,
        help="Input image size (default: the model's own: 640 for YOLOv9, 416 for YOLOX n/t, "
        "640 for YOLOX s and larger)",
    )
    p.add_argument(
        "--half",
        action=argparse.BooleanOptionalAction,
        default=defaults.HALF,
        help="Autocast forward (CUDA only)",
    )
    p.add_argument(
        "--amp-dtype",
        choices=defaults.AMP_DTYPES,
        default=defaults.AMP_DTYPE,
        type=lambda v: {"fp16": "float16", "bf16": "bfloat16"}.get(
            v.strip().lower(), v.strip().lower()
        ),
        help="CUDA autocast dtype: float16 or bfloat16",
    )
    p.add_argument(
        "--warmup",
        type=non_negative_int,
        default=defaults.INFER_WARMUP,
        help="Warmup iterations before measuring",
    )
    p.add_argument(
        "--runs",
        type=positive_int,
        default=defaults.INFER_RUNS,
        help="Measured iterations, each a latency sample (p50/p90/p99, img/s; all traced); "
        "then up to 20 more with device syncs time the stage split",
    )
    p.add_argument(
        "--repeat",
        type=positive_int,
        default=defaults.REPEAT,
        help="Repeat N times for mean +/- stdev throughput (needed for a significant compare)",
    )
    p.add_argument(
        "--repeat-in-process",
        action="store_true",
        help="Measure every --repeat trial in this process (default: each in a fresh process "
        "of its own, since a process's later profiler sessions can drop events and drift)",
    )
    p.add_argument(
        "--conf",
        type=probability,
        default=defaults.CONF,
        help="Confidence threshold (affects NMS work)",
    )
    p.add_argument("--iou", type=probability, default=defaults.IOU, help="NMS IoU threshold")
    p.add_argument(
        "--max-det",
        type=positive_int,
        default=defaults.MAX_DET,
        help="Max detections/image (affects NMS work)",
    )
    p.add_argument("--device", default=defaults.DEVICE, help="CUDA device index, or cpu")
    p.add_argument(
        "--trace",
        action=argparse.BooleanOptionalAction,
        default=defaults.TRACE,
        help="Emit a Chrome trace for kernel/op drill-down",
    )
    p.add_argument("--project", default=defaults.PROJECT, help="Output root directory")
    p.add_argument(
        "--include-decode",
        action="store_true",
        help="Decode the image files inside the measured window (default: decoded "
        "once before it, so preprocess is letterbox + copy only)",
    )
    p.add_argument(
        "--fuse",
        choices=defaults.FUSE_MODES,
        default=defaults.FUSE,
        help="Model fusion: full (BN folded, RepConvN merged, channels-last), bn (BN folded "
        "only), none",
    )
    _add_exec(p, defaults.EXEC_MODES)
    _add_threads(p)
    _show_defaults(p)


def _reader_common(common: Parser) -> Parser:
    readers = Parser(add_help=False, parents=[common])
    readers.add_argument(
        LIMIT_FLAG,
        type=byte_size,
        default=MAX_INPUT_BYTES,
        metavar="SIZE",
        help="Read at most SIZE bytes of an input, decompressed (e.g. 512M, 8G; "
        f"default {MAX_INPUT_BYTES >> 30}G)",
    )
    return readers


def _add_csv(p: argparse.ArgumentParser, rows: str) -> None:
    """`--csv` on a tabular reader: its `--json` rows as CSV, for a spreadsheet."""
    p.add_argument(
        "--csv",
        action="store_true",
        help=f"Print {rows} as CSV (a header, one line per --json row; not with --json)",
    )


def _add_summary(sub: argparse._SubParsersAction[Parser], common: Parser) -> None:
    p = _add(sub, "summary", commands.summary, common)
    p.add_argument(
        "trace", help=TRACE_HELP + ", or a sweep folder (its sweep.json or point folders)"
    )
    _add_csv(p, "a sweep folder's points (not a profile's summary)")


def _add_get(sub: argparse._SubParsersAction[Parser], common: Parser) -> None:
    p = _add(sub, "get", commands.get, common)
    p.add_argument("trace", help=TRACE_HELP)
    p.add_argument("field", nargs="?", help="Metric name (omit to list metrics)")


def _add_phases(sub: argparse._SubParsersAction[Parser], common: Parser) -> None:
    p = _add(sub, "phases", commands.phases, common)
    p.add_argument("trace", help=TRACE_HELP)
    _add_csv(p, "the phase table")
    _add_rank(p)


def _add_rank(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--rank",
        type=non_negative_int,
        help="A multi-process run: read this rank's profile (default: the world's, rank 0's trace)",
    )


def _add_kernels(sub: argparse._SubParsersAction[Parser], common: Parser) -> None:
    p = _add(sub, "kernels", commands.kernels, common)
    p.add_argument("trace", help=TRACE_HELP)
    _add_csv(p, "the kernel table")
    _add_rank(p)
    p.add_argument("--top", type=non_negative_int, default=20, help="Show top N by GPU time")
    p.add_argument(
        "--category", help="Filter by category substring (gemm, layout, norm, elementwise, ...)"
    )
    p.add_argument("--grep", type=regex, help="Filter by kernel-name regex (case-insensitive)")
    p.add_argument("--tensorcore", action="store_true", help="Only Tensor-Core kernels")
    p.add_argument(
        "--sort",
        choices=("time", "count", "name"),
        default="time",
        help="Order: time, count or name",
    )
    p.add_argument(
        "--phase", help="Restrict to a phase (forward/backward/dataload/to_device/optimizer)"
    )


def _add_ops(sub: argparse._SubParsersAction[Parser], common: Parser) -> None:
    p = _add(sub, "ops", commands.ops, common)
    p.add_argument("trace", help=TRACE_HELP)
    _add_csv(p, "the op table")
    _add_rank(p)
    p.add_argument("--top", type=non_negative_int, default=20, help="Show top N by CPU time")
    p.add_argument("--phase", help="Restrict to a phase (forward/backward/...)")


def _add_memory(sub: argparse._SubParsersAction[Parser], common: Parser) -> None:
    p = _add(sub, "memory", commands.memory, common)
    p.add_argument(
        "trace",
        help="Path to a training profile.json, or the oom_snapshot.pickle a CUDA run left",
    )
    p.add_argument(
        "--top",
        type=non_negative_int,
        default=10,
        help="Show the top N blocks by activations (a snapshot: allocation sites)",
    )
    p.add_argument(
        "--batch",
        type=positive_int,
        help="Also predict the tensor peak at this batch (from the run's two probe steps)",
    )
    p.add_argument(
        "--budget-mb",
        type=positive_int,
        help="Also give the largest batch whose predicted tensor peak fits in this many MB",
    )


def _add_compare(sub: argparse._SubParsersAction[Parser], common: Parser) -> None:
    p = _add(sub, "compare", commands.compare, common)
    p.add_argument("before", help="Baseline profile.json / profile_trace.json, or a sweep folder")
    p.add_argument("after", help="New profile.json / profile_trace.json, or a sweep folder")
    _add_csv(p, "the compared metrics (two sweeps: their points)")
    p.add_argument(
        "--fail-on-regression",
        type=positive_percent,
        metavar="PCT",
        help="Exit 4 when after is worse by more than PCT %% and significantly so (needs "
        "--repeat trials on both sides)",
    )
    p.add_argument(
        "--min-agreement",
        type=probability,
        default=defaults.MIN_AGREEMENT,
        metavar="FRACTION",
        help="Make no faster/slower call over a side whose detections agree with eager fp32 "
        "less than this (recall and precision)",
    )
    p.add_argument(
        "--allow-suspect",
        action="store_true",
        help="Make the significance call even over a trial whose trace failed its health "
        "check (default: refuse, exit 2)",
    )
    p.add_argument(
        "--metric",
        choices=("img_per_s", "latency_p50_ms", "step_ms"),
        help="The gated metric (default: img_per_s for training, latency_p50_ms for inference)",
    )
    p.add_argument(
        "--top",
        type=non_negative_int,
        default=10,
        metavar="N",
        help="Show the N ops and kernels whose time per step changed most (default 10)",
    )


def _add_what_if(sub: argparse._SubParsersAction[Parser], common: Parser) -> None:
    p = _add(sub, "what-if", commands.what_if, common)
    p.add_argument("trace", help=TRACE_HELP)
    p.add_argument(
        "--remove-category",
        help="Project removing a kernel category (gemm, layout, norm, elementwise)",
    )
    p.add_argument(
        "--remove-launches",
        type=non_negative_int,
        help="Project removing N kernel launches/step (e.g. an op-fusion win)",
    )
    p.add_argument(
        "--variant",
        metavar="NAME",
        help="The step with one of this package's speed-ups the run did not use, from its "
        "measured trial (training; e.g. trimmed_targets)",
    )


def _add_report(sub: argparse._SubParsersAction[Parser], common: Parser) -> None:
    p = _add(sub, "report", commands.report, common)
    p.add_argument(
        "inputs",
        nargs="+",
        metavar="trace",
        help=TRACE_HELP + "; two of them for a comparison page, or a sweep folder",
    )
    p.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="Where to write the page (default: report.html next to the first input, "
        "sweep.html inside a sweep folder)",
    )


def _add_log(sub: argparse._SubParsersAction[Parser], common: Parser) -> None:
    p = _add(sub, "log", commands.log, common)
    p.add_argument("source", help="A profile.json, or a sweep folder (one run per point)")
    p.add_argument(
        "--mlflow",
        metavar="URI",
        help="MLflow tracking URI (file:./mlruns, http://host:5000, ...); "
        "pip install 'libreyolo[mlflow]'",
    )
    p.add_argument("--experiment", metavar="NAME", help="MLflow experiment (default: libreyolo)")
    p.add_argument(
        "--tensorboard",
        metavar="DIR",
        help="Write TensorBoard scalars, one run folder per point; "
        "pip install 'libreyolo[tensorboard]'",
    )


Builder = Callable[["argparse._SubParsersAction[Parser]", Parser], None]
# Each subcommand's arguments, in SUBCOMMANDS order; the readers' take --max-input-bytes too.
_BUILDERS: dict[str, Builder] = {"run": _add_run, "infer": _add_infer, "log": _add_log}
_READERS: dict[str, Builder] = {
    "summary": _add_summary,
    "get": _add_get,
    "phases": _add_phases,
    "kernels": _add_kernels,
    "ops": _add_ops,
    "memory": _add_memory,
    "compare": _add_compare,
    "what-if": _add_what_if,
    "report": _add_report,
}
READERS = frozenset(_READERS)  # the subcommands that only read files


def build_parser(words: list[str] | None = None) -> Parser:
    """The `libreyolo` parser: every subcommand's arguments, or, given the command line's
    words, only the subcommand they name (none named: every one listed, with its help, but
    taking no arguments). argparse builds a help formatter for each flag and translates each
    parser's titles, which costs a reader's start-up more than reading the profile does."""
    only = None if words is None else _named_subcommand(words)
    root = Parser(prog="libreyolo", description="LibreYOLO command line.")
    top = root.add_subparsers(dest="group", parser_class=Parser)
    group = top.add_parser(
        "profile",
        help="Profile training steps and inference calls.",
        description="Measure where the time of a training step or an "
        "inference call goes, and read the profile back.",
    )
    group.set_defaults(handler=commands.list_subcommands)
    sub = group.add_subparsers(dest="subcommand", parser_class=Parser, metavar="<subcommand>")
    common = _common()
    readers: Parser | None = None
    for name, help_text in SUBCOMMANDS:
        if only is not None and name != only:
            continue  # the words name another one: argparse never reaches or lists this
        if words is not None and name != only:
            # listed only (`profile --help`, a typo): no -h of its own (argparse builds a help
            # formatter, and translates its strings, for every parser and argument it adds)
            sub.add_parser(name, help=help_text, add_help=False)
        elif name in _READERS:
            readers = readers or _reader_common(common)
            _READERS[name](sub, readers)
        else:
            _BUILDERS[name](sub, common)
    return root


def _named_subcommand(words: list[str]) -> str | None:
    """The subcommand `words` run (`profile get ...`); None when they name none (`profile`,
    `--help`, a typo), which argparse answers from the listing alone."""
    if words[:1] != ["profile"] or len(words) < 2:
        return None
    return words[1] if words[1] in dict(SUBCOMMANDS) else None


def typed_dests(words: list[str]) -> set[str]:
    """The dests `words` set themselves, argparse defaults left out: the same tree parses them
    again with every default suppressed, so what argparse took from the words, in whatever
    spelling (`--warmup=3`, `--no-trace`, a positional after `--`), is all that is left."""
    parser = build_parser(words)
    _suppress_defaults(parser)
    return set(vars(parser.parse_args(words)))


def _suppress_defaults(parser: argparse.ArgumentParser) -> None:
    parser._defaults.clear()  # set_defaults(handler=...): not typed either
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                _suppress_defaults(child)
        elif action.dest != argparse.SUPPRESS:
            action.default = argparse.SUPPRESS


_KEY_VALUE = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*=")


def _value_options(parser: argparse.ArgumentParser) -> set[str]:
    """Every option string, in the whole tree, that consumes the following token."""
    found: set[str] = set()
    for action in parser._actions:
        if action.option_strings and action.nargs != 0:
            found.update(action.option_strings)
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                found |= _value_options(child)
    return found


def reject_key_value(argv: list[str], parser: argparse.ArgumentParser) -> None:
    """UsageError for Hydra-style `key=value` words: this command group takes POSIX flags."""
    takes_value = _value_options(parser)
    skip = False
    for token in argv:
        if skip:
            skip = False
            continue
        if token.startswith("-"):
            skip = token in takes_value
            continue
        match = _KEY_VALUE.match(token)
        if match:
            key, value = token.split("=", 1)
            flag = "--" + key.replace("_", "-")
            raise UsageError(
                f"'{token}': key=value arguments are not accepted; use {flag} {value}",
                hint="libreyolo profile takes POSIX flags; Hydra overrides go to libreyolo-sweep",
            )
