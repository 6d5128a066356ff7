"""The speed-ups a training run did not use, as levers with their measured saving.

A profile of the built-in step does libreyolo 1.6.0's work per step; each of this package's
speed-ups it did not opt into was timed after the window on the part of the step it changes
(`Profile.variant_trials`). The saving is that part's time as run minus its time with the
variant; the rest of the step is the same code either way, so the step with the variant is the
measured step less the saving. Pure.
"""

from __future__ import annotations

from libreyolo.document.model import Profile, Scalar, VariantTrial

MIN_SPEEDUP = 1.02  # below this the saving is within a step's own noise: not a lever


def variant_levers(profile: Profile, metrics: dict[str, Scalar]) -> list[str]:
    """One lever per variant trial worth naming, largest saving first."""
    step_ms = metrics.get("step_ms")
    if not isinstance(step_ms, int | float) or step_ms <= 0:
        return []
    named = []
    for trial in profile.variant_trials:
        saved_ms = trial.as_run_ms - trial.variant_ms
        if not 0 < saved_ms < step_ms:
            continue
        speedup = step_ms / (step_ms - saved_ms)
        if speedup >= MIN_SPEEDUP:
            named.append((saved_ms, _lever(trial, step_ms, speedup)))
    return [text for _, text in sorted(named, key=lambda pair: -pair[0])]


def _lever(trial: VariantTrial, step_ms: float, speedup: float) -> str:
    return (
        f"{trial.part} takes {_duration(trial.as_run_ms)} of a {_duration(step_ms)} step, "
        f"{_duration(trial.variant_ms)} with --variant {trial.variant}: {speedup:.2f}x faster"
    )


def _duration(ms: float) -> str:
    return f"{ms:.0f} ms" if ms < 1000 else f"{ms / 1e3:.2f} s"
