"""The table of 1.6.0's training keys the built-in step reads (`workload/v16_train_config.py`)
is 1.6.0's own: `YOLO9Config().to_dict()` and `YOLOXConfig().to_dict()` read in its environment
(regenerate with scripts/gen_v16_train_config.py when the reference release changes)."""

from __future__ import annotations

import json
import subprocess

import pytest

from libreyolo.workload import v16_train_config
from tests.trainer.v1_env import v1_python

pytestmark = pytest.mark.slow

READ = """
import json
from libreyolo.training.config import YOLO9Config, YOLOXConfig
print(json.dumps({"yolo9": YOLO9Config().to_dict(), "yolox": YOLOXConfig().to_dict()}))
"""


def test_the_table_is_1_6_0s_config_defaults() -> None:
    done = subprocess.run(  # -I: never this checkout's libreyolo from the working directory
        [v1_python(), "-I", "-c", READ], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    theirs = json.loads(done.stdout)
    assert theirs["yolo9"] == v16_train_config.YOLO9
    assert theirs["yolox"] == v16_train_config.YOLOX
    assert list(v16_train_config.YOLO9) == list(theirs["yolo9"])  # 1.6.0's field order
