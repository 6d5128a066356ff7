"""The trace health checks' names, limits and meanings (`kineto/health.py` runs the checks).

Role: the one list of what each check means, read by the checks and by the renderers, which
must start without the typed document. Must not: import anything (readers stay fast).
"""

from __future__ import annotations

SUSPECT = "suspect-trace"  # the verdict's bound when a check failed: no bottleneck is named
MISSING_SHARE = 0.01  # of the window's launch calls: more without a GPU record = records lost
UNLINKED_SHARE = 0.01  # of the GPU records: more without a launching call = unplaceable
ZERO_DURATION_SHARE = 0.01  # of the kernels
# Steps of one loop (and trials of one measurement) launch the same kernels: this far off
# from the median, one lost records.
STEP_KERNEL_SPREAD = 0.10
BUSY_SLACK_MS = 0.001  # rounding: a step's busy time may exceed its span by this much
BEFORE_LAUNCH_US = 1.0  # clock jitter between the CPU and GPU timelines

SHARES = frozenset({"kernels_per_step", "kernels_across_trials"})  # found and limit: fractions
MEANINGS = {
    "launches_without_gpu_activity": "launch calls whose GPU work the trace never recorded: "
    "the profiler dropped records (pytorch#192021 drops a later session's first kernels), so "
    "GPU time is undercounted",
    "gpu_activity_without_launch": "GPU records with no launching call: they cannot be placed "
    "in a step or a phase",
    "starts_before_launch": "GPU work that starts before the call that launched it: the CPU and "
    "GPU timelines disagree, so every time measured across them is wrong",
    "activity_outside_window": "GPU records more than a whole window after it: displaced "
    "records, counted in no step",
    "zero_timestamps": "records at timestamp 0: placeholders, not measurements",
    "zero_duration_kernels": "kernels recorded with no duration: their time is missing",
    "kernels_per_step": "a step's kernel count this far from the median step's: steps of one "
    "loop launch the same kernels, so it lost records or did other work",
    "gpu_busy_within_step": "steps whose GPU busy time exceeds their span: duplicated or "
    "overlapping records",
    "kernels_across_trials": "a trial's kernels per step this far from the median trial's: "
    "trials of one measurement launch the same kernels, so one recorded a different trace",
}
