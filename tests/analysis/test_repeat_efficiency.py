"""A `--repeat` aggregate keeps the efficiency means at the precision `get` prints for one
trial: MFU and FLOP rates by their significant digits, FLOP counts whole."""

from __future__ import annotations

from libreyolo.analysis.repeat import aggregate
from tests.compute_profiles import gpu_profile


def test_trial_means_keep_small_mfus_and_whole_flops() -> None:
    metrics = aggregate([gpu_profile(), gpu_profile()]).metrics
    assert metrics["mfu"] == 0.005276  # 3 decimals would read 0.005
    assert metrics["energy_j_per_img"] == 0.84 and metrics["achieved_tflops"] == 5.22
    assert metrics["flops_per_image"] == 26100000000
    assert isinstance(metrics["flops_per_image"], int)
