"""How the model runs (`--exec`): eager, torch.compile, a CUDA graph of the forward, or (in
`onnx_exec.py`) ONNX Runtime; and the layout of its weights (`--channels-last`).

Role: refuse a mode the run cannot have before any model loads (`check_exec`), apply the
mode to a loaded (and fused) model, make the first call outside the window and time it
(`first_call`), and watch dynamo's counters so that a compile inside the warmup or the window
is counted (`CompileWatch`). Everything recorded ends in the document's `Execution`.

Why a first call of its own: torch.compile compiles lazily, at the first call; under
max-autotune that call also benchmarks the candidate kernels. Made before the warmup and timed
alone, it is `compile_s`, and the warmup then starts on compiled code. CUDA-graph recording
under reduce-overhead happens in the first calls after it, which the warmup (at least
`MIN_COMPILED_WARMUP` calls) covers; any compile after the first call is counted, and the
profile says when the window held one instead of assuming it did not.

Must not: print, time the window, or decide verdicts.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import torch
from torch import nn

from libreyolo import defaults
from libreyolo.config.schema import ExecConfig, ExecMode
from libreyolo.document.mode import Mode
from libreyolo.document.model import Agreement, Compiled, Execution, Exported, GraphCapture
from libreyolo.errors import NoProfileError, UsageError

# reduce-overhead records its CUDA graphs in the first calls after compiling: a warmup shorter
# than this would leave the recording inside the window.
MIN_COMPILED_WARMUP = 3
MAX_BREAK_REASONS = 5
MAX_REASON_CHARS = 200


class ExecFailedError(NoProfileError):
    """The model could not be compiled, exported or captured (exit 3): one line, what failed."""

    code = "exec_failed"


def check_exec(cfg: ExecConfig, mode: Mode, warmup: int) -> None:
    """UsageError for an execution mode this run cannot have, before any model loads."""
    name = ExecMode(cfg.name)
    if mode is Mode.TRAIN and name.value not in defaults.TRAIN_EXEC_MODES:
        hint = " (CUDA graphs in training: --exec compile --compile-mode reduce-overhead)"
        raise UsageError(
            f"--exec {name.value} runs inference only; a training step runs "
            f"{' or '.join(defaults.TRAIN_EXEC_MODES)}"
            + (hint if name is ExecMode.cudagraphs else "")
        )
    if cfg.compile_mode not in defaults.COMPILE_MODES:
        raise UsageError(
            f"exec.compile_mode must be one of {', '.join(defaults.COMPILE_MODES)}; "
            f"got {cfg.compile_mode!r}"
        )
    backend = cfg.compile_backend
    if not backend.replace("_", "").isalnum():
        raise UsageError(f"exec.compile_backend must be a backend name; got {backend!r}")
    if not 7 <= cfg.opset <= 23:
        raise UsageError(f"exec.opset must lie in 7..23; got {cfg.opset}")
    if name is ExecMode.compile and warmup < MIN_COMPILED_WARMUP:
        raise UsageError(
            f"--exec compile needs --warmup {MIN_COMPILED_WARMUP} or more (got {warmup}): "
            "the first calls after compiling still record CUDA graphs or settle autotuning"
        )


def check_exec_device(cfg: ExecConfig, device: torch.device) -> None:
    """UsageError for a mode the device cannot run (CUDA graphs need CUDA)."""
    if ExecMode(cfg.name) is ExecMode.cudagraphs and device.type != "cuda":
        raise UsageError(
            f"--exec cudagraphs needs a CUDA device; {device.type} has no CUDA graphs "
            "(try --exec compile, or --device 0 on a machine with a GPU)"
        )


def use_channels_last(model: nn.Module, wanted: bool | None, default: bool) -> bool:
    """Put the weights in the layout asked for (None: `default`, the path's own) and say
    whether they are channels-last now. With NHWC weights PyTorch runs the convolutions NHWC."""
    channels_last = default if wanted is None else wanted
    if wanted is not None and wanted != default:
        layout = torch.channels_last if wanted else torch.contiguous_format
        model.to(memory_format=layout)
    return channels_last


class DynamoCounts(NamedTuple):
    """dynamo's process-wide counters at one moment: frames compiled, graphs, graph breaks."""

    frames: int
    graphs: int
    breaks: int


def dynamo_counts() -> DynamoCounts:
    """The counters now (torch._dynamo.utils.counters; they only grow)."""
    from torch._dynamo.utils import counters

    return DynamoCounts(
        frames=int(counters["frames"]["total"]),
        graphs=int(counters["stats"]["unique_graphs"]),
        breaks=sum(int(n) for n in counters["graph_break"].values()),
    )


def break_reasons() -> list[str]:
    """dynamo's graph-break reasons (most frequent first), at most `MAX_BREAK_REASONS`."""
    from torch._dynamo.utils import counters

    ranked = sorted(counters["graph_break"].items(), key=lambda item: -int(item[1]))
    return [" ".join(str(reason).split())[:MAX_REASON_CHARS] for reason, _ in ranked][
        :MAX_BREAK_REASONS
    ]


def compile_in_place(model: nn.Module, cfg: ExecConfig) -> None:
    """torch.compile `model` in place (`nn.Module.compile`: the same object, parameters and
    state-dict keys, so EMA, optimisers and FLOP counts see the module they know).

    dynamo's caches are reset first: compiled code is cached per `forward` code object, shared
    by every instance, so a second trial or sweep point in this process would otherwise pay a
    guard failure and, past the cache limit, silently run eager."""
    torch._dynamo.reset()
    # Inductor's C++ toolchain probe warns on stderr, where only our one-line notes belong.
    logging.getLogger("torch.utils.cpp_extension").setLevel(logging.ERROR)
    options: dict[str, Any] = {"backend": cfg.compile_backend, "dynamic": cfg.dynamic}
    if cfg.compile_mode != defaults.COMPILE_MODE:
        options["mode"] = cfg.compile_mode
    model.compile(**options)


class CudaGraphForward(nn.Module):
    """The forward of `model` captured as one CUDA graph and replayed: each call copies its
    input into the graph's static input and replays, and returns the graph's static outputs
    (overwritten by the next call, which the predict path never outlives). A call with another
    input shape or dtype captures again (`num_captures`)."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model
        self.num_captures = 0
        self.capture_s = 0.0
        self._graph: torch.cuda.CUDAGraph | None = None
        self._static_in: torch.Tensor | None = None
        self._static_out: Any = None

    def forward(self, x: torch.Tensor) -> Any:
        known = self._static_in
        if known is None or known.shape != x.shape or known.dtype != x.dtype:
            self._capture(x)
        assert self._static_in is not None and self._graph is not None
        self._static_in.copy_(x)
        self._graph.replay()
        return self._static_out

    def _capture(self, x: torch.Tensor) -> None:
        started = time.perf_counter()
        self._static_in = x.clone()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # cuDNN picks its algorithms before the capture
            for _ in range(3):
                self.model(self._static_in)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            self._static_out = self.model(self._static_in)
        torch.cuda.synchronize()
        self._graph = graph
        self.num_captures += 1
        self.capture_s += time.perf_counter() - started


def first_call(call: Callable[[], object], what: str) -> float:
    """Make the first call (it compiles, exports or captures) and return its wall seconds; a
    failure is one line naming what failed (ExecFailedError, exit 3), never a traceback."""
    started = time.perf_counter()
    try:
        call()
    except (UsageError, NoProfileError):
        raise
    except Exception as err:  # torch's compile and capture errors have no common base
        raise ExecFailedError(
            f"{what} failed: {failure_line(err)}",
            hint="run --exec eager, or report the op named here upstream",
        ) from err
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()
    return time.perf_counter() - started


def failure_line(err: BaseException) -> str:
    """The first meaningful line of a compile/export error: its type and what it says (dynamo
    and inductor errors put the failing op in their first line)."""
    text = str(err).strip()
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return f"{type(err).__name__}: {first[:300]}" if first else type(err).__name__


@dataclass
class CompileWatch:
    """dynamo's counters before compiling, after the first call and when the window starts:
    what the compile made and how often the warmup and the window compiled again."""

    before: DynamoCounts
    first: DynamoCounts | None = None
    window_start: DynamoCounts | None = None

    @classmethod
    def start(cls) -> CompileWatch:
        return cls(before=dynamo_counts())

    def mark_first_call(self) -> None:
        self.first = dynamo_counts()

    def mark_window(self) -> None:
        self.window_start = dynamo_counts()

    def compiled(self, cfg: ExecConfig, compile_s: float) -> Compiled:
        end = dynamo_counts()
        first = self.first or end
        window_start = self.window_start or end
        return Compiled(
            mode=cfg.compile_mode,
            backend=cfg.compile_backend,
            dynamic=cfg.dynamic,
            compile_s=compile_s,
            num_graphs=first.graphs - self.before.graphs,
            graph_breaks=first.breaks - self.before.breaks,
            break_reasons=break_reasons(),
            warmup_recompiles=window_start.frames - first.frames,
            window_recompiles=end.frames - window_start.frames,
        )


def execution(
    cfg: ExecConfig,
    *,
    channels_last: bool,
    compiled: Compiled | None = None,
    exported: Exported | None = None,
    graph: GraphCapture | None = None,
    agreement: Agreement | None = None,
) -> Execution:
    """The document's record of how the model ran (and, inference not eager fp32, how far it
    agrees with eager fp32)."""
    return Execution(
        name=ExecMode(cfg.name).value,
        channels_last=channels_last,
        torch=str(torch.__version__),  # a TorchVersion, which no JSON encoder knows
        compiled=compiled,
        exported=exported,
        graph=graph,
        agreement=agreement,
    )


def window_marker(
    step: Callable[..., Any], num_warmup: int, watch: CompileWatch | None
) -> Callable[..., Any]:
    """`step`, marking the watch when iteration `num_warmup` (the first measured) begins."""
    if watch is None:
        return step

    def marked(iteration: int, *args: Any, **kwargs: Any) -> Any:
        if iteration == num_warmup:
            watch.mark_window()
        return step(iteration, *args, **kwargs)

    return marked
