"""`profile run --weights <a checkpoint 1.6.0's trainer wrote>` measures the training it was
trained with: the training config the file carries is adopted key by key (the user's flags
win), said in a note and recorded in the profile; `--no-checkpoint-config` measures 1.6.0's
defaults; a bad config in the file is one line and exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from libreyolo.workload import v16_train_config
from libreyolo.workload.train_keys import HONOURED, family_keys
from tests.conftest import CliResult, invoke
from tests.fixture_files import YOLOX_N_TRAINED, fixture_file

WINDOW = ["--batch", "2", "--imgsz", "64", "--steps", "2", "--warmup", "1", "--device", "cpu"]


@pytest.fixture(scope="module")
def trained() -> Path:
    return fixture_file(YOLOX_N_TRAINED)


def _config_of(path: Path) -> dict:
    """The training config exactly as 1.6.0 stored it (read as 1.6.0 would, numpy allowed)."""
    return torch.load(path, map_location="cpu", weights_only=False)["config"]


def _run(weights: Path, project: Path, *extra: str) -> tuple[CliResult, dict]:
    result = invoke(
        ["profile", "run", "synthetic", "--weights", str(weights), *WINDOW,
         "--workers", "0", "--project", str(project), *extra]
    )  # fmt: skip
    assert result.status == 0, result.stderr
    return result, json.loads((project / "run" / "profile.json").read_text())


def test_the_checkpoints_training_config_is_adopted_key_by_key(
    trained: Path, tmp_path: Path
) -> None:
    stored = _config_of(trained)
    result, doc = _run(trained, tmp_path / "p")
    run = doc["run"]
    # every key the step honours is the file's value (pairs as lists, as 1.6.0 stores them)
    for name in HONOURED:
        if name in stored and name in run["train_keys"]:
            assert run["train_keys"][name] == stored[name], name
    differing = [
        name
        for name in HONOURED
        if name in stored and stored[name] != v16_train_config.YOLOX.get(name)
    ]
    assert sorted(run["adopted_keys"]) == sorted(differing)
    assert run["adopted_keys"] == [  # in the file's order
        "optimizer", "lr0", "weight_decay", "mosaic_prob", "mixup_prob", "hsv_prob",
        "flip_prob", "degrees", "translate", "mosaic_scale", "shear", "ema",
    ]  # fmt: skip
    assert run["train_keys"]["no_aug_phase"] is False
    note = next(n for n in doc["notes"] if n.startswith("adopted the training config"))
    assert note == (
        f"adopted the training config {trained} carries: optimizer=adamw, lr0=0.002, "
        "weight_decay=0.001, mosaic_prob=0.5, mixup_prob=0.25, hsv_prob=0.75, flip_prob=0, "
        "degrees=3, translate=0.05, mosaic_scale=0.6,1.4, shear=1, ema=false "
        "(--no-checkpoint-config: 1.6.0's defaults, as `libreyolo train` without resume)"
    )
    assert (
        f"{trained} trained at batch 4; this run measures batch 2, as its flags say"
        in (doc["notes"])
    )
    assert "note: adopted the training config" in result.stdout
    # the step ran them: no EMA copy, so no EMA in the weight update's trial
    trial = next(t for t in doc["variant_trials"] if t["variant"] == "foreach_updates")
    assert trial["part"] == "the weight update (AdamW step, as 1.6.0 runs them)"


def test_flags_win_over_the_checkpoint_and_it_can_be_left_out(
    trained: Path, tmp_path: Path
) -> None:
    _, doc = _run(
        trained, tmp_path / "a", "--mosaic", "0.1", "--optimizer", "sgd", "--train-arg", "ema=true"
    )
    keys, adopted = doc["run"]["train_keys"], doc["run"]["adopted_keys"]
    assert (keys["mosaic_prob"], keys["optimizer"], keys["ema"]) == (0.1, "sgd", True)
    assert keys["mixup_prob"] == 0.25 and "mixup_prob" in adopted
    assert not {"mosaic_prob", "optimizer", "ema"} & set(adopted)
    _, plain = _run(trained, tmp_path / "b", "--no-checkpoint-config")
    assert plain["run"]["train_keys"] == family_keys("yolox").as_dict()
    assert plain["run"]["adopted_keys"] == []
    assert not any(n.startswith("adopted") for n in plain["notes"])


def _rewritten(trained: Path, tmp_path: Path, **config: object) -> Path:
    checkpoint = torch.load(trained, map_location="cpu", weights_only=False)
    if config.pop("_not_a_mapping", False):
        checkpoint["config"] = ["mosaic_prob", 0.5]
    else:
        checkpoint["config"] = {**checkpoint["config"], **config}
    path = tmp_path / "last.pt"
    torch.save(checkpoint, path)
    return path


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"mosaic_prob": 7.0}, "its training config's mosaic_prob=7: must be within [0, 1]"),
        ({"optimizer": 3}, "its training config's optimizer=3: not a valid value"),
        ({"_not_a_mapping": True}, "its training config is a list, not a mapping"),
    ],
)
def test_a_bad_training_config_in_the_file_is_one_line_and_exit_2(
    trained: Path, tmp_path: Path, change: dict, message: str
) -> None:
    path = _rewritten(trained, tmp_path, **change)
    project = tmp_path / "p"
    result = invoke(
        ["profile", "run", "synthetic", "--weights", str(path), *WINDOW, "--project", str(project)]
    )
    assert result.status == 2 and result.stdout == ""
    assert result.stderr == f"{path}: {message}\n"
    assert not (project / "run").exists()  # nothing written


def test_a_setting_the_step_cannot_do_is_said_not_hidden(trained: Path, tmp_path: Path) -> None:
    path = _rewritten(trained, tmp_path, freeze=10, a_key_of_a_later_release=1)
    _, doc = _run(path, tmp_path / "p")
    assert (
        f"{path} trained with freeze=10, which the built-in step does not do (measure libreyolo "
        "train itself with --trainer)"
    ) in doc["notes"]
    assert not any("a_key_of_a_later_release" in note for note in doc["notes"])


def test_bad_keys_on_the_command_line_are_refused_before_anything_loads(tmp_path: Path) -> None:
    cases = {
        ("--train-arg", "mosaic=2"): "--train-arg mosaic_prob=2: must be within [0, 1]",
        ("--train-arg", "freeze=3"): "--train-arg freeze=3: the built-in step does not "
        "implement freeze (1.6.0's default for yolo9: None) (measure libreyolo train itself "
        "with --trainer)",
        ("--mosaic", "0.5", "--train-arg", "mosaic=0.2"): "mosaic_prob is set twice: "
        "train.mosaic_prob (a flag or override) and --train-arg (give it once)",
    }
    for extra, line in cases.items():
        project = tmp_path / "p"
        result = invoke(["profile", "run", "synthetic", *WINDOW, "--project", str(project), *extra])
        assert result.status == 2, extra
        assert result.stderr == line + "\n", extra
        assert not project.exists(), extra
    result = invoke(["profile", "run", "synthetic", *WINDOW, "--mosaic", "1.5"])
    assert result.status == 2 and "--mosaic" in result.stderr
