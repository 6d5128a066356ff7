"""The YOLOv9 detector (sizes t/s/m/c): backbone, neck, optional PGI aux branch, head and decoding.

Forward contract of `YOLOv9`:
* eval: `model(x)` with x (B, 3, H, W) in [0, 1], H and W multiples of 32 -> (B, 4 + nc, A): rows
  x1, y1, x2, y2 in input pixels, then nc sigmoid scores; A = sum of (H/s)(W/s) over s = 8, 16, 32,
  anchors ordered stride by stride, row-major (y, then x) within a stride.
  `model.forward_features(x)` -> dict `predictions`, `raw_outputs` (three (B, 4*reg_max + nc, H/s,
  W/s) maps), `x8`, `x16`, `x32` (the neck outputs fed to the head).
* train: `model(x)` -> `TrainOutput(main, aux)`: the three raw maps of the main head, and those of
  the aux head when the model was built with `aux=True` (else None). Raw map channels: 4 sides
  (left, top, right, bottom) x reg_max DFL logits, side-major, then nc class logits.

Helpers for a loss (all pure tensor functions of the raw maps):
* `model.anchor_points(maps)` -> (anchor_points (A, 2) x/y cell centres in grid units (k + 0.5),
  stride_tensor (A, 1) the stride of each anchor); cached per feature-map sizes, device and dtype.
* `model.flatten_maps(maps)` -> (box logits (B, A, 4, reg_max), class logits (B, A, nc)).
* `dfl_distances(box_logits)` -> (B, A, 4) expected distances in grid units (softmax over bins).
* `distances_to_xyxy(dist, anchor_points)` -> (B, A, 4) xyxy in grid units (multiply by the stride
  tensor for pixels).

`model.reset_classes(nc, names)` swaps in fresh last class layers for fine-tuning on another class
count (the towers keep their width, as libreyolo's fine-tunes do).

`model.fuse()` returns a fused deep copy (eval mode, BN folded, RepConvN re-parameterised); the
original is left untouched. This module builds and runs the network; it must not touch files.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Literal, NamedTuple, TypedDict

import torch
from torch import Tensor, nn

from libreyolo.errors import UsageError
from libreyolo.workload.yolo9.blocks import (
    DFL,
    ELAN,
    SPPELAN,
    AConv,
    ADown,
    Conv,
    RepNCSPELAN,
    fuse_model,
)

STRIDES = (8, 16, 32)
FuseMode = Literal["full", "bn"]
FUSE_MODES: tuple[FuseMode, ...] = ("full", "bn")
REG_MAX = 16


@dataclass(frozen=True)
class Yolo9SizeSpec:
    """Widths of one size (libreyolo 1.6.0's size table: stem, first block, B3..B5, depth).

    The neck mirrors the backbone: N4 and P4 are B4 wide, P3 is B3's part width, P5 is B5 wide;
    every RepNCSPELAN other than the first block and B3 has part = out.
    """

    stem: tuple[int, int]
    first: tuple[int, int]  # (part, out) of the stride-4 block
    b3: tuple[int, int]  # (part, out); the down-sampler before it outputs `part`
    b4: int
    b5: int
    depth: int  # bottlenecks per RepNCSP
    down: tuple[int, int]  # neck down-sampler outputs
    elan_first: bool = False  # ELAN (t/s) instead of RepNCSPELAN as the first block
    adown: bool = False  # ADown (c) instead of AConv down-samplers


SIZES: dict[str, Yolo9SizeSpec] = {
    "t": Yolo9SizeSpec((16, 32), (32, 32), (64, 64), 96, 128, 3, (48, 64), elan_first=True),
    "s": Yolo9SizeSpec((32, 64), (64, 64), (128, 128), 192, 256, 3, (96, 128), elan_first=True),
    "m": Yolo9SizeSpec((32, 64), (128, 128), (240, 240), 360, 480, 1, (184, 240)),
    "c": Yolo9SizeSpec((64, 128), (128, 256), (256, 512), 512, 512, 1, (256, 512), adown=True),
}


class TrainOutput(NamedTuple):
    """Train-mode forward result: raw maps of the main head and of the aux head (None if no aux)."""

    main: list[Tensor]
    aux: list[Tensor] | None


class Features(TypedDict):
    """Eval forward with intermediates: what the libreyolo fixture's npz holds."""

    predictions: Tensor
    raw_outputs: list[Tensor]
    x8: Tensor
    x16: Tensor
    x32: Tensor


def default_names(nc: int) -> dict[int, str]:
    """Placeholder class names for a model built without a dataset or checkpoint."""
    return {i: f"class{i}" for i in range(nc)}


def default_cls_width(ch0: int, nc: int) -> int:
    """libreyolo's class-tower width rule; it reproduces the released weights' shapes."""
    return max(ch0, min(nc, 100))


class Backbone(nn.Module):
    """Stem, four stages and SPPELAN; returns B3, B4, pre-SPP B5 and the SPP output."""

    def __init__(self, spec: Yolo9SizeSpec) -> None:
        super().__init__()
        down = ADown if spec.adown else AConv
        (c0, c1), (part1, out1), (part3, out3) = spec.stem, spec.first, spec.b3
        self.conv0 = Conv(3, c0, 3, 2)
        self.conv1 = Conv(c0, c1, 3, 2)
        first: nn.Module
        if spec.elan_first:
            first = ELAN(c1, part1, out1)
        else:
            first = RepNCSPELAN(c1, part1, out1, spec.depth)
        self.elan1 = first
        self.down2 = down(out1, part3)
        self.elan2 = RepNCSPELAN(part3, part3, out3, spec.depth)
        self.down3 = down(out3, spec.b4)
        self.elan3 = RepNCSPELAN(spec.b4, spec.b4, spec.b4, spec.depth)
        self.down4 = down(spec.b4, spec.b5)
        self.elan4 = RepNCSPELAN(spec.b5, spec.b5, spec.b5, spec.depth)
        self.spp = SPPELAN(spec.b5, spec.b5)

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        b3 = self.elan2(self.down2(self.elan1(self.conv1(self.conv0(x)))))
        b4 = self.elan3(self.down3(b3))
        b5 = self.elan4(self.down4(b4))
        return b3, b4, b5, self.spp(b5)


class Neck(nn.Module):
    """Top-down then bottom-up path over (B3, B4, P5); returns the stride 8/16/32 head inputs."""

    def __init__(self, spec: Yolo9SizeSpec) -> None:
        super().__init__()
        down = ADown if spec.adown else AConv
        (p3, b3), b4, b5, n = spec.b3, spec.b4, spec.b5, spec.depth
        self.up1 = nn.Upsample(scale_factor=2, mode="nearest")
        self.elan_up1 = RepNCSPELAN(b5 + b4, b4, b4, n)
        self.up2 = nn.Upsample(scale_factor=2, mode="nearest")
        self.elan_up2 = RepNCSPELAN(b4 + b3, p3, p3, n)
        self.down1 = down(p3, spec.down[0])
        self.elan_down1 = RepNCSPELAN(spec.down[0] + b4, b4, b4, n)
        self.down2 = down(b4, spec.down[1])
        self.elan_down2 = RepNCSPELAN(spec.down[1] + b5, b5, b5, n)

    def forward(self, b3: Tensor, b4: Tensor, p5: Tensor) -> list[Tensor]:
        n4 = self.elan_up1(torch.cat((self.up1(p5), b4), 1))
        p3 = self.elan_up2(torch.cat((self.up2(n4), b3), 1))
        p4 = self.elan_down1(torch.cat((self.down1(p3), n4), 1))
        out5 = self.elan_down2(torch.cat((self.down2(p4), p5), 1))
        return [p3, p4, out5]


class AuxNeck(nn.Module):
    """PGI auxiliary branch (training only): SPPELAN on pre-SPP B5, then two top-down stages."""

    def __init__(self, spec: Yolo9SizeSpec) -> None:
        super().__init__()
        (p3, b3), b4, b5, n = spec.b3, spec.b4, spec.b5, spec.depth
        self.spp = SPPELAN(b5, b5)
        self.up1 = nn.Upsample(scale_factor=2, mode="nearest")
        self.elan_a4 = RepNCSPELAN(b5 + b4, b4, b4, n)
        self.up2 = nn.Upsample(scale_factor=2, mode="nearest")
        self.elan_a3 = RepNCSPELAN(b4 + b3, p3, p3, n)

    def forward(self, b3: Tensor, b4: Tensor, b5: Tensor) -> list[Tensor]:
        a5 = self.spp(b5)
        a4 = self.elan_a4(torch.cat((self.up1(a5), b4), 1))
        a3 = self.elan_a3(torch.cat((self.up2(a4), b3), 1))
        return [a3, a4, a5]


class DDetect(nn.Module):
    """Decoupled head: per stride a box tower (4*reg_max DFL logits) and a class tower (nc)."""

    def __init__(self, nc: int, ch: Sequence[int], cls_width: int | None = None) -> None:
        super().__init__()
        self.nc = nc
        quarter = ch[0] // 4
        box_width = max(-(-quarter // 4) * 4, 4 * REG_MAX, REG_MAX)  # 64 for every size
        self.cls_width = cls_width or default_cls_width(ch[0], nc)
        cw = self.cls_width
        self.cv2 = nn.ModuleList(
            nn.Sequential(
                Conv(c, box_width, 3),
                Conv(box_width, box_width, 3, groups=4),
                nn.Conv2d(box_width, 4 * REG_MAX, 1, groups=4),
            )
            for c in ch
        )
        self.cv3 = nn.ModuleList(
            nn.Sequential(Conv(c, cw, 3), Conv(cw, cw, 3), nn.Conv2d(cw, nc, 1)) for c in ch
        )
        self.register_buffer("stride", torch.tensor(STRIDES, dtype=torch.float32), persistent=False)
        self.dfl = DFL(REG_MAX)
        self.reset_biases()

    def reset_biases(self) -> None:
        """Box biases 1.0; class biases -10 so a fresh model scores ~4.5e-5 everywhere."""
        with torch.no_grad():
            for towers, value in ((self.cv2, 1.0), (self.cv3, -10.0)):
                for tower in towers:
                    last = tower.get_submodule("2")
                    assert isinstance(last, nn.Conv2d) and last.bias is not None
                    last.bias.fill_(value)

    def forward(self, feats: Sequence[Tensor]) -> list[Tensor]:
        return [
            torch.cat((box(x), cls(x)), 1)
            for x, box, cls in zip(feats, self.cv2, self.cv3, strict=True)
        ]


def make_anchors(
    maps: Sequence[Tensor], strides: Sequence[int] = STRIDES, offset: float = 0.5
) -> tuple[Tensor, Tensor]:
    """Cell-centre anchor points (A, 2) in grid units and the per-anchor stride (A, 1)."""
    points, stride_rows = [], []
    ref = maps[0]
    for feat, stride in zip(maps, strides, strict=True):
        h, w = feat.shape[-2:]
        sx = torch.arange(w, device=ref.device, dtype=ref.dtype) + offset
        sy = torch.arange(h, device=ref.device, dtype=ref.dtype) + offset
        yy, xx = torch.meshgrid(sy, sx, indexing="ij")
        points.append(torch.stack((xx, yy), -1).view(-1, 2))
        stride_rows.append(torch.full((h * w, 1), stride, device=ref.device, dtype=ref.dtype))
    return torch.cat(points), torch.cat(stride_rows)


def dfl_distances(box_logits: Tensor) -> Tensor:
    """(B, A, 4, reg_max) DFL logits -> (B, A, 4) expected distances in grid units."""
    bins = torch.arange(box_logits.shape[-1], device=box_logits.device, dtype=box_logits.dtype)
    return box_logits.softmax(-1) @ bins


def distances_to_xyxy(dist: Tensor, anchor_points: Tensor) -> Tensor:
    """(…, A, 4) left/top/right/bottom distances + (A, 2) anchors -> (…, A, 4) xyxy, same units."""
    lt, rb = dist.chunk(2, -1)
    return torch.cat((anchor_points - lt, anchor_points + rb), -1)


class YOLOv9(nn.Module):
    """YOLOv9 detector of size t/s/m/c with nc classes; the module docstring gives the contract."""

    family = "yolo9"
    strides = STRIDES
    reg_max = REG_MAX

    def __init__(
        self,
        size: str = "t",
        nc: int = 80,
        *,
        names: dict[int, str] | None = None,
        aux: bool = False,
        cls_width: int | None = None,
    ) -> None:
        super().__init__()
        if size not in SIZES:
            raise UsageError(f"unknown YOLOv9 size {size!r}; expected one of {', '.join(SIZES)}")
        if nc < 1:
            raise UsageError(f"nc must be at least 1, got {nc}")
        spec = SIZES[size]
        self.size, self.nc = size, nc
        self.names = dict(names) if names is not None else default_names(nc)
        self.imgsz = 640
        self.letterbox_pad = "topleft"  # libreyolo's default when a checkpoint says nothing
        self.is_fused = False
        self.random_init = False  # set by load_model when no weights could be had
        self.backbone = Backbone(spec)
        self.neck = Neck(spec)
        ch = (spec.b3[0], spec.b4, spec.b5)
        self.head = DDetect(nc, ch, cls_width)
        self.aux: AuxNeck | None = AuxNeck(spec) if aux else None
        self.aux_head = DDetect(nc, ch, self.head.cls_width) if aux else None
        self._anchor_cache: dict[tuple[object, ...], tuple[Tensor, Tensor]] = {}

    @property
    def cls_width(self) -> int:
        """Hidden width of the class towers (from the checkpoint when loaded)."""
        return self.head.cls_width

    def forward(self, x: Tensor) -> Tensor | TrainOutput:
        if self.training:
            b3, b4, b5, p5 = self.backbone(x)
            main = self.head(self.neck(b3, b4, p5))
            aux = None
            if self.aux is not None and self.aux_head is not None:
                aux = self.aux_head(self.aux(b3, b4, b5))
            return TrainOutput(main, aux)
        return self.decode(self.head(self._neck_features(x)))

    def forward_features(self, x: Tensor) -> Features:
        """Eval-style forward returning predictions, raw maps and neck features (the fixture)."""
        feats = self._neck_features(x)
        maps = self.head(feats)
        return {
            "predictions": self.decode(maps),
            "raw_outputs": maps,
            "x8": feats[0],
            "x16": feats[1],
            "x32": feats[2],
        }

    def _neck_features(self, x: Tensor) -> list[Tensor]:
        b3, b4, _, p5 = self.backbone(x)
        return self.neck(b3, b4, p5)

    def anchor_points(self, maps: Sequence[Tensor]) -> tuple[Tensor, Tensor]:
        """(anchor_points (A, 2) in grid units, stride_tensor (A, 1)), cached per map sizes."""
        key = (tuple(m.shape[-2:] for m in maps), maps[0].device, maps[0].dtype)
        if key not in self._anchor_cache:
            if len(self._anchor_cache) > 8:  # input sizes rarely vary; keep the cache small
                self._anchor_cache.clear()
            self._anchor_cache[key] = make_anchors(maps, self.strides)
        return self._anchor_cache[key]

    def flatten_maps(self, maps: Sequence[Tensor]) -> tuple[Tensor, Tensor]:
        """Raw maps -> box logits (B, A, 4, reg_max) and class logits (B, A, nc)."""
        b = maps[0].shape[0]
        flat = torch.cat([m.flatten(2) for m in maps], 2).transpose(1, 2)
        box, cls = torch.split(flat, [4 * self.reg_max, self.nc], -1)
        return box.reshape(b, -1, 4, self.reg_max), cls

    def decode(self, maps: Sequence[Tensor]) -> Tensor:
        """Raw maps -> (B, 4 + nc, A) float32: xyxy in input pixels, then sigmoid scores.

        Decoded in float32 even inside an autocast forward: bf16 holds 8 significant bits, so
        a 640-px coordinate would land on a 4-px grid (fp16: 0.5 px) before NMS sees it.
        """
        with _autocast_off(maps[0].device):
            maps = [m.float() for m in maps]  # no copy when already float32
            points, stride = self.anchor_points(maps)
            flat = torch.cat([m.flatten(2) for m in maps], 2)  # (B, C, A): channel-first
            box, cls = torch.split(flat, [4 * self.reg_max, self.nc], 1)
            lt, rb = self.head.dfl(box).chunk(2, 1)
            centres = points.T
            xyxy = torch.cat((centres - lt, centres + rb), 1) * stride.T
            return torch.cat((xyxy, cls.sigmoid()), 1)

    def set_aux(self, enabled: bool) -> None:
        """Attach the PGI branch (aux neck and head, freshly initialised, as 1.6.0's
        `enable_aux` does before a new training run; one already there is kept) or drop it
        (1.6.0's `aux_weight=0`: the main head only)."""
        if not enabled:
            self.aux = self.aux_head = None
            return
        if self.aux is not None and self.aux_head is not None:
            return
        spec = SIZES[self.size]
        ch = (spec.b3[0], spec.b4, spec.b5)
        like = next(self.head.parameters())
        self.aux = AuxNeck(spec).to(like.device, like.dtype)
        self.aux_head = DDetect(self.nc, ch, self.head.cls_width).to(like.device, like.dtype)

    def reset_classes(self, nc: int, names: dict[int, str] | None = None) -> None:
        """Fine-tuning to nc classes: fresh last class layers, towers keep their width."""
        heads = [h for h in (self.head, self.aux_head) if h is not None]
        for head in heads:
            for tower in head.cv3:
                old = tower.get_submodule("2")
                assert isinstance(old, nn.Conv2d)
                new = nn.Conv2d(old.in_channels, nc, 1).to(old.weight.device, old.weight.dtype)
                with torch.no_grad():
                    new.bias.fill_(-10.0)  # type: ignore[union-attr]
                tower.add_module("2", new)  # same name: replaces the old layer in place
            head.nc = nc
        self.nc = nc
        self.names = dict(names) if names is not None else default_names(nc)

    def fuse(self, mode: FuseMode = "full", *, in_place: bool = False) -> YOLOv9:
        """A fused deep copy in eval mode, for inference only (`in_place`: this model itself,
        when nothing needs the unfused one: a copy costs ~65 ms for yolo9t on a CPU).

        `full`: conv+BN folded, RepConvN merged, weights channels-last (with them PyTorch runs
        every convolution in NHWC, which oneDNN and cuDNN are fastest at). `bn`: only the
        BatchNorms folded, nothing else changed, so the gain is exactly the norm ops removed.
        """
        if mode not in FUSE_MODES:
            raise UsageError(f"fuse must be one of {', '.join(FUSE_MODES)}; got {mode!r}")
        fused = (self if in_place else copy.deepcopy(self)).eval()
        fuse_model(fused, reparameterise=mode == "full")
        if mode == "full":
            fused = fused.to(memory_format=torch.channels_last)
        fused.is_fused = True
        fused.requires_grad_(False)
        return fused


def _autocast_off(device: torch.device) -> AbstractContextManager[object]:
    """Autocast turned off for a float32 region. The meta device (the FLOP count's copy, shapes
    and no storage) has no autocast state to turn off: torch refuses the device type."""
    if device.type == "meta":
        return contextlib.nullcontext()
    return torch.autocast(device.type, enabled=False)
