"""1.6.0's training keys for the built-in step: the words 1.6.0's CLI takes, each value
checked, and the three sources (the user, the checkpoint's training config, 1.6.0's defaults)
merged in that order. No torch: `train_keys` is plain Python."""

from __future__ import annotations

import pytest

from libreyolo.errors import UsageError
from libreyolo.workload import v16_train_config
from libreyolo.workload.train_keys import (
    HONOURED,
    TrainKeys,
    family_keys,
    parse_word,
    parse_words,
    resolve,
    words_of,
)

SOURCE = "/runs/exp/weights/last.pt"


@pytest.mark.parametrize(
    ("family", "table"), [("yolo9", v16_train_config.YOLO9), ("yolox", v16_train_config.YOLOX)]
)
def test_the_defaults_are_1_6_0s_config_key_by_key(family: str, table: dict) -> None:
    keys = family_keys(family).as_dict()
    for name in HONOURED:
        if name in table:
            assert keys[name] == table[name], name
    assert keys["no_aug_phase"] is False
    assert keys["max_labels"] == table.get("max_labels")  # YOLOX's rows are fixed: no key


def test_family_values_that_differ_are_each_familys() -> None:
    yolo9, yolox = family_keys("yolo9"), family_keys("yolox")
    assert (yolo9.momentum, yolox.momentum) == (0.937, 0.9)
    assert (yolo9.mixup_prob, yolox.mixup_prob) == (0.0, 1.0)
    assert (yolo9.mosaic_scale, yolox.mosaic_scale) == ((0.5, 1.5), (0.1, 2.0))
    assert (yolo9.ema_decay, yolox.ema_decay) == (0.9999, 0.9998)
    assert (yolo9.degrees, yolo9.shear, yolox.degrees, yolox.shear) == (0.0, 0.0, 10.0, 2.0)


def test_words_read_as_1_6_0s_cli_reads_them() -> None:
    found = parse_words(
        [
            "mosaic=0.5",
            "mixup=0.25",
            "fliplr=0",
            "mosaic_scale=0.6,1.4",
            "mixup_scale=[0.4,1.2]",
            "optimizer=AdamW",
            "ema=false",
            "nesterov=False",
            "lr0=2e-3",
            "epochs=3",
            "freeze=none",
        ],
        "yolox",
    )
    assert found == {
        "mosaic_prob": 0.5,
        "mixup_prob": 0.25,
        "flip_prob": 0.0,
        "mosaic_scale": (0.6, 1.4),
        "mixup_scale": (0.4, 1.2),
        "optimizer": "adamw",
        "ema": False,
        "nesterov": False,
        "lr0": 0.002,
        "epochs": 3,
        "freeze": None,  # 1.6.0's default: accepted
    }


@pytest.mark.parametrize(
    ("word", "message", "hint"),
    [
        ("mosaic=2", "--train-arg mosaic_prob=2: must be within [0, 1]", None),
        ("hsv_prob=-0.1", "--train-arg hsv_prob=-0.1: must be within [0, 1]", None),
        ("translate=0.7", "--train-arg translate=0.7: must be within [0, 0.5]", None),
        ("degrees=400", "--train-arg degrees=400: must be within [0, 180]", None),
        ("mosaic_scale=2,1", "--train-arg mosaic_scale=2,1: must be LO,HI with 0 < LO <= HI", None),
        ("mosaic_scale=a,b", "--train-arg mosaic_scale=a,b: must be numbers LO,HI", None),
        ("lr0=x", "--train-arg lr0=x: must be a number", None),
        ("lr0=0", "--train-arg lr0=0: must be more than 0", None),
        ("momentum=1", "--train-arg momentum=1: must be within [0, 1)", None),
        ("ema_decay=1", "--train-arg ema_decay=1: must be within (0, 1)", None),
        ("ema=maybe", "--train-arg ema=maybe: must be true or false", None),
        ("ema=", "--train-arg ema needs a value", None),
        ("optimizer=lion", "--train-arg optimizer=lion: must be one of sgd, adam, adamw", None),
        (
            "mosaik=1",
            "--train-arg mosaik=...: not a libreyolo 1.6.0 training key for yolo9",
            "did you mean mosaic?",
        ),
        ("batch=3", "--train-arg batch=...: profile run sets batch with --batch", "use --batch"),
        (
            "max_labels=50",
            "--train-arg max_labels=...: profile run sets max_labels with --max-labels",
            "use --max-labels",
        ),
        (
            "freeze=10",
            "--train-arg freeze=10: the built-in step does not implement freeze (1.6.0's default "
            "for yolo9: None)",
            "measure libreyolo train itself with --trainer",
        ),
        (
            "mixup=0.5",
            "--train-arg mixup_prob=0.5: the built-in yolo9 step has no MixUp",
            "measure libreyolo train itself with --trainer",
        ),
        ("novalue", "--train-arg 'novalue': must be KEY=VALUE, e.g. mosaic=0.0", None),
    ],
)
def test_a_bad_word_is_one_line(word: str, message: str, hint: str | None) -> None:
    with pytest.raises(UsageError) as caught:
        parse_word(word, "yolo9")
    assert str(caught.value) == message
    assert caught.value.hint == hint
    assert "\n" not in message


def test_the_same_key_twice_with_two_values_is_refused() -> None:
    assert parse_words(["mosaic=0.5", "mosaic_prob=0.5"], "yolo9") == {"mosaic_prob": 0.5}
    with pytest.raises(UsageError, match=r"mosaic_prob given twice \(0.5 and 0.25\)"):
        parse_words(["mosaic=0.5", "mosaic_prob=0.25"], "yolo9")


def test_the_user_then_the_checkpoint_then_1_6_0s_defaults() -> None:
    checkpoint = {
        **v16_train_config.YOLO9,
        "mosaic_prob": 0.5,
        "optimizer": "adamw",
        "ema": False,
        "mosaic_scale": [0.6, 1.4],  # as `to_dict` stores a pair
        "max_labels": 100,
        "epochs": 7,  # no effect on a step: neither adopted nor noted
        "a_key_of_another_release": 1,
    }
    got = resolve("yolo9", {"mosaic_prob": 0.25, "lr0": 0.02}, checkpoint, source=SOURCE)
    assert got.keys == TrainKeys(
        **{
            **family_keys("yolo9").as_dict(),
            "mosaic_prob": 0.25,  # the user's, over the checkpoint's
            "lr0": 0.02,
            "optimizer": "adamw",
            "ema": False,
            "mosaic_scale": (0.6, 1.4),
            "mixup_scale": (0.5, 1.5),
            "max_labels": 100,
        }
    )
    assert got.adopted == {
        "optimizer": "adamw",
        "ema": False,
        "mosaic_scale": (0.6, 1.4),
        "max_labels": 100,
    }
    assert got.notes == []


def test_a_checkpoint_setting_the_step_cannot_do_is_a_note_not_a_failure() -> None:
    checkpoint = {"freeze": 10, "mixup_prob": 0.3, "perspective": 0.0, "epochs": 5}
    got = resolve("yolo9", None, checkpoint, source=SOURCE)
    assert got.keys == family_keys("yolo9") and got.adopted == {}
    assert got.notes == [
        f"{SOURCE} trained with freeze=10, which the built-in step does not do (measure "
        "libreyolo train itself with --trainer)",
        f"{SOURCE} trained with mixup_prob=0.3, which the built-in step does not do (measure "
        "libreyolo train itself with --trainer)",
    ]
    # YOLOX has MixUp: the same value is adopted there
    assert resolve("yolox", None, {"mixup_prob": 0.3}, source=SOURCE).adopted == {"mixup_prob": 0.3}


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"mosaic_prob": 7}, "mosaic_prob=7: must be within [0, 1]"),
        ({"mosaic_prob": "a"}, "mosaic_prob=a: not a valid value"),
        ({"ema": "yes"}, "ema=yes: not a valid value"),
        ({"mosaic_scale": [1.0]}, "mosaic_scale=1: not a valid value"),
        ({"mosaic_scale": [float("nan"), 1.0]}, "mosaic_scale=nan,1: not a valid value"),
        ({"optimizer": "lion"}, "optimizer=lion: must be one of sgd, adam, adamw"),
        ({"max_labels": 2.5}, "max_labels=2.5: not a valid value"),
        ({"max_labels": 0}, "max_labels=0: must be 1 or more"),
    ],
)
def test_a_checkpoint_with_a_bad_value_is_one_line_naming_it(config: dict, message: str) -> None:
    with pytest.raises(UsageError) as caught:
        resolve("yolo9", None, config, source=SOURCE)
    assert str(caught.value) == f"{SOURCE}: its training config's {message}"


def test_keys_with_no_effect_on_a_step_are_named_not_measured() -> None:
    got = resolve("yolo9", {"epochs": 3, "scheduler": "cos"})
    assert got.keys == family_keys("yolo9")
    assert got.notes == ["no effect on one training step, so not measured: epochs=3, scheduler=cos"]


def test_words_for_1_6_0s_trainer() -> None:
    assert words_of({"mosaic_prob": 0.5, "ema": False, "mosaic_scale": [0.6, 1.4]}) == [
        "mosaic_prob=0.5",
        "ema=false",
        "mosaic_scale=0.6,1.4",
    ]
