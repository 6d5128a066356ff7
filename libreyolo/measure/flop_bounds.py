"""What a FLOP count read from the machine's cache may be, for this model at this input size.

Role: a cache entry is an optimisation, never an answer, so a count from it must be one the
model could make. Every weight of a convolution or linear layer is used once per output position
(2 FLOPs per multiply-add); a detector's layers work at strides between 1 and 64, so at `imgsz`
each weight is used between (imgsz/64)² and imgsz² times an image, and the forward per image lies
between 2·W·(imgsz/64)² and 2·W·imgsz² (W the number of such weights). Measured for the built-in
families (torch's counter): YOLOv9-t/c and YOLOX-n/s use each weight 3.4-5.1 × (imgsz/32)² times,
13× or more above the low bound. The backward of convolutions is the input's gradient plus the
weights' (1.86-2.00× the forward measured); a first layer has no input gradient, so a training
count's backward lies within 1-3× its forward. Outside, the count is made again (a model these
bounds do not fit, such as a classifier pooling early, pays that count and nothing else).
Bounds this wide catch an edited or foreign entry off by more than an order of magnitude low,
not one off by 2×.

Must not: run the model or read the cache.
"""

from __future__ import annotations

from torch import nn

from libreyolo.measure.flop_count import FlopCount

_WEIGHTED = (nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.ConvTranspose2d, nn.Linear)
STRIDES = (1, 64)  # the finest and the coarsest stride a detector's layer works at
BACKWARD_RATIO = (1.0, 3.0)  # a training count's backward over its forward


def implausible(model: nn.Module, count: FlopCount) -> str | None:
    """Why `count` cannot be `model`'s at its input size (None when it can): the forward per
    image outside what its weights can make, or a backward out of proportion to it."""
    weights = sum(m.weight.numel() for m in model.modules() if isinstance(m, _WEIGHTED))
    if weights == 0:
        return None  # nothing to bound it by: a family of another kind
    fine, coarse = STRIDES
    low = 2 * weights * max(1.0, count.imgsz / coarse) ** 2
    high = 2 * weights * (count.imgsz / fine) ** 2
    forward = count.forward / count.batch
    if not low <= forward <= high:
        return (
            f"{forward / 1e9:.3g} GFLOP an image forward, outside the {low / 1e9:.3g}-"
            f"{high / 1e9:.3g} its {weights:,} weights can make at {count.imgsz} px"
        )
    if count.backward is None:
        return None
    ratio = count.backward / count.forward
    least, most = BACKWARD_RATIO
    if not least <= ratio <= most:
        return f"a backward {ratio:.3g}x the forward, outside {least:g}-{most:g}x"
    return None
