"""Training augmentations (YOLOv9 defaults) and the letterbox, on PIL images with pixel xyxy boxes.

Role: mosaic of 4 images into a 2S x 2S canvas, a random scale + translate affine of that canvas
into the S x S output (with rotation and shear when `degrees` / `shear` are set, as YOLOX trains),
an optional MixUp with a jittered partner (YOLOX), HSV jitter, horizontal flip and the letterbox
(pad value 114, pad at the top left or centred). Boxes always move with the image, are clipped to
it, and tiny ones are dropped. Randomness comes only from the `random.Random` passed in, so a
seeded caller is reproducible.

Must not: read files, pick mosaic partners (the dataset does, it knows which images have labels),
or normalise pixels (the loader's collate does).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, NamedTuple

import torch
from PIL import Image

from libreyolo.errors import UsageError
from libreyolo.workload.letterbox import PAD_VALUE, Letterbox, PadMode

if TYPE_CHECKING:
    from libreyolo.workload.train_keys import TrainKeys

__all__ = [
    "AugmentConfig",
    "Tile",
    "augment_tiles",
    "hflip",
    "hsv_jitter",
    "letterbox",
    "mixup",
    "mosaic",
    "random_affine",
    "with_keys",
]

_FILL = (PAD_VALUE, PAD_VALUE, PAD_VALUE)
_AFFINE_MIN_PX = 2.0  # after the affine, boxes with w or h <= 2 px are dropped (1.6.0)
_FINAL_MIN_PX = 1.0  # and after everything, boxes with w or h <= 1 px

_Affine = tuple[float, float, float, float, float, float]  # x' = a x + b y + c, y' = d x + e y + f


class Tile(NamedTuple):
    """An image with its boxes: float32 (n, 4) pixel xyxy, and int64 (n,) classes."""

    image: Image.Image
    boxes: torch.Tensor
    classes: torch.Tensor


@dataclass(frozen=True, slots=True)
class AugmentConfig:
    """Which augmentations run and how strongly. Defaults are YOLOv9's training defaults."""

    mosaic: bool = True
    mosaic_prob: float = 1.0
    scale: float = 0.5  # affine scale factor drawn from U(1 - scale, 1 + scale)
    translate: float = 0.1  # affine shift drawn from U(-translate, translate) x output size
    hsv: bool = True
    hsv_prob: float = 1.0
    hsv_h: float = 5.0  # additive hue range in OpenCV units (hue 0..179)
    hsv_s: float = 30.0  # additive saturation range (0..255)
    hsv_v: float = 30.0  # additive value range (0..255)
    flip: bool = True
    flip_prob: float = 0.5  # horizontal flip only; YOLOv9 never flips vertically
    pad: PadMode = "topleft"
    # YOLOX's extras; the defaults leave YOLOv9's pipeline (and its random draws) unchanged.
    degrees: float = 0.0  # affine rotation drawn from U(-degrees, degrees), about the origin
    shear: float = 0.0  # x and y shear angles drawn from U(-shear, shear) degrees
    scale_range: tuple[float, float] | None = None  # U(lo, hi) instead of U(1 -+ scale)
    affine_min_px: float = _AFFINE_MIN_PX  # boxes with w or h <= this are dropped after it
    mixup: bool = False  # YOLOX's dataset blends a partner into each mosaic output (`mixup`)
    mixup_prob: float = 1.0
    mixup_scale: tuple[float, float] = (0.5, 1.5)  # the partner's size jitter, U(lo, hi)

    def __post_init__(self) -> None:
        for name in ("mosaic_prob", "hsv_prob", "flip_prob", "mixup_prob"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise UsageError(f"augment {name} must be within [0, 1], got {value}")
        if not 0.0 <= self.scale < 1.0 or not 0.0 <= self.translate <= 0.5:
            raise UsageError("augment scale must be in [0, 1) and translate in [0, 0.5]")
        for name in ("scale_range", "mixup_scale"):
            bounds = getattr(self, name)
            if bounds is not None and not 0.0 < bounds[0] <= bounds[1]:
                raise UsageError(f"augment {name} must be (lo, hi) with 0 < lo <= hi, got {bounds}")
        if self.degrees < 0 or self.shear < 0 or self.affine_min_px < 0:
            raise UsageError("augment degrees, shear and affine_min_px must not be negative")
        if self.pad not in ("topleft", "center"):
            raise UsageError(f"letterbox pad must be 'topleft' or 'center', got {self.pad!r}")

    @classmethod
    def none(cls, *, pad: PadMode = "topleft") -> AugmentConfig:
        """A deterministic pipeline: letterbox only (validation and inference-like input)."""
        return cls(mosaic=False, hsv=False, flip=False, pad=pad)

    def without_mosaic(self) -> AugmentConfig:
        """The same pipeline with mosaic (and so MixUp) closed (the last epochs of a real run)."""
        return replace(self, mosaic=False)

    @property
    def deterministic(self) -> bool:
        """True when no random augmentation can run."""
        return not (
            (self.mosaic and self.mosaic_prob > 0)
            or (self.hsv and self.hsv_prob > 0)
            or (self.flip and self.flip_prob > 0)
        )


def with_keys(base: AugmentConfig, keys: TrainKeys) -> AugmentConfig:
    """`base` (a family's pipeline) with 1.6.0's augmentation keys: the rates, the affine's
    ranges, the mosaic and MixUp scales; mosaic (and so MixUp) closed in the no-augmentation
    phase. A switch stays on at rate 0, so the draws are 1.6.0's (it draws, then skips)."""
    return replace(
        base,
        mosaic=base.mosaic and not keys.no_aug_phase,
        mosaic_prob=keys.mosaic_prob,
        mixup_prob=keys.mixup_prob,
        hsv_prob=keys.hsv_prob,
        flip_prob=keys.flip_prob,
        degrees=keys.degrees,
        translate=keys.translate,
        shear=keys.shear,
        scale_range=keys.mosaic_scale,
        mixup_scale=keys.mixup_scale,
    )


def augment_tiles(tiles: list[Tile], size: int, cfg: AugmentConfig, rng: random.Random) -> Tile:
    """Run the pipeline on 1 tile (no mosaic) or 4 (mosaic + affine); the output is size x size.

    `cfg.mixup` is not applied here: it needs a partner image, which its caller (the YOLOX
    dataset) picks and blends in with `mixup` between the affine and the rest.
    """
    if len(tiles) == 4:
        out = random_affine(mosaic(tiles, size, rng), size, cfg, rng)
    elif len(tiles) == 1:
        out = tiles[0]
    else:
        raise ValueError(f"augment_tiles takes 1 or 4 tiles, got {len(tiles)}")
    image, boxes = out.image, out.boxes
    if cfg.hsv and cfg.hsv_prob > 0 and rng.random() < cfg.hsv_prob:
        image = hsv_jitter(image, rng, cfg)
    if cfg.flip and cfg.flip_prob > 0 and rng.random() < cfg.flip_prob:
        image, boxes = hflip(image, boxes)
    # Flip before the letterbox, so the padding stays where the pad mode puts it.
    image, info = letterbox(image, size, pad=cfg.pad)
    boxes = _clip(info.to_input(boxes), size, size)
    keep = _big_enough(boxes, _FINAL_MIN_PX)
    return Tile(image, boxes[keep], out.classes[keep])


def letterbox(
    image: Image.Image, size: int, *, pad: PadMode = "topleft"
) -> tuple[Image.Image, Letterbox]:
    """Resize (bilinear) so the image fits size x size, keep the aspect, pad the rest with 114."""
    box = Letterbox.fit(image.width, image.height, size, pad)
    if (box.new_w, box.new_h) != image.size:
        image = image.resize((box.new_w, box.new_h), Image.Resampling.BILINEAR)
    if image.size == (size, size):
        return image, box
    canvas = Image.new("RGB", (size, size), _FILL)
    canvas.paste(image, (box.pad_x, box.pad_y))
    return canvas, box


def mosaic(tiles: list[Tile], size: int, rng: random.Random) -> Tile:
    """Paste 4 tiles around a random centre in [S/2, 3S/2]^2 of a 2S x 2S canvas filled with 114."""
    side = 2 * size
    xc, yc = (round(rng.uniform(size / 2, side - size / 2)) for _ in range(2))
    canvas = Image.new("RGB", (side, side), _FILL)
    all_boxes, all_classes = [], []
    for i, tile in enumerate(tiles):
        w, h = tile.image.size
        # Canvas region (a) and the matching crop of the tile (b); tile i sits in quadrant i.
        left, top = i in (0, 2), i in (0, 1)
        x1a, x2a = (max(xc - w, 0), xc) if left else (xc, min(xc + w, side))
        y1a, y2a = (max(yc - h, 0), yc) if top else (yc, min(yc + h, side))
        x1b = w - (x2a - x1a) if left else 0
        y1b = h - (y2a - y1a) if top else 0
        crop = tile.image.crop((x1b, y1b, x1b + x2a - x1a, y1b + y2a - y1a))
        canvas.paste(crop, (x1a, y1a))
        shift = tile.boxes.new_tensor([x1a - x1b, y1a - y1b, x1a - x1b, y1a - y1b])
        all_boxes.append(tile.boxes + shift)
        all_classes.append(tile.classes)
    boxes = _clip(torch.cat(all_boxes), side, side)
    classes = torch.cat(all_classes)
    keep = _big_enough(boxes, 0.0)
    return Tile(canvas, boxes[keep], classes[keep])


def random_affine(tile: Tile, size: int, cfg: AugmentConfig, rng: random.Random) -> Tile:
    """Scale about the canvas origin and shift, straight into a size x size output (border 114).

    Rotation and shear are 0 in YOLOv9's defaults, so the warp is x' = s*x + t. With `degrees` or
    `shear` set it is 1.6.0's YOLOX warp (rotation + scale about the origin, then shear, then
    shift), and boxes become the axis-aligned hull of their 4 warped corners.
    """
    if cfg.degrees == 0 and cfg.shear == 0:
        s = _draw_scale(cfg, rng)
        tx = rng.uniform(-cfg.translate, cfg.translate) * size
        ty = rng.uniform(-cfg.translate, cfg.translate) * size
        # PIL wants the inverse map: source = (out - t) / s.
        coeffs: _Affine = (1 / s, 0.0, -tx / s, 0.0, 1 / s, -ty / s)
        boxes = tile.boxes * s + tile.boxes.new_tensor([tx, ty, tx, ty])
    else:
        matrix = _yolox_matrix(size, cfg, rng)
        a, b, c, d, e, f = matrix
        det = a * e - b * d
        coeffs = (
            e / det,
            -b / det,
            (b * f - c * e) / det,
            -d / det,
            a / det,
            (c * d - a * f) / det,
        )
        boxes = _warp_boxes(tile.boxes, matrix)
    image = tile.image.transform(
        (size, size), Image.Transform.AFFINE, coeffs, Image.Resampling.BILINEAR, fillcolor=_FILL
    )
    boxes = _clip(boxes, size, size)
    keep = _big_enough(boxes, cfg.affine_min_px)
    return Tile(image, boxes[keep], tile.classes[keep])


def _draw_scale(cfg: AugmentConfig, rng: random.Random) -> float:
    if cfg.scale_range is not None:
        return rng.uniform(*cfg.scale_range)
    return rng.uniform(1 - cfg.scale, 1 + cfg.scale)


def _yolox_matrix(size: int, cfg: AugmentConfig, rng: random.Random) -> _Affine:
    """1.6.0's `get_affine_matrix` (perspective 0), with its draw order: angle, scale, shears, t."""
    angle = math.radians(rng.uniform(-cfg.degrees, cfg.degrees))
    s = _draw_scale(cfg, rng)
    shear_x = math.tan(math.radians(rng.uniform(-cfg.shear, cfg.shear)))
    shear_y = math.tan(math.radians(rng.uniform(-cfg.shear, cfg.shear)))
    tx = rng.uniform(-cfg.translate, cfg.translate) * size
    ty = rng.uniform(-cfg.translate, cfg.translate) * size
    # cv2.getRotationMatrix2D(angle, centre (0, 0), s): rows (a, b) and (-b, a).
    ra, rb = s * math.cos(angle), s * math.sin(angle)
    return (ra - shear_y * rb, rb + shear_y * ra, tx, -rb + shear_x * ra, ra + shear_x * rb, ty)


def _warp_boxes(boxes: torch.Tensor, matrix: _Affine) -> torch.Tensor:
    """The axis-aligned hull of each box's 4 corners under the affine `matrix`."""
    a, b, c, d, e, f = matrix
    xs, ys = boxes[:, [0, 2, 0, 2]], boxes[:, [1, 3, 3, 1]]
    wx, wy = a * xs + b * ys + c, d * xs + e * ys + f
    return torch.stack((wx.amin(1), wy.amin(1), wx.amax(1), wy.amax(1)), dim=1)


def mixup(tile: Tile, partner: Tile, size: int, cfg: AugmentConfig, rng: random.Random) -> Tile:
    """1.6.0's YOLOX MixUp: blend 50/50 with a jittered, maybe flipped, randomly cropped partner.

    The partner is letterboxed top-left into a size x size canvas (114), resized by a factor from
    U(mixup_scale), mirrored with p = 1/2, placed top-left on black (0) when it grew, and cropped
    back to size x size at a random offset; its boxes follow and are clipped. All boxes are kept.
    """
    jitter = rng.uniform(*cfg.mixup_scale)
    flip = rng.uniform(0, 1) > 0.5
    fitted, box = letterbox(partner.image, size)
    side = int(size * jitter)
    canvas = fitted.resize((side, side), Image.Resampling.BILINEAR)
    ratio = box.scale * jitter
    boxes = partner.boxes * ratio
    boxes[:, 0::2] = boxes[:, 0::2].clamp(0, side)
    boxes[:, 1::2] = boxes[:, 1::2].clamp(0, side)
    if flip:
        canvas, boxes = hflip(canvas, boxes)
    y_off = rng.randint(0, side - size - 1) if side > size else 0  # y first, as 1.6.0 draws
    x_off = rng.randint(0, side - size - 1) if side > size else 0
    padded = Image.new("RGB", (max(side, size), max(side, size)), (0, 0, 0))
    padded.paste(canvas, (0, 0))
    crop = padded.crop((x_off, y_off, x_off + size, y_off + size))
    boxes = _clip(boxes - boxes.new_tensor([x_off, y_off, x_off, y_off]), size, size)
    image = Image.blend(tile.image, crop, 0.5)
    return Tile(image, torch.cat((tile.boxes, boxes)), torch.cat((tile.classes, partner.classes)))


def hsv_jitter(image: Image.Image, rng: random.Random, cfg: AugmentConfig) -> Image.Image:
    """Add random offsets to hue (wrapping), saturation and value; each is zeroed with p = 1/2."""
    gains = [rng.uniform(-g, g) * rng.randint(0, 1) for g in (cfg.hsv_h, cfg.hsv_s, cfg.hsv_v)]
    if not any(gains):
        return image
    dh = gains[0] * 256 / 180  # OpenCV hue spans 0..179, PIL's spans 0..255
    h, s, v = image.convert("HSV").split()
    h = h.point([round(x + dh) % 256 for x in range(256)])
    s = s.point([min(255, max(0, round(x + gains[1]))) for x in range(256)])
    v = v.point([min(255, max(0, round(x + gains[2]))) for x in range(256)])
    return Image.merge("HSV", (h, s, v)).convert("RGB")


def hflip(image: Image.Image, boxes: torch.Tensor) -> tuple[Image.Image, torch.Tensor]:
    """Mirror the image left-right; x1' = W - x2, x2' = W - x1."""
    width = image.size[0]
    flipped = boxes.clone()
    flipped[:, 0] = width - boxes[:, 2]
    flipped[:, 2] = width - boxes[:, 0]
    return image.transpose(Image.Transpose.FLIP_LEFT_RIGHT), flipped


def _clip(boxes: torch.Tensor, width: int, height: int) -> torch.Tensor:
    out = boxes.clone()
    out[:, 0::2] = out[:, 0::2].clamp(0, width)
    out[:, 1::2] = out[:, 1::2].clamp(0, height)
    return out


def _big_enough(boxes: torch.Tensor, min_px: float) -> torch.Tensor:
    return ((boxes[:, 2] - boxes[:, 0]) > min_px) & ((boxes[:, 3] - boxes[:, 1]) > min_px)
