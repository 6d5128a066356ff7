"""The built-in pipelines' augmentation settings are libreyolo 1.6.0's, read from 1.6.0 itself.

`YOLO9Config()` and `YOLOXConfig()` are instantiated in the 1.6.0 environment and their
augmentation fields compared, key by key, with the AugmentConfig each family trains with here
(tests/workload/test_augment_statistics.py checks that the rates are then honoured).
"""

from __future__ import annotations

import json
import subprocess

import pytest

from libreyolo.workload.data.augment import AugmentConfig
from libreyolo.workload.yolox.data import YOLOX_AUGMENT
from tests.trainer.v1_env import v1_python

pytestmark = pytest.mark.slow

FIELDS = (
    "mosaic_prob", "mixup_prob", "hsv_prob", "flip_prob", "flipud", "degrees", "translate",
    "shear", "perspective", "mosaic_scale", "mixup_scale",
)  # fmt: skip
READ = f"""
import json
from libreyolo.training.config import YOLO9Config, YOLOXConfig
print(json.dumps({{c.__name__: {{k: getattr(c(), k) for k in {FIELDS!r}}}
                  for c in (YOLO9Config, YOLOXConfig)}}))
"""


def _ours(config: AugmentConfig) -> dict[str, object]:
    """Our config in 1.6.0's field names (an off switch is probability 0)."""
    scale = config.scale_range or (1 - config.scale, 1 + config.scale)
    return {
        "mosaic_prob": config.mosaic_prob if config.mosaic else 0.0,
        "mixup_prob": config.mixup_prob if config.mixup else 0.0,
        "hsv_prob": config.hsv_prob if config.hsv else 0.0,
        "flip_prob": config.flip_prob if config.flip else 0.0,
        "flipud": 0.0,  # no vertical flip here
        "degrees": config.degrees,
        "translate": config.translate,
        "shear": config.shear,
        "perspective": 0.0,  # a pure affine here
        "mosaic_scale": list(scale),
        "mixup_scale": list(config.mixup_scale),
    }


def test_each_familys_augmentation_is_1_6_0s_key_by_key() -> None:
    done = subprocess.run(  # -I: never this checkout's libreyolo from the working directory
        [v1_python(), "-I", "-c", READ], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    theirs = json.loads(done.stdout)
    yolo9, yolox = theirs["YOLO9Config"], theirs["YOLOXConfig"]
    ours9 = _ours(AugmentConfig())
    ours9["mixup_scale"] = yolo9["mixup_scale"]  # no mixup in YOLOv9 (probability 0): unused
    assert {k: ours9[k] for k in FIELDS} == {k: yolo9[k] for k in FIELDS}
    assert {k: _ours(YOLOX_AUGMENT)[k] for k in FIELDS} == {k: yolox[k] for k in FIELDS}
