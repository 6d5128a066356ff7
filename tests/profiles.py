"""Small finalized profiles built in memory, for tests of what readers and verdicts make of
one fact (a device, a trace or none, the allocator's record)."""

from __future__ import annotations

from libreyolo.analysis.build import finalize
from libreyolo.document.model import (
    Compute,
    Environment,
    Host,
    Memory,
    Profile,
    RunInfo,
    Samples,
    StepSample,
    Tool,
    TraceAnalysis,
    Trial,
)


def repeat_profile(values: list[float], **fields: object) -> Profile:
    """A minimal `--repeat` document: the trials and their mean as the headline img/s, with
    any other top-level `fields` (e.g. `execution`)."""
    return Profile(
        kind="infer",
        created=None,
        tool=Tool(version="2.0.0"),
        run=RunInfo(mode="inference"),
        metrics={"img_per_s": sum(values) / len(values)},
        trials=[Trial(index=i, metrics={"img_per_s": v}) for i, v in enumerate(values)],
        **fields,  # type: ignore[arg-type]
    )


def training_profile(
    device: str,
    *,
    trace: TraceAnalysis | None = None,
    device_memory: Memory | None = None,
    compute: Compute | None = None,
    device_name: str | None = None,
    host: Host | None = None,
) -> Profile:
    """Eight quiet 20-ms unsynced training steps of batch 4 on `device` (200 img/s),
    finalized (metrics, verdict)."""
    steps = [StepSample(index=i, synced=False, wall_ms=20.0, dataload_ms=0.5) for i in range(8)]
    return finalize(
        Profile(
            kind="train",
            created=None,
            tool=Tool(version="test"),
            run=RunInfo(mode="training", device=device, batch=4, imgsz=64),
            samples=Samples(steps=steps),
            trace=trace,
            device_memory=device_memory,
            compute=compute,
            environment=Environment(device_name=device_name),
            host=host,
        )
    )
