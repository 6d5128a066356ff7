"""What MFU adds to the verdict: the number as evidence, and for a busy GPU far below its peak
the reason and the levers not already in effect; the bound label never changes, a contended
verdict states nothing of it."""

from __future__ import annotations

import msgspec.structs
import pytest

from libreyolo.analysis.mfu_verdict import GPU_BUSY_FOR_MFU, LOW_MFU, mfu_levers
from libreyolo.analysis.verdict import LEVERS
from libreyolo.document.model import Execution, Host, Profile, RunInfo
from tests.compute_profiles import cpu_profile, forward_flops, gpu_profile

BATCH = "larger --batch (more work per kernel)"
IMGSZ = "larger --imgsz where accuracy wants it (larger convolutions)"


def _verdict(profile: Profile) -> tuple[str, str, dict[str, object], list[str]]:
    v = profile.verdict
    assert v is not None
    return v.bound, v.why, dict(v.evidence), list(v.levers)


def test_a_busy_gpu_at_a_low_mfu_says_so() -> None:
    assert (GPU_BUSY_FOR_MFU, LOW_MFU) == (0.9, 0.2)
    bound, why, evidence, levers = _verdict(gpu_profile())
    assert bound == "compute"
    assert why == (
        "GPU busy 95 % but at 0.5 % of its fp16 datasheet peak: small kernels, not saturated math"
    )
    assert evidence == {"gpu_util": 0.95, "mfu": 0.005276, "peak_source": "table"}
    assert levers == [BATCH, IMGSZ, "a smaller model"]  # fp16 AMP ran; training is channels-last


def test_fp32_math_adds_amp_and_tf32() -> None:
    *_, levers = _verdict(gpu_profile(math_dtype="fp32"))
    tf32 = "TF32 for fp32 math (an Ampere or newer GPU)"
    assert levers == [BATCH, IMGSZ, "AMP (run --amp)", tf32, "a smaller model"]


@pytest.mark.parametrize(
    ("busy", "gflop"),
    [(0.85, 26.1), (0.95, 26.1 * 40)],  # not busy enough; busy at 21 % of the peak
    ids=["busy-85", "mfu-21"],
)
def test_otherwise_the_verdict_only_gains_the_evidence(busy: float, gflop: float) -> None:
    profile = gpu_profile(busy_share=busy, flops=forward_flops(gflop))
    bound, why, evidence, levers = _verdict(profile)
    assert bound == "compute" and why == f"the GPU is saturated (~{busy:.0%} busy)"
    assert set(evidence) == {"gpu_util", "mfu"} and levers == LEVERS["compute"]


def test_a_cpu_verdict_gains_the_evidence_only() -> None:
    bound, why, evidence, _ = _verdict(cpu_profile(flops=forward_flops(0.1)))
    assert bound == "compute" and why == "the step runs on the CPU — CPU-bound"
    assert evidence == {"gpu_util": None, "mfu": 0.06135}


def test_a_contended_verdict_states_nothing_of_mfu() -> None:
    starved = Host(measurable=True, usable_cpus=2, cpu_ms=100.0, cpu_wait_ms=100.0)
    profile = gpu_profile(host=starved)
    assert profile.verdict is not None and profile.verdict.bound == "contended"
    assert "mfu" not in profile.verdict.evidence
    assert "peak" not in (profile.verdict.quiet_why or "")


def _inference(profile: Profile, **run: object) -> Profile:
    return msgspec.structs.replace(
        profile, kind="infer", run=RunInfo(mode="inference", device="cuda:0", **run)
    )


@pytest.mark.parametrize(
    ("run", "dtype", "expected"),
    [
        ({"family": "yolo9", "fused": True, "config": {"model": {"fuse": "bn"}}}, "fp32",
         ["channels-last (infer --fuse full)", "AMP (infer --half)",
          "TF32 for fp32 math (an Ampere or newer GPU)"]),
        ({"family": "yolo9", "fused": True, "config": {"model": {"fuse": "full"}}}, "tf32",
         ["AMP (infer --half)"]),
        ({"family": "yolox", "fused": False, "config": {"model": {"fuse": "full"}}}, "bf16", []),
    ],
    ids=["yolo9-bn-fp32", "yolo9-full-tf32", "yolox-bf16"],
)  # fmt: skip
def test_inference_levers_leave_out_what_ran(
    run: dict[str, object], dtype: str, expected: list[str]
) -> None:
    profile = _inference(gpu_profile(), **run)
    assert mfu_levers(profile, dtype) == [BATCH, IMGSZ, *expected]


def test_a_training_step_that_ran_nchw_names_the_channels_last_variant() -> None:
    nchw = Execution(name="eager", channels_last=False, torch="2.11.0")
    profile = msgspec.structs.replace(gpu_profile(), execution=nchw)
    assert mfu_levers(profile, "fp16") == [
        BATCH,
        IMGSZ,
        "channels-last (run --variant channels_last)",
    ]
    nhwc = msgspec.structs.replace(nchw, channels_last=True)
    assert mfu_levers(msgspec.structs.replace(profile, execution=nhwc), "fp16") == [BATCH, IMGSZ]
