"""`--exec onnxruntime`: the fused model's ONNX export (onnx_export.py) run by ONNX Runtime.

Role: refuse the mode when ONNX Runtime is not installed (`check_onnxruntime`, before any
model loads), build the InferenceSession like for like with torch (intra-op threads as torch's,
inter-op 1, every graph optimisation) on the device's execution provider, never falling back
to another, and wrap it as the forward the predict path calls: IO binding over the torch
tensors' own memory (input and preallocated outputs of the eager forward's shapes), so the
forward phase holds no extra copies. Its outputs are overwritten by the next call, which the
predict path never outlives. What it records is the document's `Exported`. A traced
session's profile goes to a private folder (`tempfile.mkdtemp`, 0700) that is removed once
read, or with the forward: no predictable name in the shared temp folder, no symlink followed.

Must not: print, time the window, or decide verdicts.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import time
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
from torch import nn

from libreyolo.config.schema import ExecConfig
from libreyolo.document.model import Exported
from libreyolo.errors import NoProfileError
from libreyolo.measure.exec_mode import ExecFailedError
from libreyolo.measure.onnx_export import (
    EXPORTER,
    INPUT_NAME,
    cached_or_exported,
    output_names,
    private_folder,
)
from libreyolo.measure.ort_trace import read_ort_profile

MISSING = "--exec onnxruntime needs ONNX Runtime: pip install 'libreyolo[onnx]'"
SPIN_KEY = "session.intra_op.allow_spinning"
PROVIDERS = {"cpu": "CPUExecutionProvider", "cuda": "CUDAExecutionProvider"}


def check_onnxruntime() -> None:
    """NoProfileError (exit 3) when ONNX Runtime cannot be imported."""
    try:
        with _private_tmpdir("onnxruntime" not in sys.modules):
            import onnxruntime  # noqa: F401
    except ImportError as err:
        raise NoProfileError(MISSING) from err


@contextlib.contextmanager
def _private_tmpdir(first_import: bool) -> Iterator[None]:
    """ONNX Runtime's first import writes a telemetry session file, `$TMPDIR/.ses`, opened
    O_TRUNC at a fixed name and following links: a link another user planted in a shared /tmp
    would truncate a file of ours. For that import TMPDIR is a private folder, removed after
    (the file is written during the import, not later; Python's own temporary folder, settled
    by then, is unchanged)."""
    if not first_import:
        yield
        return
    folder = private_folder("ONNX Runtime's start", "libreyolo-ort-")
    saved = os.environ.get("TMPDIR")
    os.environ["TMPDIR"] = str(folder)
    try:
        yield
    finally:
        if saved is None:
            del os.environ["TMPDIR"]
        else:
            os.environ["TMPDIR"] = saved
        shutil.rmtree(folder, ignore_errors=True)


class OrtForward(nn.Module):
    """An ONNX Runtime session called as the model's forward: `forward(x)` returns what the
    eager model returns (one tensor, or a list of them), in tensors it owns."""

    def __init__(
        self,
        session: Any,
        device: torch.device,
        probe: object,
        profile_dir: Path | None = None,
    ) -> None:
        super().__init__()
        self.session = session
        # the private folder of the session's profile, gone with the forward at the latest
        self._remove_profile_dir = weakref.finalize(
            self, shutil.rmtree, str(profile_dir or ""), ignore_errors=True
        )
        if profile_dir is None:
            self._remove_profile_dir.detach()
        self.device = device
        self.listed = not isinstance(probe, torch.Tensor)
        probed: list[torch.Tensor] = list(probe) if self.listed else [probe]  # type: ignore[call-overload,list-item]
        self.outputs = [torch.empty_like(t, memory_format=torch.contiguous_format) for t in probed]
        self.names = output_names(probe)
        self.binding = session.io_binding()
        self._input_type = _numpy_dtype(torch.empty(0))  # float32, found once: no copy per call
        kind = "cuda" if device.type == "cuda" else "cpu"
        self._where = {"device_type": kind, "device_id": device.index or 0}
        for name, out in zip(self.names, self.outputs, strict=True):
            self.binding.bind_output(
                name,
                element_type=_numpy_dtype(out),
                shape=tuple(out.shape),
                buffer_ptr=out.data_ptr(),
                **self._where,
            )

    def profile_events(self) -> list[dict[str, Any]]:
        """ORT's per-node profile of every run so far ([] unless the session profiles); ends
        the session's profiling."""
        if not self.session.get_session_options().enable_profiling:
            return []
        try:
            return read_ort_profile(self.session.end_profiling())
        finally:
            self._remove_profile_dir()

    def forward(self, x: torch.Tensor) -> Any:
        x = x.to(torch.float32).contiguous()  # the export's input; a no-op in float32
        self.binding.bind_input(
            INPUT_NAME,
            element_type=self._input_type,
            shape=tuple(x.shape),
            buffer_ptr=x.data_ptr(),
            **self._where,
        )
        if self.device.type == "cuda":  # ORT runs on its own stream: x must be written first
            torch.cuda.current_stream(self.device).synchronize()
        self.session.run_with_iobinding(self.binding)
        return list(self.outputs) if self.listed else self.outputs[0]


def _numpy_dtype(t: torch.Tensor) -> Any:
    return t.detach().cpu()[:0].numpy().dtype.type


def onnxruntime_forward(
    model: nn.Module,
    *,
    batch: int,
    imgsz: int,
    device: torch.device,
    cfg: ExecConfig,
    traced: bool,
) -> tuple[nn.Module, Exported]:
    """The model exported (or found cached) and run by ONNX Runtime on `device`, and its
    record. `traced`: the session also runs ORT's profiler, whose per-node events the
    collector merges into the window's trace (ort_trace.py)."""
    check_onnxruntime()
    import onnxruntime as ort

    provider = PROVIDERS.get(device.type)
    if provider is None or provider not in ort.get_available_providers():
        raise NoProfileError(
            f"--exec onnxruntime on {device.type}: this ONNX Runtime has no "
            f"{provider or device.type} execution provider: pip install onnxruntime-gpu, "
            "or run --device cpu"
        )
    sample = torch.zeros(batch, 3, imgsz, imgsz, device=device)
    with torch.no_grad():
        probe = model(sample)
    export = cached_or_exported(model, sample, probe, opset=cfg.opset)
    while True:  # at most twice: a fresh export is never `cached`
        started = time.perf_counter()
        forward, options = _session(ort, export.path, device, probe, provider, traced)
        if _reproduces(forward, sample, probe):
            break
        if not export.cached:
            raise ExecFailedError(
                "the ONNX export does not reproduce the eager forward on the sample input",
                hint="run --exec eager, or try another exec.opset",
            )
        # a cached file that is not this model's export (edited, or planted): export again
        export = cached_or_exported(model, sample, probe, opset=cfg.opset, fresh=True)
    session_s = time.perf_counter() - started
    return forward, Exported(
        export_s=export.export_s,
        cached=export.cached,
        opset=cfg.opset,
        exporter=EXPORTER,
        path=str(export.path),
        onnxruntime=str(ort.__version__),
        provider=provider,
        intra_op_threads=options.intra_op_num_threads,
        session_s=session_s,
    )


def _session(
    ort: Any, path: Path, device: torch.device, probe: object, provider: str, traced: bool
) -> tuple[OrtForward, Any]:
    """The InferenceSession on `path` as a forward, and its options."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = torch.get_num_threads()  # the collector set it from --threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    # ORT's pool threads spin after each run by default, taking the cores the preprocess and
    # postprocess of the same call need (torch's pool sleeps): off, so the stages compare.
    options.add_session_config_entry(SPIN_KEY, "0")
    profile_dir = None
    if traced:
        profile_dir = private_folder("ONNX Runtime's profile", "libreyolo-ort-")
        options.enable_profiling = True
        options.profile_file_prefix = str(profile_dir / "ort")
    chosen: list[Any] = [provider]
    if device.type == "cuda":
        chosen = [(provider, {"device_id": device.index or 0})]
    session = ort.InferenceSession(str(path), sess_options=options, providers=chosen)
    return OrtForward(session, device, probe, profile_dir), options


def _reproduces(forward: OrtForward, sample: torch.Tensor, probe: object) -> bool:
    """Whether the session's outputs on `sample` are the eager forward's (`probe`), to
    float32 rounding: the export is this model's."""
    got = forward(sample)
    wanted: list[torch.Tensor] = list(probe) if forward.listed else [probe]  # type: ignore[call-overload,list-item]
    ran: list[torch.Tensor] = got if forward.listed else [got]
    return len(ran) == len(wanted) and all(
        g.shape == w.shape and torch.allclose(g, w.to(g.dtype), rtol=1e-3, atol=1e-3)
        for g, w in zip(ran, wanted, strict=True)
    )
