"""One inference call of the predict path, split into the phases the profiler times.

Role: hold the (eval-mode) model, the family's `InferStages` (its preprocess and postprocess;
YOLOv9's when none are given), the images of the source, the input side, the NMS settings
and the autocast choice, and run one call as `preprocess` (letterbox and host-to-device copy,
plus decoding with `include_decode`), `forward` and `postprocess` (decode, NMS, detections
copied to host memory), each inside `phases(name)`.

Must not: time, sync or profile anything itself (the caller's `phases` hook does that), load or
fuse the model, or print.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

import torch
from PIL import Image
from torch import nn

from libreyolo.document.phases import FORWARD, INFER_STAGES, POSTPROCESS, PREPROCESS
from libreyolo.workload.family import DetectionsLike, InferStages
from libreyolo.workload.hooks import PhaseHook, no_phases
from libreyolo.workload.images import decode_image

PHASES = INFER_STAGES


class InferStep:
    """A model and its inputs; `step(iteration)` runs one batch through the predict path.

    Iteration `i` takes the `batch` images after the first `i * batch`, wrapping around the
    source. `images` are the decoded `paths`, in order; with `include_decode` each call decodes
    its files again inside `preprocess` (and `images` only fix the count). `half` autocasts the
    forward to `amp_dtype`, on CUDA only (on CPU the forward runs in float32, see
    `amp_effective`).
    """

    def __init__(
        self,
        model: nn.Module,
        images: Sequence[Image.Image],
        paths: Sequence[Path],
        *,
        imgsz: int,
        batch: int = 1,
        device: torch.device | str = "cpu",
        conf: float = 0.25,
        iou: float = 0.45,
        max_det: int = 300,
        half: bool = False,
        amp_dtype: torch.dtype = torch.float16,
        include_decode: bool = False,
        stages: InferStages | None = None,
    ) -> None:
        self.model = model
        self.stages = stages or _yolo9_stages()
        self.images, self.paths = list(images), list(paths)
        self.imgsz, self.batch = imgsz, batch
        self.device = torch.device(device)
        self.conf, self.iou, self.max_det = conf, iou, max_det
        self.amp_effective = half and self.device.type == "cuda"
        self.amp_dtype = amp_dtype
        self.include_decode = include_decode

    def step(self, iteration: int, phases: PhaseHook = no_phases) -> None:
        """One call in the phases `preprocess`, `forward`, `postprocess`."""
        first = iteration * self.batch
        picks = [(first + j) % len(self.images) for j in range(self.batch)]
        with phases(PREPROCESS):
            batch = (
                [decode_image(self.paths[k]) for k in picks]
                if self.include_decode
                else [self.images[k] for k in picks]
            )
            x, boxes = self.stages.preprocess(batch, imgsz=self.imgsz, device=self.device)
        with phases(FORWARD), self._autocast():
            pred = self.model(x)
        with phases(POSTPROCESS):
            detections = self.stages.postprocess(
                pred, boxes, conf=self.conf, iou=self.iou, max_det=self.max_det
            )
            # The call ends with the detections in host memory, as a caller would use them.
            for found in detections:
                found.boxes.cpu(), found.scores.cpu(), found.classes.cpu()

    def detect(self, iteration: int) -> tuple[object, Sequence[DetectionsLike]]:
        """Iteration `iteration`'s batch through the predict path, untimed: the forward's raw
        outputs and the detections on the host (what `measure/agreement.py` compares)."""
        first = iteration * self.batch
        picks = [(first + j) % len(self.images) for j in range(self.batch)]
        x, boxes = self.stages.preprocess(
            [self.images[k] for k in picks], imgsz=self.imgsz, device=self.device
        )
        with self._autocast():
            pred = self.model(x)
        detections = self.stages.postprocess(
            pred, boxes, conf=self.conf, iou=self.iou, max_det=self.max_det
        )
        return pred, detections

    def _autocast(self) -> AbstractContextManager[object]:
        if self.amp_effective:
            return torch.autocast("cuda", dtype=self.amp_dtype)
        return nullcontext()


def _yolo9_stages() -> InferStages:
    # Looked up per step object (not at import), so a test can replace predict's functions.
    from libreyolo.workload.yolo9 import predict

    return InferStages(predict.preprocess, predict.postprocess)
