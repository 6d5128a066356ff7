"""The phase names a profile uses: the one definition every layer imports.

A phase is a named part of a training step or an inference call. The collector opens a
`step/<phase>` range for each (so the trace analyser finds them by name), the samples key their
per-phase wall times by them (`phase_ms`, `stage_ms`) and the readers look them up. Spelling one
here keeps the four in agreement. Inference's phases are also called stages.

Must not: import anything (it sits below every layer, readers included) or hold analysis.
"""

from __future__ import annotations

from typing import Final

DATALOAD: Final = "dataload"  # training: waiting for the next batch from the DataLoader
TO_DEVICE: Final = "to_device"  # training: copying the batch to the device
FORWARD: Final = "forward"
BACKWARD: Final = "backward"
OPTIMIZER: Final = "optimizer"  # training: optimiser step and zero_grad
PREPROCESS: Final = "preprocess"  # inference: decode, letterbox, to tensor
POSTPROCESS: Final = "postprocess"  # inference: box decode and NMS
LOSS: Final = "loss"  # a `step/loss` range other training loops open; ours times it in forward
UNPHASED: Final = "unphased"  # device time no phase range covers

# The phases of a training step inside the model's step function, in order; the collector adds
# DATALOAD before them.
STEP_PHASES: Final = (TO_DEVICE, FORWARD, BACKWARD, OPTIMIZER)
TRAIN_PHASES: Final = (DATALOAD, *STEP_PHASES)
# The stages of one inference call, in order (the 1.6.0 split).
INFER_STAGES: Final = (PREPROCESS, FORWARD, POSTPROCESS)
# Phases only a training step has: a trace with any of them is a training trace.
TRAINING_ONLY: Final = frozenset({DATALOAD, TO_DEVICE, BACKWARD, OPTIMIZER})
