"""`profile infer` and `profile run` through the CLI, on CPU with tiny windows."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from tests.conftest import invoke
from tests.fixture_files import YOLO9T, fixture_file
from tests.quiet import invoke_quietly

CHECKPOINT = fixture_file(YOLO9T)
SCHEMA = Path(__file__).resolve().parents[2] / "libreyolo" / "document" / "profile.schema.json"
TINY_INFER = ["--device", "cpu", "--warmup", "1", "--runs", "4", "--imgsz", "128"]


@pytest.fixture
def weights() -> str:
    return str(CHECKPOINT)


def test_infer_writes_a_valid_profile_the_readers_read(weights: str, tmp_path: Path) -> None:
    project = str(tmp_path / "p")
    result = invoke(
        ["profile", "infer", "--weights", weights, *TINY_INFER, "--project", project, "--json"]
    )
    assert result.status == 0, result.stderr
    out = result.json()
    assert list(out)[:10] == [
        "profile",
        "mode",
        "img_per_s",
        "img_per_s_std",
        "img_per_s_n",
        "latency_p50_ms",
        "latency_p90_ms",
        "latency_p99_ms",
        "bound",
        "stages_ms",
    ]
    path = Path(out["profile"])
    assert path == tmp_path / "p" / "infer" / "profile.json" and out["mode"] == "inference"
    document = json.loads(path.read_text())
    jsonschema.validate(document, json.loads(SCHEMA.read_text()))
    assert document["run"]["config"]["model"]["weights"] == weights
    assert document["run"]["overrides"][0] == "mode=infer"
    assert len(document["samples"]["latency_ms"]) == 4  # every one of the 4 runs
    assert invoke(["profile", "summary", str(path)]).status == 0
    assert invoke(["profile", "get", str(path), "forward_ms"]).stdout.strip() != "null"
    assert (path.parent / "profile_trace.json").is_file()
    assert invoke(["profile", "phases", str(path.parent / "profile_trace.json")]).status == 0


def test_infer_repeat_writes_the_aggregate_with_trials(weights: str, tmp_path: Path) -> None:
    project = tmp_path / "p"
    result = invoke(
        [
            "profile",
            "infer",
            "--weights",
            weights,
            *TINY_INFER,
            "--no-trace",
            "--repeat",
            "2",
            "--project",
            str(project),
            "--json",
        ]
    )
    assert result.status == 0, result.stderr
    out = result.json()
    assert out["profile"] == str(project / "infer_repeat.json") and out["img_per_s_n"] == 2
    document = json.loads((project / "infer_repeat.json").read_text())
    trials = [t["metrics"]["img_per_s"] for t in document["trials"]]
    assert len(trials) == 2
    assert document["metrics"]["img_per_s"] == pytest.approx(sum(trials) / 2, abs=1e-3)
    compared = invoke(["profile", "compare", out["profile"], out["profile"], "--json"]).json()
    assert compared["img_per_s"]["significant"] is False


def test_infer_text_output_keeps_the_v1_lines(weights: str, tmp_path: Path) -> None:
    argv = ["profile", "infer", "--weights", weights, *TINY_INFER, "--no-trace"]
    result = invoke_quietly([*argv, "--project", str(tmp_path)], tmp_path / "infer/profile.json")
    assert result.status == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("latency  p50 ") and " img/s" in lines[0]
    assert lines[1].startswith("stages   preprocess ")
    assert lines[2].startswith(">> COMPUTE: ")
    assert lines[3] == f"profile: {tmp_path / 'infer' / 'profile.json'}"
    assert lines[4] == f"next:    libreyolo profile summary {tmp_path / 'infer' / 'profile.json'}"
    assert lines[5] == (
        f"         libreyolo profile report {tmp_path / 'infer' / 'profile.json'}  (an HTML page)"
    )


def test_infer_default_device_without_cuda_exits_2(weights: str, tmp_path: Path) -> None:
    result = invoke(["profile", "infer", "--weights", weights, "--project", str(tmp_path)])
    assert result.status == 2 and result.stdout == ""
    assert result.stderr == (
        "--device 0 needs CUDA, but torch finds no CUDA device (use --device cpu)\n"
    )
    assert not (tmp_path / "infer").exists()


@pytest.fixture
def synthetic_yaml(tmp_path: Path) -> str:
    from libreyolo.workload.data.synthetic import make_synthetic

    return str(make_synthetic(tmp_path / "data", num_train=6, num_val=2, imgsz=128, seed=1))


TINY_RUN = [
    "--device",
    "cpu",
    "--batch",
    "2",
    "--imgsz",
    "128",
    "--workers",
    "0",
    "--steps",
    "2",
    "--warmup",
    "1",
]


def test_run_on_the_synthetic_dataset(weights, synthetic_yaml, tmp_path: Path) -> None:
    argv = ["profile", "run", synthetic_yaml, "--weights", weights, *TINY_RUN]
    argv += ["--project", str(tmp_path / "p"), "--json"]
    result = invoke_quietly(argv, tmp_path / "p" / "run" / "profile.json")
    assert result.status == 0, result.stderr
    out = result.json()
    assert list(out)[:7] == [
        "profile",
        "trace",
        "img_per_s",
        "img_per_s_std",
        "img_per_s_n",
        "bound",
        "gpu_util",
    ]
    assert out["bound"] == "compute"  # a CPU training step is CPU-bound, never host / launch
    phases = invoke(["profile", "phases", out["profile"], "--json"]).json()
    names = [row["phase"] for row in phases["phases"]]
    assert {"dataload", "to_device", "forward", "backward", "optimizer"} <= set(names)
    # A CPU summary says where the CPU's op time goes, since there is no kernel mix.
    summary = invoke(["profile", "summary", out["profile"], "--json"]).json()
    mix = {row["name"]: row["pct"] for row in summary["op_categories"]}
    assert sum(mix.values()) == pytest.approx(100.0, abs=0.5)
    assert mix["gemm / conv"] > 0 and mix["norm"] > 0
    assert summary["top_ops"] and summary["top_ops"][0]["self_ms_per_step"] > 0
    text = invoke(["profile", "summary", out["profile"]]).stdout
    assert "op mix (CPU self time):" in text and "top ops/step (self time):" in text


def test_run_with_a_dataset_too_small_exits_3(weights, synthetic_yaml, tmp_path: Path) -> None:
    result = invoke(
        [
            "profile",
            "run",
            synthetic_yaml,
            "--weights",
            weights,
            *TINY_RUN[:-4],
            "--steps",
            "20",
            "--warmup",
            "1",
            "--project",
            str(tmp_path / "p"),
        ]
    )
    assert result.status == 3 and result.stdout == ""
    assert "--steps" in result.stderr and "--batch" in result.stderr
    assert result.stderr.count("\n") == 1
    assert not (tmp_path / "p" / "run" / "profile.json").exists()


def test_run_auto_batch_on_cpu_names_a_dataset_too_small(
    weights, synthetic_yaml, tmp_path: Path
) -> None:
    """`--batch -1` fits host memory on the CPU (tests/measure/test_host_fit.py); a dataset
    that cannot hold the window even at batch 1 still exits 3 with the numbers."""
    result = invoke(
        [
            "profile",
            "run",
            synthetic_yaml,
            "--weights",
            weights,
            "--device",
            "cpu",
            "--batch",
            "-1",
            "--project",
            str(tmp_path),
        ]
    )
    assert (result.status, result.stdout) == (3, "")
    assert result.stderr == (
        "the dataset has 6 images: 6 batches of 1 per epoch, but the 20 measured steps need 20 "
        "batches in one epoch (use a larger dataset, fewer --steps, or a smaller --batch)\n"
    )


def test_interrupt_exits_130_with_one_line(monkeypatch, weights: str, tmp_path: Path) -> None:
    import libreyolo.measure as measure

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(measure, "profile_inference", interrupted)
    result = invoke(
        ["profile", "infer", "--weights", weights, *TINY_INFER, "--project", str(tmp_path)]
    )
    assert (result.status, result.stdout, result.stderr) == (130, "", "interrupted\n")


def test_print_config_shows_the_composed_config_without_measuring(tmp_path: Path) -> None:
    result = invoke(
        [
            "profile",
            "infer",
            "--device",
            "cpu",
            "--batch",
            "4",
            "--print-config",
            "--project",
            str(tmp_path),
            "--json",
        ]
    )
    assert result.status == 0, result.stderr
    config = result.json()
    assert (config["mode"], config["batch"], config["device"]["name"]) == ("infer", 4, "cpu")
    assert not any(tmp_path.iterdir())


def test_experiment_file_is_overridden_only_by_typed_flags() -> None:
    conf = str(Path(__file__).resolve().parents[2] / "conf")
    result = invoke(
        [
            "profile",
            "infer",
            "--config-dir",
            conf,
            "--config",
            "infer_latency_fp16",
            "--device",
            "cpu",
            "--print-config",
            "--json",
        ]
    )
    assert result.status == 0, result.stderr
    config = result.json()
    assert config["half"] is True  # the file's value survives the --no-half default
    assert config["model"]["weights"] == "LibreYOLO9s.pt" and config["device"]["name"] == "cpu"


def test_unknown_config_file_exits_2(tmp_path: Path) -> None:
    result = invoke(
        ["profile", "infer", "--config-dir", str(tmp_path), "--config", "nope", "--print-config"]
    )
    assert result.status == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1


def test_progress_is_shown_on_a_terminal_only() -> None:
    import io

    from libreyolo.boundary.output import Output

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert Output(io.StringIO(), io.StringIO()).progress() is None
    assert Output(io.StringIO(), Terminal(), json_mode=True).progress() is None
    err = Terminal()
    out = Output(io.StringIO(), err)
    show = out.progress()
    assert show is not None
    for stage, done, total in (("load weights", 0, 1), ("warmup", 1, 2), ("measured step", 3, 4)):
        show(stage, done, total)
    out.close()
    assert "measured step" in err.getvalue()


def test_include_decode_moves_decoding_into_preprocess(weights: str, tmp_path: Path) -> None:
    base = ["profile", "infer", "--weights", weights, *TINY_INFER, "--no-trace", "--json"]
    a, b = tmp_path / "a", tmp_path / "b"
    once = invoke_quietly([*base, "--project", str(a)], a / "infer/profile.json").json()
    inside = invoke_quietly(
        [*base, "--include-decode", "--project", str(b)], b / "infer/profile.json"
    ).json()
    # The sample image is a 1280x852 JPEG: decoding it costs milliseconds on any CPU.
    assert inside["stages_ms"]["preprocess"] > once["stages_ms"]["preprocess"]
    document = json.loads(Path(inside["profile"]).read_text())
    assert document["run"]["config"]["include_decode"] is True


def test_run_accepts_the_built_in_synthetic_name(weights, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("LIBREYOLO_DATASETS_DIR", str(tmp_path / "datasets"))
    result = invoke(
        [
            "profile",
            "run",
            "synthetic",
            "--weights",
            weights,
            *TINY_RUN,
            "--project",
            str(tmp_path / "p"),
            "--json",
        ]
    )
    assert result.status == 0, result.stderr
    assert Path(result.json()["profile"]).is_file()
    assert any((tmp_path / "datasets").iterdir())  # generated once into the datasets folder


def test_unknown_fuse_mode_exits_2_before_measuring(tmp_path: Path) -> None:
    result = invoke(["profile", "infer", "--device", "cpu", "--fuse", "fast"])
    assert result.status == 2 and result.stdout == ""
    assert "--fuse: invalid choice: 'fast'" in result.stderr
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "odd.yaml").write_text(
        "defaults:\n  - profile\n  - override mode: infer\n  - _self_\nmodel:\n  fuse: fast\n",
        encoding="utf-8",
    )
    project = tmp_path / "p"
    argv = ["profile", "infer", "--config-dir", str(conf), "--config", "odd", "--device", "cpu"]
    result = invoke([*argv, "--project", str(project)])
    assert result.status == 2, result.stderr
    assert result.stderr == "model.fuse must be one of full, bn, none; got 'fast'\n"
    assert not project.exists()


@pytest.mark.parametrize(
    ("command", "header", "composed"),
    [
        ("infer", "defaults:\n  - profile\n  - _self_\n", "run"),  # no mode: run's default
        ("infer", "defaults:\n  - profile\n  - override mode: run\n  - _self_\n", "run"),
        ("run", "defaults:\n  - profile\n  - override mode: infer\n  - _self_\n", "infer"),
    ],
)
def test_a_config_file_of_the_other_mode_is_refused(
    tmp_path: Path, command: str, header: str, composed: str
) -> None:
    """`profile infer --config X` measured a training step when X chose (or kept) mode run."""
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "other.yaml").write_text(header + "batch: 2\nimgsz: 64\n", encoding="utf-8")
    project = tmp_path / "p"
    argv = ["profile", command, *(["synthetic"] if command == "run" else [])]
    argv += ["--config-dir", str(conf), "--config", "other", "--device", "cpu"]
    result = invoke([*argv, "--project", str(project)])
    assert result.status == 2, result.stderr
    assert result.stderr == (
        f"--config other composes mode {composed}, not {command}: measure it with "
        f"'libreyolo profile {composed}', or give the file mode {command} (its defaults list "
        f"chooses the mode: override mode: {command})\n"
    )
    assert not project.exists()
