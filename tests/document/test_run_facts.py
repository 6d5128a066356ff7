"""v2 files written before RunInfo's typed facts read as current ones (document/run_facts.py):
their flat `run.config` facts land in the run's fields, and the readers say the same."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from libreyolo.document import files
from libreyolo.document.codec import to_builtins
from libreyolo.document.json_value import JsonObject
from libreyolo.document.migrations import upgrade
from libreyolo.document.run_facts import lift_run_facts
from tests.conftest import invoke
from tests.profiles import training_profile

RESOLVED = {"mode": "run", "batch": 4, "imgsz": 64, "dataset": {"workers": 8}}
# The flat settings copy a training collector wrote before, facts among the settings.
OLD_TRAIN_CONFIG = {
    "data": "synthetic",
    "batch": 4,
    "imgsz": 64,
    "workers": 3,  # the workers the run started: 8 asked, capped
    "amp": True,
    "device": "cpu",
    "device_resolved": "cpu",
    "dataset_yaml": "/data/synthetic.yaml",
    "num_images": 96,
    "batches_per_epoch": 24,
    "amp_effective": False,
    "random_init": True,
    "model_family": "yolox",
    "notes": ["random weights: ..."],
    "resolved": RESOLVED,
}
FACTS = {
    "family": "yolox",
    "random_init": True,
    "num_images": 96,
    "dataset_yaml": "/data/synthetic.yaml",
    "batches_per_epoch": 24,
    "num_workers": 3,
}


def _current() -> dict[str, Any]:
    """A finalized training profile as a current collector writes it (facts in the fields)."""
    raw = to_builtins(training_profile("cpu"))
    raw["run"] |= FACTS | {"amp": False, "config": RESOLVED}
    return raw


def _old(raw: dict[str, Any]) -> dict[str, Any]:
    """`raw` as written before the typed facts: none in the fields, the flat copy in config."""
    old = copy.deepcopy(raw)
    for name in FACTS:
        del old["run"][name]
    old["run"]["config"] = copy.deepcopy(OLD_TRAIN_CONFIG)
    return old


def _write(tmp_path: Path, name: str, raw: dict[str, Any]) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(raw), encoding="utf-8")
    return str(path)


def test_an_older_v2_file_reads_its_facts_into_the_run_fields(tmp_path: Path) -> None:
    run = files.load(_write(tmp_path, "old.json", _old(_current()))).run
    assert (run.family, run.random_init, run.num_images) == ("yolox", True, 96)
    assert (run.dataset_yaml, run.batches_per_epoch, run.num_workers) == (
        "/data/synthetic.yaml",
        24,
        3,
    )
    assert run.fused is None  # training never fuses: the copy had no such key
    assert run.config == OLD_TRAIN_CONFIG  # as written: summary --json shows the same


def test_readers_say_the_same_of_the_old_and_the_current_shape(tmp_path: Path) -> None:
    current = _write(tmp_path, "new.json", _current())
    old = _write(tmp_path, "old.json", _old(_current()))
    text = [invoke(["profile", "summary", path]) for path in (current, old)]
    assert text[0].status == text[1].status == 0
    assert text[0].stdout == text[1].stdout.replace("old.json", "new.json")
    assert "(yolox)" in text[0].stdout  # the family, read from the field in both
    views = [json.loads(invoke(["profile", "summary", p, "--json"]).stdout) for p in (current, old)]
    for view in views:
        del view["config"], view["trace"]  # the config as stored; the file's own name
    assert views[0] == views[1]
    assert views[0]["family"] == "yolox" and views[0]["run"]["random_init"] is True


def test_a_fact_of_the_wrong_type_is_left_null_and_the_file_still_reads(tmp_path: Path) -> None:
    old = _old(_current())
    old["run"]["config"] |= {"random_init": "yes", "num_images": True, "model_family": 9}
    run = files.load(_write(tmp_path, "odd.json", old)).run
    assert (run.random_init, run.num_images, run.family) == (None, None, None)
    assert run.batches_per_epoch == 24


def test_a_field_the_file_sets_wins_over_its_config_copy() -> None:
    old = _old(_current())
    old["run"] |= {"family": "yolo9", "device": None, "amp": None}
    lifted = lift_run_facts(old)["run"]
    assert isinstance(lifted, dict)
    assert lifted["family"] == "yolo9"  # set: kept
    assert (lifted["device"], lifted["amp"]) == ("cpu", False)  # null: the resolved device, AMP


def test_the_lift_leaves_its_input_and_other_configs_alone() -> None:
    old = _old(_current())
    before = copy.deepcopy(old)
    assert upgrade(old, origin="memory")["run"]["family"] == "yolox"
    assert old == before
    # A 1.6.0 config (migrated v1) holds settings only, `workers` among them: not facts.
    v1_like: JsonObject = {"run": {"mode": "training", "config": {"workers": 0, "batch": 4}}}
    assert lift_run_facts(v1_like) is v1_like
    current = _current()
    assert lift_run_facts(current) is current


@pytest.mark.parametrize("mode", ["training", "inference"])
def test_workers_are_a_fact_of_training_copies_only(mode: str) -> None:
    old = _old(_current())
    old["run"]["mode"] = mode
    assert lift_run_facts(old)["run"].get("num_workers") == (3 if mode == "training" else None)  # type: ignore[union-attr]
