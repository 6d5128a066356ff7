"""Execution modes: refusals before any model loads, torch.compile's record (graphs, breaks,
recompiles in warmup and window), channels-last, and a compile failure as one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from torch import nn

from libreyolo.cli.main import main
from libreyolo.config.schema import ExecConfig, ExecMode, ProfileConfig
from libreyolo.document.mode import Mode
from libreyolo.errors import UsageError
from libreyolo.measure.exec_mode import (
    CompileWatch,
    ExecFailedError,
    check_exec,
    check_exec_device,
    compile_in_place,
    first_call,
    use_channels_last,
)
from libreyolo.measure.infer import profile_inference
from libreyolo.measure.train import profile_training
from libreyolo.workload.data.synthetic import make_synthetic
from tests.configs import configured

EAGER_BACKEND = {"exec.name": ExecMode.compile, "exec.compile_backend": "eager"}


def _infer_settings(checkpoint: Path, project: Path, values: dict[str, object]) -> ProfileConfig:
    base = {
        "model.weights": str(checkpoint),
        "model.size": "t",
        "imgsz": 64,
        "window.warmup": 3,
        "window.runs": 4,
        "device.name": "cpu",
        "trace": False,
        "project": str(project),
    }
    return configured("infer", base | values)


@pytest.mark.parametrize(
    ("cfg", "mode", "warmup", "message"),
    [
        (
            ExecConfig(name=ExecMode.onnxruntime),
            Mode.TRAIN,
            5,
            "--exec onnxruntime runs inference only; a training step runs eager or compile",
        ),
        (
            ExecConfig(name=ExecMode.cudagraphs),
            Mode.TRAIN,
            5,
            "--exec cudagraphs runs inference only; a training step runs eager or compile "
            "(CUDA graphs in training: --exec compile --compile-mode reduce-overhead)",
        ),
        (
            ExecConfig(compile_mode="fastest"),
            Mode.INFER,
            20,
            "exec.compile_mode must be one of default, reduce-overhead, max-autotune; "
            "got 'fastest'",
        ),
        (
            ExecConfig(compile_backend="x; rm -rf /"),
            Mode.INFER,
            20,
            "exec.compile_backend must be a backend name; got 'x; rm -rf /'",
        ),
        (ExecConfig(opset=99), Mode.INFER, 20, "exec.opset must lie in 7..23; got 99"),
        (
            ExecConfig(name=ExecMode.compile),
            Mode.INFER,
            2,
            "--exec compile needs --warmup 3 or more (got 2): the first calls after compiling "
            "still record CUDA graphs or settle autotuning",
        ),
    ],
)
def test_a_mode_the_run_cannot_have_is_refused_with_one_line(
    cfg: ExecConfig, mode: Mode, warmup: int, message: str
) -> None:
    with pytest.raises(UsageError) as refused:
        check_exec(cfg, mode, warmup)
    assert str(refused.value) == message


def test_cuda_graphs_on_a_cpu_are_refused() -> None:
    with pytest.raises(UsageError, match=r"^--exec cudagraphs needs a CUDA device; cpu has"):
        check_exec_device(ExecConfig(name=ExecMode.cudagraphs), torch.device("cpu"))
    check_exec_device(ExecConfig(name=ExecMode.compile), torch.device("cpu"))  # no refusal


def test_channels_last_follows_the_path_unless_asked() -> None:
    model = nn.Conv2d(3, 8, 3)
    assert use_channels_last(model, None, default=False) is False
    assert model.weight.is_contiguous()
    assert use_channels_last(model, True, default=False) is True
    assert model.weight.is_contiguous(memory_format=torch.channels_last)
    assert use_channels_last(model, False, default=True) is False
    assert model.weight.is_contiguous()


def test_the_watch_counts_a_recompile_inside_the_window() -> None:
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU())
    cfg = ExecConfig(name=ExecMode.compile, compile_backend="eager")
    compile_in_place(model, cfg)
    watch = CompileWatch.start()
    seconds = first_call(lambda: model(torch.zeros(1, 3, 8, 8)), "torch.compile")
    watch.mark_first_call()
    model(torch.zeros(1, 3, 8, 8))  # warmup: the same shape, no compile
    watch.mark_window()
    model(torch.zeros(2, 3, 8, 8))  # another batch inside the window: dynamo compiles again
    compiled = watch.compiled(cfg, seconds)
    assert (compiled.num_graphs, compiled.graph_breaks) == (1, 0)
    assert (compiled.warmup_recompiles, compiled.window_recompiles) == (0, 1)
    assert compiled.backend == "eager" and compiled.compile_s == seconds > 0


def test_a_graph_break_is_counted_with_its_reason() -> None:
    class Breaks(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = x * 2
            torch._dynamo.graph_break()
            return y + 1

    model = Breaks()
    cfg = ExecConfig(name=ExecMode.compile, compile_backend="eager")
    compile_in_place(model, cfg)
    watch = CompileWatch.start()
    first_call(lambda: model(torch.ones(3)), "torch.compile")
    watch.mark_first_call()
    compiled = watch.compiled(cfg, 0.1)
    assert compiled.graph_breaks == 1 and compiled.num_graphs == 2
    assert compiled.break_reasons and "graph_break" in compiled.break_reasons[0]


def test_a_failing_first_call_is_one_line_naming_what_failed() -> None:
    def fails() -> None:
        raise RuntimeError("aten::frobnicate has no lowering\n  a long traceback-ish tail")

    with pytest.raises(ExecFailedError) as failed:
        first_call(fails, "torch.compile")
    assert (
        str(failed.value) == "torch.compile failed: RuntimeError: aten::frobnicate has no lowering"
    )
    assert failed.value.status == 3


def test_a_compiled_inference_records_its_compile(checkpoint: Path, tmp_path: Path) -> None:
    settings = _infer_settings(checkpoint, tmp_path, EAGER_BACKEND)
    profile, _ = profile_inference(settings)
    execution = profile.execution
    assert execution is not None and execution.name == "compile"
    assert execution.channels_last is True  # --fuse full's NHWC weights
    assert execution.torch == str(torch.__version__)
    compiled = execution.compiled
    assert compiled is not None and compiled.backend == "eager"
    assert compiled.num_graphs >= 1 and compiled.graph_breaks == 0 and compiled.compile_s > 0
    # YOLOv9's anchor cache, when the first call fills it, makes the second compile once more:
    # inside the warmup (why compile needs one), never inside the window.
    assert compiled.warmup_recompiles <= 1 and compiled.window_recompiles == 0
    assert profile.metrics["latency_p50_ms"] is not None
    assert set(profile.samples.stage_ms) == {"preprocess", "forward", "postprocess"}


def test_an_eager_inference_records_its_layout(checkpoint: Path, tmp_path: Path) -> None:
    settings = _infer_settings(
        checkpoint, tmp_path, {"exec.channels_last": False, "window.warmup": 1}
    )
    profile, _ = profile_inference(settings)
    assert profile.execution is not None
    assert (profile.execution.name, profile.execution.channels_last) == ("eager", False)
    assert profile.execution.compiled is None and profile.execution.exported is None


def test_a_compiled_training_step_compiles_before_the_warmup(
    checkpoint: Path, tmp_path: Path
) -> None:
    data = make_synthetic(tmp_path / "data", num_train=12, num_val=2, imgsz=64)
    settings = configured(
        "run",
        {
            "dataset.name_or_path": str(data),
            "model.weights": str(checkpoint),
            "model.size": "t",
            "batch": 2,
            "imgsz": 64,
            "dataset.workers": 0,
            "window.steps": 2,
            "window.warmup": 3,
            "device.name": "cpu",
            "project": str(tmp_path / "project"),
        }
        | EAGER_BACKEND,
    )
    profile, _ = profile_training(settings)
    execution = profile.execution
    assert execution is not None and execution.compiled is not None
    assert execution.name == "compile" and execution.channels_last is False  # 1.6.0's NCHW
    assert execution.compiled.num_graphs >= 1 and execution.compiled.window_recompiles == 0
    assert any(
        note.startswith("torch.compile: one step on a random probe") for note in profile.notes
    )
    assert len(profile.samples.steps) == 2
    # Compiled kernels bypass the dispatcher that counts tensors: no split, and a note says so.
    assert profile.tensor_memory is None
    assert "tensor memory by category not tracked under --exec compile" in "\n".join(profile.notes)


def test_the_flags_compose_the_exec_group(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["profile", "infer", "--exec", "compile", "--compile-mode", "max-autotune"]
    assert main([*argv, "--no-channels-last", "--print-config", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["exec"] == {
        "name": "compile",
        "compile_mode": "max-autotune",
        "compile_backend": "inductor",
        "dynamic": False,
        "channels_last": False,
        "opset": 17,
    }
