"""`libreyolo profile memory` and summary's tensor line, on a real CPU training profile; and
every way a profile can lack what it reads."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from libreyolo.analysis.metrics import compute_metrics
from libreyolo.document.files import load, save
from libreyolo.document.model import TENSOR_CATEGORIES, Memory
from tests.conftest import invoke


def test_memory_lists_every_category_summing_to_the_peak(cpu_train_profile: Path) -> None:
    result = invoke(["profile", "memory", str(cpu_train_profile), "--json"])
    assert result.status == 0 and result.stderr == ""
    out = result.json()
    assert isinstance(out, dict)
    assert list(out) == [
        "trace",
        "peak_mb",
        "phase_at_peak",
        "batch",
        "imgsz",
        "largest",
        "lever",
        "categories",
        "blocks",
        "peak_rss_mb",
        "peak_rss_own",
        "vram",
        "track_ms",
        "prediction",
    ]
    rows = out["categories"]
    assert sorted(row["category"] for row in rows) == sorted(TENSOR_CATEGORIES)
    assert [row["mb"] for row in rows] == sorted((row["mb"] for row in rows), reverse=True)
    assert sum(row["mb"] for row in rows) == pytest.approx(out["peak_mb"], rel=0.05)
    assert out["largest"] == rows[0]["category"]
    assert (out["batch"], out["imgsz"]) == (2, 64)
    # The weights, the EMA copy and the momentum are each the model's size: YOLOv9-t, 80 classes.
    by_name = {row["category"]: row["mb"] for row in rows}
    assert by_name["params"] == pytest.approx(by_name["optimizer"], rel=0.01)
    assert 8 < by_name["params"] < 12
    assert 0 < len(out["blocks"]) <= 10
    assert out["peak_rss_mb"] > out["peak_mb"]  # the process holds torch itself besides
    assert out["peak_rss_own"] is True  # measured now: shared library pages left out
    assert out["vram"] is None  # no CUDA allocator on the CPU
    text = invoke(["profile", "memory", str(cpu_train_profile)]).stdout
    rss = out["peak_rss_mb"]  # measured in this test process: past 1000 MB after other tests
    size = f"{rss / 1000:.2f} GB" if rss >= 1000 else f"{rss:.1f} MB"
    assert (
        f"         the window's peak RSS: {size} (the process's own: "
        "interpreter, torch and free blocks too; shared library pages not)"
    ) in text.splitlines()


def test_memory_text_and_summary_name_the_largest_category(cpu_train_profile: Path) -> None:
    view = invoke(["profile", "memory", str(cpu_train_profile), "--top", "3", "--json"]).json()
    assert isinstance(view, dict)
    largest = view["largest"]
    text = invoke(["profile", "memory", str(cpu_train_profile), "--top", "3"]).stdout
    assert text.startswith(f"tensors  peak {view['peak_mb']:.1f} MB = {largest} ")
    lines = text.splitlines()
    first = lines.index("activations alive at the peak, by block:") + 1
    blocks = lines[first : first + 3]
    assert lines[first + 3].startswith("predict  ")
    assert [line.split()[0] for line in blocks] == [b["block"] for b in view["blocks"][:3]]
    assert f"lever    {largest}, the largest: " in text
    summary = invoke(["profile", "summary", str(cpu_train_profile)]).stdout
    line = next(line for line in summary.splitlines() if line.startswith("tensors  "))
    assert line.startswith(f"tensors  peak {view['peak_mb']:.1f} MB = {largest} ")
    assert invoke(["profile", "get", str(cpu_train_profile), "tensor_largest"]).stdout == (
        f"{largest}\n"
    )
    summary_json = invoke(["profile", "summary", str(cpu_train_profile), "--json"]).json()
    assert isinstance(summary_json, dict)
    assert summary_json["tensor_memory"]["largest"] == largest


def test_an_inference_profile_has_no_training_step_to_split(cpu_infer_profile: Path) -> None:
    result = invoke(["profile", "memory", str(cpu_infer_profile)])
    assert result.status == 1 and result.stdout == ""
    assert result.stderr.splitlines()[0] == (
        f"failed to analyse {cpu_infer_profile}: no tensor memory by category "
        "(an inference profile has no training step) (measure one with `profile run`)"
    )


def test_an_older_training_profile_says_what_to_do(reference_v1: Path) -> None:
    result = invoke(["profile", "memory", str(reference_v1 / "train_cpu.profile.json")])
    assert result.status == 1 and result.stdout == ""
    assert "no tensor memory by category (this training profile has no tracked step: " in (
        result.stderr
    )
    assert result.stderr.endswith("(measure again with `profile run ... --exec eager`)\n")


def test_a_missing_file_is_exit_2(tmp_path: Path) -> None:
    result = invoke(["profile", "memory", str(tmp_path / "nope.json")])
    assert result.status == 2 and result.stdout == ""
    assert len(result.stderr.splitlines()) <= 2


@pytest.mark.parametrize(
    "hostile",
    [
        {"categories": "all of it"},
        {"peak_bytes": "many"},
        {"top_blocks": [{"name": 3, "bytes": 1}]},
        {"phase_at_peak": None},
    ],
)
def test_a_hostile_tensor_memory_is_one_line_and_exit_1(
    cpu_train_profile: Path, tmp_path: Path, hostile: dict[str, object]
) -> None:
    raw = json.loads(cpu_train_profile.read_text(encoding="utf-8"))
    raw["tensor_memory"] |= hostile
    path = tmp_path / "profile.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    result = invoke(["profile", "memory", str(path)])
    assert result.status == 1 and result.stdout == ""
    assert result.stderr.startswith(f"failed to analyse {path}")
    assert "Traceback" not in result.stderr


def test_a_zero_peak_gives_zero_shares(cpu_train_profile: Path, tmp_path: Path) -> None:
    raw = json.loads(cpu_train_profile.read_text(encoding="utf-8"))
    raw["tensor_memory"] |= {
        "peak_bytes": 0,
        "categories": dict.fromkeys(TENSOR_CATEGORIES, 0),
        "top_blocks": [],
    }
    path = tmp_path / "profile.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    out = invoke(["profile", "memory", str(path), "--json"]).json()
    assert isinstance(out, dict)
    assert {row["share"] for row in out["categories"]} == {0.0} and out["blocks"] == []


DOCS_B8 = Path(__file__).parents[1] / "fixtures" / "docs" / "train_yolo9t_cpu_b8_320.profile.json"


def test_the_prediction_at_another_batch_and_under_a_budget() -> None:
    """YOLOv9-t, 320 px, batch 8 on the CPU: probes at 2 and 4 predict the step's 986.0 MB."""
    argv = ["profile", "memory", str(DOCS_B8), "--batch", "32", "--budget-mb", "4000"]
    out = invoke([*argv, "--json"]).json()
    assert isinstance(out, dict)
    rss = out["peak_rss_mb"]
    assert out["prediction"] == {
        "probe_batches": [2, 4],
        "predicted_mb": 986.0,
        "error_pct": 0.0,
        "per_image_mb": 118.92,
        "process": "peak RSS",
        "at_batch": 32,
        "at_batch_mb": 3840.1,
        # What is not tensors stays: the measured RSS plus 1.25x the tensors' growth 8 -> 32.
        "at_batch_process_mb": pytest.approx(rss + 1.25 * (3840.1 - 986.0), abs=0.1),
        "budget_mb": 4000,
        # 4000 MB of RSS: the tensors may grow (4000 - rss) / 1.25 MB, 118.92 MB an image.
        "largest_batch": 8 + int((4000 - rss) / 1.25 // 118.92),
    }
    assert rss == 2175.1
    text = invoke(argv).stdout.splitlines()
    at = text.index(
        "predict  986.0 MB at batch 8, +0.0% off the measured peak (from steps at batch 2 and 4)"
    )
    assert text[at + 1 : at + 4] == [
        "         118.9 MB an image",
        "         batch 32: 3.84 GB of tensors, peak RSS 5.74 GB",
        "         largest under 4.00 GB of peak RSS: batch 20",
    ]
    get = invoke(["profile", "get", str(DOCS_B8), "tensor_prediction_error_pct"])
    assert get.stdout == "0.0\n"


@pytest.mark.parametrize("flag", [["--batch", "0"], ["--budget-mb", "-5"], ["--batch", "x"]])
def test_a_bad_prediction_flag_is_exit_2(flag: list[str]) -> None:
    result = invoke(["profile", "memory", str(DOCS_B8), *flag])
    assert result.status == 2 and result.stdout == ""


def test_compare_shows_the_tensor_peak_and_categories(cpu_train_profile: Path) -> None:
    argv = ["profile", "compare", str(cpu_train_profile), str(DOCS_B8)]
    out = invoke([*argv, "--json"]).json()
    assert isinstance(out, dict)
    tensors = out["tensor_memory"]
    assert tensors["peak_mb"]["after"] == 986.0
    assert list(tensors["categories"]) == [
        name for name in TENSOR_CATEGORIES if name in tensors["categories"]
    ]
    # The same model on the same dataset: its weights and their state do not move.
    for name in ("params", "optimizer", "ema"):
        assert tensors["categories"][name]["change"] == 0.0
    assert tensors["categories"]["activations"]["change"] > 1
    text = invoke(argv).stdout.splitlines()
    assert any(line.startswith("tensor peak    ") and " -> 986.0 MB (+" in line for line in text)
    assert any(line.startswith("  activations  ") for line in text)


def test_compare_without_tracked_steps_has_no_tensor_lines(reference_v1: Path) -> None:
    files = [str(reference_v1 / "train_cpu.profile.json")] * 2
    out = invoke(["profile", "compare", *files, "--json"]).json()
    assert isinstance(out, dict) and out["tensor_memory"] is None
    assert "tensor peak" not in invoke(["profile", "compare", *files]).stdout


def test_a_fragmented_cuda_window_names_expandable_segments(tmp_path: Path) -> None:
    """A training profile whose allocator held 1.2 GB reserved for a 0.9 GB allocated peak,
    0.3 GB of it split blocks not in use: the memory reader shows the allocator's line and the
    lever, summary one line; at 10 % neither names a lever."""

    def with_memory(inactive_bytes: int, name: str) -> Path:
        profile = load(str(DOCS_B8))
        memory = Memory(
            peak_allocated_bytes=900_000_000,
            peak_reserved_bytes=1_200_000_000,
            num_alloc_retries=0,
            peak_inactive_split_bytes=inactive_bytes,
            largest_free_block_bytes=41_943_040,
        )
        profile = msgspec.structs.replace(profile, device_memory=memory)
        bound = profile.metrics["bound"]
        assert isinstance(bound, str)
        metrics = compute_metrics(profile, bound=bound)
        return save(msgspec.structs.replace(profile, metrics=metrics), tmp_path / name)

    fragmented = with_memory(372_000_000, "fragmented.json")
    out = invoke(["profile", "memory", str(fragmented), "--json"]).json()
    assert isinstance(out, dict)
    lever = (
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (segments grow in place instead of "
        "being split)"
    )
    assert out["vram"] == {
        "peak_allocated_mb": 900.0,
        "peak_reserved_mb": 1200.0,
        "fragmentation_pct": 31.0,
        "largest_free_block_mb": 41.9,
        "alloc_retries": 0,
        "lever": lever,
    }
    lines = invoke(["profile", "memory", str(fragmented)]).stdout.splitlines()
    assert (
        "VRAM     peak allocated 900.0 MB of 1.20 GB reserved · fragmentation 31% (split blocks "
        "not in use) · largest free block 41.9 MB · 0 allocation retries"
    ) in lines
    assert lines[-1] == f"lever    fragmentation: {lever}"
    summary = invoke(["profile", "summary", str(fragmented)]).stdout.splitlines()
    assert (
        "memory   VRAM fragmentation 31% of the 1200 MB reserved peak (split cached blocks not "
        f"in use); largest free block 41.9 MB: {lever}"
    ) in summary
    got = invoke(["profile", "get", str(fragmented), "vram_fragmentation_pct"])
    assert got.stdout == "31.0\n"

    tidy = with_memory(120_000_000, "tidy.json")
    assert "fragmentation:" not in invoke(["profile", "memory", str(tidy)]).stdout
    assert "VRAM fragmentation" not in invoke(["profile", "summary", str(tidy)]).stdout
