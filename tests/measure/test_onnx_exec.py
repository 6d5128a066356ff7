"""`--exec onnxruntime`: the cached ONNX export, the IO-bound session and its record."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import torch

from libreyolo.cli.main import main
from libreyolo.config.schema import ExecConfig, ExecMode, ProfileConfig
from libreyolo.errors import ExitStatus, NoProfileError
from libreyolo.measure import onnx_exec
from libreyolo.measure.infer import profile_inference
from libreyolo.measure.onnx_exec import onnxruntime_forward
from libreyolo.measure.onnx_export import cached_or_exported
from libreyolo.workload.api import load_workload_model
from tests.configs import configured
from tests.conftest import ROOT
from tests.fixture_files import YOLOX_N, fixture_file

EXPORTED_KEYS = {
    "export_s",
    "cached",
    "opset",
    "exporter",
    "path",
    "onnxruntime",
    "provider",
    "intra_op_threads",
    "session_s",
    "num_nodes",
}


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "cache"
    monkeypatch.setenv("LIBREYOLO_CACHE_DIR", str(cache))
    return cache


def _settings(
    checkpoint: Path, project: Path, size: str = "t", *, trace: bool = False
) -> ProfileConfig:
    values = {
        "model.weights": str(checkpoint),
        "model.size": size,
        "imgsz": 64,
        "window.warmup": 2,
        "window.runs": 6,
        "device.name": "cpu",
        "trace": trace,
        "project": str(project),
        "exec.name": ExecMode.onnxruntime,
    }
    return configured("infer", values)


def _fused(checkpoint: Path, size: str) -> torch.nn.Module:
    workload, model = load_workload_model(checkpoint, size, torch.device("cpu"), [], None)
    if workload.fuse_modes:  # YOLOX has none: it runs as loaded
        model = workload.fuse(model, workload.fuse_modes[0])
    return model.eval()


def test_an_onnxruntime_inference_records_its_export_and_hits_the_cache(
    checkpoint: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    profile, path = profile_inference(_settings(checkpoint, tmp_path / "a"))
    saved = json.loads(path.read_text(encoding="utf-8"))["execution"]
    assert (saved["name"], saved["channels_last"]) == ("onnxruntime", False)
    first = saved["exported"]
    assert set(first) == EXPORTED_KEYS
    assert (first["cached"], first["opset"], first["exporter"]) == (False, 17, "torchscript")
    assert first["provider"] == "CPUExecutionProvider" and first["export_s"] > 0
    assert first["intra_op_threads"] == torch.get_num_threads() and first["session_s"] > 0
    assert Path(first["path"]).is_file()
    assert profile.metrics["latency_p50_ms"] is not None
    assert set(profile.samples.stage_ms) == {"preprocess", "forward", "postprocess"}

    assert first["num_nodes"] is None  # untraced: ORT's profiler was off
    assert profile.notes[-1].startswith("ONNX Runtime ran with session.intra_op.allow_spinning=0")

    again, again_path = profile_inference(_settings(checkpoint, tmp_path / "b", trace=True))
    assert again.execution is not None and again.execution.exported is not None
    second = again.execution.exported
    assert (second.cached, second.export_s, second.path) == (True, first["export_s"], first["path"])
    # Traced: ORT's per-node profile is merged into the trace, so `ops` shows its op types.
    assert second.num_nodes is not None and second.num_nodes > 100
    capsys.readouterr()
    argv = ["profile", "ops", str(again_path), "--phase", "forward", "--json", "--top", "50"]
    assert main(argv) == 0
    ops = {row["op"]: row for row in json.loads(capsys.readouterr().out)["ops"]}
    assert ops["onnxruntime::Conv"]["count_per_step"] > 10
    assert ops["onnxruntime::Conv"]["self_ms_per_step"] > 0


@pytest.mark.parametrize(("which", "size"), [("yolo9", "t"), ("yolox", "n")])
def test_the_session_returns_what_the_eager_forward_returns(
    checkpoint: Path, which: str, size: str
) -> None:
    weights = checkpoint if which == "yolo9" else fixture_file(YOLOX_N)
    model = _fused(weights, size)
    forward, exported = onnxruntime_forward(
        model, batch=1, imgsz=64, device=torch.device("cpu"), cfg=ExecConfig(), traced=False
    )
    x = torch.rand(1, 3, 64, 64, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        eager = model(x)
    ran = forward(x)
    pairs = [(eager, ran)] if which == "yolo9" else list(zip(eager, ran, strict=True))
    assert isinstance(ran, torch.Tensor) == (which == "yolo9")
    if which == "yolox":
        assert isinstance(ran, list) and len(ran) == 3
    for want, got in pairs:
        assert got.shape == want.shape
        assert float((got - want).abs().max()) < 1e-3
    assert exported.cached is False


def test_a_hostile_cache_entry_is_exported_again(checkpoint: Path) -> None:
    model = _fused(checkpoint, "t")
    sample = torch.zeros(1, 3, 64, 64)
    probe = model(sample)
    fresh = cached_or_exported(model, sample, probe, opset=17)
    sidecar = fresh.path.with_suffix(".json")
    good = fresh.path.read_bytes()

    fresh.path.write_bytes(good[: len(good) // 2])  # truncated
    assert cached_or_exported(model, sample, probe, opset=17).cached is False
    sidecar.write_text("not json", encoding="utf-8")  # garbage sidecar
    assert cached_or_exported(model, sample, probe, opset=17).cached is False
    sidecar.write_text(json.dumps({"export_s": 1.0, "pad": "x" * 5000}), encoding="utf-8")
    assert cached_or_exported(model, sample, probe, opset=17).cached is False  # huge sidecar
    fresh.path.unlink()
    fresh.path.mkdir()  # not a file
    again = cached_or_exported(model, sample, probe, opset=17)
    assert again.cached is False and again.path.is_file()
    assert cached_or_exported(model, sample, probe, opset=17).cached is True


def test_another_checkpoint_never_hits_a_stale_export(checkpoint: Path) -> None:
    model = _fused(checkpoint, "t")
    sample = torch.zeros(1, 3, 64, 64)
    probe = model(sample)
    first = cached_or_exported(model, sample, probe, opset=17)
    with torch.no_grad():
        next(model.parameters()).add_(1.0)
    assert cached_or_exported(model, sample, probe, opset=17).path != first.path


def test_a_missing_onnxruntime_is_one_line_exit_3(
    checkpoint: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import builtins

    real_import = builtins.__import__

    def no_ort(name: str, *args: object, **kwargs: object) -> object:
        if name == "onnxruntime":
            raise ImportError("No module named 'onnxruntime'")
        return real_import(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", no_ort)
    argv = ["profile", "infer", "--device", "cpu", "--imgsz", "64", "--runs", "2"]
    argv += ["--weights", str(checkpoint), "--project", str(tmp_path), "--exec", "onnxruntime"]
    assert main(argv) == ExitStatus.NO_PROFILE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and onnx_exec.MISSING in err


def test_half_with_onnxruntime_is_refused_before_the_model_loads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["profile", "infer", "--device", "cpu", "--exec", "onnxruntime", "--half"]
    assert main([*argv, "--project", str(tmp_path)]) == ExitStatus.USAGE
    err = capsys.readouterr().err
    assert err.startswith("--half with --exec onnxruntime: the ONNX export runs in float32")
    assert not (tmp_path / "infer").exists()


def test_the_runtime_profile_goes_to_a_private_folder_and_leaves_nothing(
    checkpoint: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))
    monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again
    victim = tmp_path / "victim.json"
    victim.write_text("keep me")
    # a link planted under the prefix traced sessions once wrote to: left alone, never written
    (temp / f"libreyolo-ort-{os.getpid()}").symlink_to(victim)
    model = _fused(checkpoint, "t")
    forward, _ = onnxruntime_forward(
        model, batch=1, imgsz=64, device=torch.device("cpu"), cfg=ExecConfig(), traced=True
    )
    (private,) = [p for p in temp.iterdir() if not p.is_symlink()]
    assert private.name.startswith("libreyolo-ort-") and private.stat().st_mode & 0o077 == 0
    forward(torch.zeros(1, 3, 64, 64))
    events = forward.profile_events()
    assert any(e.get("name") == "model_run" for e in events)
    assert [p.name for p in temp.iterdir()] == [f"libreyolo-ort-{os.getpid()}"]  # ours gone
    assert victim.read_text() == "keep me"


def test_a_temp_folder_that_cannot_hold_the_profile_is_exit_3(
    checkpoint: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setattr(tempfile, "tempdir", str(blocker / "tmp"))
    with pytest.raises(NoProfileError, match="cannot make a folder for ONNX Runtime's profile"):
        onnxruntime_forward(
            _fused(checkpoint, "t"),
            batch=1,
            imgsz=64,
            device=torch.device("cpu"),
            cfg=ExecConfig(),
            traced=True,
        )


def test_a_cached_export_of_another_model_is_caught_and_exported_again(
    checkpoint: Path,
) -> None:
    """Both files replaced, the sidecar's digest naming the planted bytes: only running the
    export tells, and the forward does."""
    model = _fused(checkpoint, "t")
    sample = torch.zeros(1, 3, 64, 64)
    with torch.no_grad():
        probe = model(sample)
    ours = cached_or_exported(model, sample, probe, opset=17)
    other = _fused(checkpoint, "t")
    with torch.no_grad():
        for parameter in other.parameters():
            parameter.mul_(0.5)
        theirs = cached_or_exported(other, sample, other(sample), opset=17)
    planted = theirs.path.read_bytes()
    ours.path.write_bytes(planted)
    sidecar = json.loads(ours.path.with_suffix(".json").read_text())
    sidecar["sha256"] = hashlib.sha256(planted).hexdigest()
    ours.path.with_suffix(".json").write_text(json.dumps(sidecar))
    assert cached_or_exported(model, sample, probe, opset=17).cached is True  # looks sound
    forward, exported = onnxruntime_forward(
        model, batch=1, imgsz=64, device=torch.device("cpu"), cfg=ExecConfig(), traced=False
    )
    assert exported.cached is False  # made again
    x = torch.rand(1, 3, 64, 64, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        assert float((forward(x) - model(x)).abs().max()) < 1e-3
    assert ours.path.read_bytes() != planted


def test_a_cache_folder_others_may_write_is_not_used(
    checkpoint: Path, _cache_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _cache_dir.mkdir(parents=True)
    _cache_dir.chmod(0o777)
    model = _fused(checkpoint, "t")
    sample = torch.zeros(1, 3, 64, 64)
    with torch.no_grad():
        probe = model(sample)
    first = cached_or_exported(model, sample, probe, opset=17)
    assert not first.path.is_relative_to(_cache_dir) and first.path.is_file()
    assert list(_cache_dir.iterdir()) == []
    assert cached_or_exported(model, sample, probe, opset=17).cached is False


def test_onnxruntimes_session_file_is_never_written_in_the_shared_temp_folder(
    tmp_path: Path,
) -> None:
    # ONNX Runtime's import writes `$TMPDIR/.ses` O_TRUNC, following a link planted there
    shared = tmp_path / "tmp"
    shared.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (shared / ".ses").symlink_to(victim)
    code = "from libreyolo.measure.onnx_exec import check_onnxruntime; check_onnxruntime()"
    env = {**os.environ, "TMPDIR": str(shared), "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-c", code], env=env, check=True, cwd=ROOT, timeout=120)
    assert victim.read_text() == "precious"
    assert sorted(p.name for p in shared.iterdir()) == [".ses"]  # its private folder is gone
