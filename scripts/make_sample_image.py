"""Draw the bundled sample image `libreyolo/assets/sample.jpg` (a synthetic street scene).

The project's own picture, dedicated to the public domain (CC0), replacing libreyolo 1.6.0's
`parkour.jpg`, whose licence is stated nowhere (so it cannot be shipped). Deterministic: a seeded
`random.Random` places everything, and a low-amplitude grain gives the JPEG a realistic entropy (and
so a realistic decode cost) at about the reference's 1280×852. Run from the repository root:

    .venv/bin/python scripts/make_sample_image.py [--out PATH] [--boxes]

`--boxes` prints the drawn people and cars as `class x1 y1 x2 y2` (COCO ids 0 person, 2 car). This
script must not be imported by the package; it only writes the asset.
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

from PIL import Image, ImageDraw, ImageFilter

WIDTH, HEIGHT = 1280, 852
HORIZON = 470
SEED = 20240917
QUALITY = 90
OUT = Path(__file__).resolve().parents[1] / "libreyolo" / "assets" / "sample.jpg"

Box = tuple[int, int, int, int, int]  # class, x1, y1, x2, y2


def _sky(draw: ImageDraw.ImageDraw) -> None:
    for y in range(HORIZON):
        t = y / HORIZON
        draw.line(
            [(0, y), (WIDTH, y)], fill=(int(70 + 110 * t), int(130 + 90 * t), int(215 + 30 * t))
        )


def _buildings(draw: ImageDraw.ImageDraw, rng: random.Random) -> None:
    x = -20
    while x < WIDTH:
        w, h = rng.randint(110, 220), rng.randint(160, 380)
        shade = rng.randint(95, 185)
        colour = (shade, shade - rng.randint(0, 25), shade - rng.randint(10, 45))
        top = HORIZON - h
        draw.rectangle([x, top, x + w, HORIZON], fill=colour, outline=(60, 55, 50), width=2)
        for wy in range(top + 18, HORIZON - 30, 34):
            for wx in range(x + 14, x + w - 24, 30):
                lit = rng.random() < 0.3
                draw.rectangle(
                    [wx, wy, wx + 16, wy + 20], fill=(235, 215, 140) if lit else (55, 70, 90)
                )
        x += w + rng.randint(0, 12)


def _street(draw: ImageDraw.ImageDraw) -> None:
    draw.rectangle([0, HORIZON, WIDTH, HORIZON + 40], fill=(165, 160, 150))  # far pavement
    draw.rectangle([0, HORIZON + 40, WIDTH, HEIGHT], fill=(78, 80, 84))  # road
    draw.rectangle([0, HEIGHT - 95, WIDTH, HEIGHT], fill=(170, 165, 155))  # near pavement
    for x in range(20, WIDTH, 160):
        draw.rectangle([x, HORIZON + 190, x + 90, HORIZON + 202], fill=(235, 235, 225))


def _car(draw: ImageDraw.ImageDraw, x: int, y: int, w: int, colour: tuple[int, int, int]) -> Box:
    h = int(w * 0.42)
    body_top = y - h + int(h * 0.38)
    draw.rounded_rectangle([x, body_top, x + w, y - h // 6], radius=w // 14, fill=colour)
    cab = [x + w // 5, y - h, x + w * 4 // 5, body_top + 4]
    draw.rounded_rectangle(cab, radius=w // 12, fill=colour)
    draw.rectangle([cab[0] + 8, cab[1] + 8, cab[2] - 8, cab[3] - 4], fill=(150, 190, 215))
    r = h // 5
    for cx in (x + w // 5, x + w * 4 // 5):
        draw.ellipse([cx - r, y - 2 * r, cx + r, y], fill=(25, 25, 25))
    return (2, x, y - h, x + w, y)


def _person(draw: ImageDraw.ImageDraw, x: int, y: int, h: int, rng: random.Random) -> Box:
    """A stick-and-block figure standing with its feet at (x, y), h pixels tall."""
    head = h // 8
    shirt = (rng.randint(30, 220), rng.randint(30, 220), rng.randint(30, 220))
    skin = rng.choice([(240, 200, 170), (200, 150, 110), (140, 95, 60)])
    top = y - h
    draw.ellipse([x - head // 2, top, x + head // 2, top + head], fill=skin)
    torso = [x - h // 9, top + head + 2, x + h // 9, top + h * 11 // 20]
    draw.rounded_rectangle(torso, radius=h // 30, fill=shirt)
    leg = max(3, h // 18)
    trousers = (40, 45, 70)
    draw.line([(x - h // 20, torso[3]), (x - h // 9, y)], fill=trousers, width=leg)
    draw.line([(x + h // 20, torso[3]), (x + h // 8, y)], fill=trousers, width=leg)
    arm = max(2, h // 24)
    draw.line([(torso[0], torso[1] + 4), (x - h // 5, top + h // 2)], fill=shirt, width=arm)
    draw.line([(torso[2], torso[1] + 4), (x + h // 5, top + h // 2)], fill=shirt, width=arm)
    return (0, x - h // 5, top, x + h // 5, y)


def _grain(img: Image.Image, rng: random.Random) -> Image.Image:
    """Blend in a faint seeded noise so the JPEG is not unrealistically easy to decode."""
    noise = Image.frombytes("RGB", img.size, rng.randbytes(img.width * img.height * 3))
    return Image.blend(img, noise.filter(ImageFilter.GaussianBlur(0.6)), 0.06)


def draw_scene() -> tuple[Image.Image, list[Box]]:
    """The scene and the boxes of the objects drawn in it (pixels, xyxy)."""
    rng = random.Random(SEED)
    img = Image.new("RGB", (WIDTH, HEIGHT))
    draw = ImageDraw.Draw(img)
    _sky(draw)
    _buildings(draw, rng)
    _street(draw)
    boxes = [
        _car(draw, 90, HORIZON + 175, 300, (180, 30, 35)),
        _car(draw, 760, HORIZON + 120, 230, (30, 70, 160)),
        _car(draw, 1040, HORIZON + 95, 170, (220, 220, 225)),
    ]
    for x, y, h in (
        (520, HEIGHT - 40, 300),
        (640, HEIGHT - 30, 320),
        (300, HEIGHT - 20, 280),
        (1120, HEIGHT - 45, 260),
        (470, HORIZON + 35, 120),
    ):
        boxes.append(_person(draw, x, y, h, rng))
    return _grain(img, rng), boxes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--boxes", action="store_true", help="print the drawn objects' boxes")
    args = parser.parse_args()
    img, boxes = draw_scene()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    img.save(args.out, "JPEG", quality=QUALITY, optimize=True)
    print(f"wrote {args.out} ({args.out.stat().st_size} bytes, {img.width}x{img.height})")
    if args.boxes:
        for box in boxes:
            print(*box)


if __name__ == "__main__":
    main()
