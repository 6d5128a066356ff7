"""What the trainer probe reports, as typed records: checked when read, never trusted.

The probe runs in another environment's interpreter, so its events and `probe.json` are input
like a user's file: each is converted into these structs (msgspec checks every type and
range; a time is a finite number of milliseconds ≥ 0), and anything else is one
TrainerFailedError line (exit 3), never a traceback or a NaN in a profile.
"""

from __future__ import annotations

from typing import Annotated, Any, TypeVar

import msgspec

from libreyolo.errors import TrainerFailedError

Ms = Annotated[float, msgspec.Meta(ge=0.0, le=1e12)]  # finite: NaN and inf fail `ge`/`le`
Count = Annotated[int, msgspec.Meta(ge=0, le=1 << 40)]
Text = Annotated[str, msgspec.Meta(max_length=4096)]
MAX_SAMPLES = 1 << 20


class ProbeHello(msgspec.Struct, frozen=True, forbid_unknown_fields=False):
    """The environment: versions, as soon as its torch and libreyolo imported."""

    libreyolo: Text = "?"
    libreyolo_path: Text = ""
    torch: Text = "?"
    cuda: Text | None = None
    python_version: Text | None = None
    platform: Text | None = None


class ProbeReady(msgspec.Struct, frozen=True):
    """What 1.x built once its first epoch asked for the loader."""

    batches_per_epoch: Count
    batch: Count | None = None
    imgsz: list[Count] = msgspec.field(default_factory=list)
    device: Text = "cpu"
    num_images: Count | None = None
    num_workers: Count | None = None
    accumulate: Count = 1
    amp: bool = False
    model: Text | None = None
    family: Text | None = None
    data: Text | None = None
    epochs: Count | None = None
    intra_op_threads: Count | None = None
    device_name: Text | None = None
    device_memory_bytes: Count | None = None
    num_cpus: Count | None = None

    @property
    def device_type(self) -> str:
        return self.device.split(":")[0]


class ProbeSample(msgspec.Struct, frozen=True):
    """One measured iteration as the probe timed it."""

    index: Count
    iteration: Count
    synced: bool
    wall_ms: Ms
    dataload_ms: Ms | None = None
    phase_ms: dict[Text, Ms] = msgspec.field(default_factory=dict)
    images: Count | None = None


class ProbeResult(msgspec.Struct, frozen=True):
    """`probe.json`: the window's samples and what the probe saw around them."""

    protocol: int
    samples: Annotated[list[ProbeSample], msgspec.Meta(max_length=MAX_SAMPLES)]
    bare_ms: Annotated[list[Ms], msgspec.Meta(max_length=MAX_SAMPLES)]
    amp_skipped_steps: list[Count] = msgspec.field(default_factory=list)
    epoch_starts: list[Count] = msgspec.field(default_factory=list)
    memory_before: dict[Text, int] = msgspec.field(default_factory=dict)
    memory_after: dict[Text, int] = msgspec.field(default_factory=dict)
    trace: Text | None = None
    trace_error: Text | None = None


T = TypeVar("T")


def checked(kind: type[T], value: Any, what: str) -> T:
    """`value` (decoded JSON) as a `kind`, or TrainerFailedError naming what is wrong."""
    try:
        return msgspec.convert(value, type=kind)
    except msgspec.ValidationError as err:
        raise TrainerFailedError(f"the trainer probe's {what} is malformed: {err}") from err
