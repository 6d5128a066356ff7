"""Config composition: packaged groups, checked-in experiments, CLI overrides and errors."""

from __future__ import annotations

import json
import logging
import os
from dataclasses import FrozenInstanceError
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from libreyolo.config import (
    FLAG_KEYS,
    AmpDtype,
    ConfigError,
    ModeOption,
    ProfileConfig,
    as_plain_dict,
    compose_config,
    config_yaml,
    quote_value,
    to_overrides,
)
from libreyolo.errors import ExitStatus

ROOT = Path(__file__).resolve().parents[2]
PACKAGED = ROOT / "libreyolo" / "conf"
REPO_CONF = ROOT / "conf"
GROUPS = ("mode", "model", "dataset", "device", "window")
OPTIONS = [(g, p.stem) for g in GROUPS for p in sorted((PACKAGED / g).glob("*.yaml"))]
EXPERIMENTS = sorted(p.stem for p in REPO_CONF.glob("*.yaml"))
# Options that need one value supplied before they resolve.
NEEDS = {("dataset", "custom"): ["dataset.name_or_path='/data/my set/data.yaml'"]}


def test_packaged_groups_have_the_documented_options() -> None:
    found = {g: sorted(p.stem for p in (PACKAGED / g).glob("*.yaml")) for g in GROUPS}
    assert found == {
        "mode": ["infer", "run"],
        "model": ["yolo9c", "yolo9m", "yolo9s", "yolo9t"]
        + [f"yolox_{size}" for size in ("l", "m", "n", "s", "t", "x")],
        "dataset": ["coco128", "custom", "synthetic"],
        "device": ["cpu", "cuda"],
        "window": ["default", "long", "quick"],
    }


def test_hydra_lists_only_real_options() -> None:
    from hydra import initialize_config_module
    from hydra.core.global_hydra import GlobalHydra

    from libreyolo.config import register_schemas

    register_schemas()
    with initialize_config_module("libreyolo.conf", version_base="1.3"):
        loader = GlobalHydra.instance().config_loader()
        for group in GROUPS:
            expected = sorted(p.stem for p in (PACKAGED / group).glob("*.yaml"))
            assert sorted(loader.get_group_options(group)) == expected


@pytest.mark.parametrize(("group", "option"), OPTIONS, ids=[f"{g}={o}" for g, o in OPTIONS])
def test_every_packaged_option_composes(group: str, option: str) -> None:
    cfg = compose_config([f"{group}={option}", *NEEDS.get((group, option), [])])
    assert isinstance(cfg, ProfileConfig)
    json.dumps(as_plain_dict(cfg))  # storable in a profile document


def test_packaged_defaults_match_the_cli_spec() -> None:
    run = compose_config([])
    assert run.mode is ModeOption.run
    # --size: the spec's t, given by the default weights' name (a size is set only when asked
    # for, so the default never overrides a checkpoint's own size).
    assert (run.model.family, run.model.size, run.model.weights) == (
        "yolo9",
        None,
        "LibreYOLO9t.pt",
    )
    assert (run.batch, run.imgsz, run.amp, run.dataset.workers) == (16, 640, True, 8)
    assert (run.window.steps, run.window.warmup, run.window.repeat) == (20, 5, 1)
    assert (run.device.name, run.project, run.dataset.name_or_path) == (
        "0",
        "runs/profile",
        "synthetic",
    )
    infer = compose_config(["mode=infer"])
    assert (infer.batch, infer.half, infer.amp_dtype) == (1, False, AmpDtype.float16)
    assert (infer.window.warmup, infer.window.runs, infer.window.repeat) == (20, 100, 1)
    assert (infer.conf, infer.iou, infer.max_det, infer.trace, infer.source) == (
        0.25,
        0.45,
        300,
        True,
        None,
    )


def test_group_options_set_their_values() -> None:
    assert compose_config(["model=yolo9c"]).model.weights == "LibreYOLO9c.pt"
    assert compose_config(["device=cpu"]).device.name == "cpu"
    assert compose_config(["dataset=coco128"]).dataset.name_or_path == "coco128"
    quick = compose_config(["mode=infer", "window=quick"]).window
    assert (quick.warmup, quick.steps, quick.runs) == (1, 3, 10)
    # window=default keeps each mode's own window
    assert compose_config(["mode=infer", "window=default"]).window.warmup == 20


def test_custom_dataset_demands_a_path() -> None:
    with pytest.raises(ConfigError, match=r"dataset\.name_or_path"):
        compose_config(["dataset=custom"])


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_every_repo_experiment_composes(name: str) -> None:
    cfg = compose_config([], config_dir=REPO_CONF, config_name=name)
    assert isinstance(cfg, ProfileConfig)


def test_repo_experiments_exist_and_say_what_they_are() -> None:
    assert "tune_train" in EXPERIMENTS
    tune = compose_config([], config_dir=REPO_CONF, config_name="tune_train")
    assert (tune.mode, tune.dataset.name_or_path) == (ModeOption.run, "coco128")
    infer = [
        n
        for n in EXPERIMENTS
        if compose_config([], config_dir=REPO_CONF, config_name=n).mode is ModeOption.infer
    ]
    assert infer


def test_tune_train_declares_a_batch_by_imgsz_sweep() -> None:
    import yaml

    sweep = yaml.safe_load((REPO_CONF / "tune_train.yaml").read_text())["hydra"]
    assert sweep["mode"] == "MULTIRUN"
    assert set(sweep["sweeper"]["params"]) == {"batch", "imgsz"}


def test_no_repo_config_name_collides_with_a_packaged_one() -> None:
    packaged = {
        p.relative_to(PACKAGED).with_suffix("").as_posix() for p in PACKAGED.rglob("*.yaml")
    }
    packaged |= {p.name for p in PACKAGED.iterdir() if p.is_dir()}
    mine = {p.relative_to(REPO_CONF).with_suffix("").as_posix() for p in REPO_CONF.rglob("*.yaml")}
    assert mine
    assert not mine & packaged


def test_experiment_values_win_and_overrides_win_over_them() -> None:
    base = compose_config([], config_dir=REPO_CONF, config_name="infer_latency_fp16")
    assert base.half is True
    assert (
        compose_config(["half=false"], config_dir=REPO_CONF, config_name="infer_latency_fp16").half
        is False
    )


def test_config_dir_without_that_primary_adds_options(tmp_path: Path) -> None:
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "mine.yaml").write_text("size: s\nweights: /w/mine.pt\n")
    cfg = compose_config(["model=mine"], config_dir=tmp_path)
    assert (cfg.model.size, cfg.model.weights) == ("s", "/w/mine.pt")


def test_a_global_package_file_in_a_group_is_added_as_an_experiment(tmp_path: Path) -> None:
    (tmp_path / "experiment").mkdir()
    (tmp_path / "experiment" / "tuned.yaml").write_text(
        "# @package _global_\n# a comment\nbatch: 24\ndataset:\n  workers: 3\n"
    )
    cfg = compose_config([], config_dir=tmp_path, config_name="experiment/tuned")
    assert (cfg.batch, cfg.dataset.workers, cfg.imgsz) == (24, 3, ProfileConfig().imgsz)
    typed = compose_config(["batch=5"], config_dir=tmp_path, config_name="experiment/tuned")
    assert (typed.batch, typed.dataset.workers) == (5, 3)  # the flags typed still win
    # Without the header it is a primary config, which must start from the packaged one.
    (tmp_path / "experiment" / "plain.yaml").write_text("batch: 24\n")
    with pytest.raises(ConfigError, match="is not a profile config"):
        compose_config([], config_dir=tmp_path, config_name="experiment/plain")


def test_missing_config_dir_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="config directory"):
        compose_config([], config_dir=tmp_path / "nope")


# -- CLI flags -> overrides -------------------------------------------------------------------


def test_cli_defaults_give_the_packaged_config() -> None:
    from libreyolo.cli.parser import build_parser

    parser = build_parser()
    for argv, mode, data in (
        (["profile", "run", "synthetic"], "run", {}),
        (["profile", "infer"], "infer", {}),
    ):
        args = vars(parser.parse_args(argv))
        assert compose_config(to_overrides(args, mode=mode)) == compose_config(
            [f"mode={mode}", *data]
        )


def test_cli_flags_map_onto_the_config() -> None:
    from libreyolo.cli.parser import build_parser

    argv = [
        "profile", "infer", "/imgs/a=b c,d.jpg", "--weights", "/w/it's ${x}.pt", "--size", "s",
        "--batch", "4", "--imgsz", "320", "--half", "--amp-dtype", "bf16", "--warmup", "2",
        "--runs", "7", "--repeat", "3", "--conf", "0.5", "--iou", "0.6", "--max-det", "10",
        "--device", "cuda:1", "--no-trace", "--project", "C:\\runs\\",
    ]  # fmt: skip
    cfg = compose_config(to_overrides(vars(build_parser().parse_args(argv)), mode="infer"))
    assert cfg.source == "/imgs/a=b c,d.jpg"
    assert cfg.model.weights == "/w/it's ${x}.pt"
    assert (cfg.model.size, cfg.batch, cfg.imgsz, cfg.half) == ("s", 4, 320, True)
    assert cfg.amp_dtype is AmpDtype.bfloat16
    assert (cfg.window.warmup, cfg.window.runs, cfg.window.repeat) == (2, 7, 3)
    assert (cfg.conf, cfg.iou, cfg.max_det, cfg.trace) == (0.5, 0.6, 10, False)
    assert (cfg.device.name, cfg.project) == ("cuda:1", "C:\\runs\\")


def test_run_flags_map_onto_the_config() -> None:
    values = {
        "data": "/d/my data=1.yaml",
        "batch": -1,
        "workers": 0,
        "amp": False,
        "steps": 3,
        "warmup": 0,
        "repeat": 2,
        "device": "cpu",
        "json": True,
        "handler": print,
    }
    cfg = compose_config(to_overrides(values, mode="run"))
    assert cfg.dataset.name_or_path == "/d/my data=1.yaml"
    assert (cfg.batch, cfg.dataset.workers, cfg.amp) == (-1, 0, False)
    assert (cfg.window.steps, cfg.window.warmup, cfg.window.repeat, cfg.device.name) == (
        3, 0, 2, "cpu"
    )  # fmt: skip


def test_only_typed_flags_keep_an_experiments_values() -> None:
    values = {"batch": 1, "half": False, "runs": 9}
    overrides = to_overrides(values, only={"runs"})
    assert overrides == ["window.runs=9"]
    cfg = compose_config(overrides, config_dir=REPO_CONF, config_name="infer_latency_fp16")
    assert (cfg.half, cfg.window.runs) == (True, 9)


def test_every_flag_key_exists_in_the_schema() -> None:
    plain = as_plain_dict(ProfileConfig())
    for key in FLAG_KEYS.values():
        node: object = plain
        for part in key.split("."):
            assert isinstance(node, dict) and part in node, key
            node = node[part]


def test_string_values_are_always_quoted() -> None:
    overrides = to_overrides({"device": "0", "size": "t", "batch": 2, "amp": True})
    assert overrides == ["model.size='t'", "batch=2", "amp=true", "device.name='0'"]


STRING_KEYS = (
    "project",
    "source",
    "model.weights",
    "model.family",
    "model.size",
    "device.name",
    "dataset.name_or_path",
)


@settings(derandomize=True, max_examples=25, deadline=None)
@given(
    st.lists(
        st.text(st.characters(blacklist_categories=("Cs",)), max_size=24),
        min_size=len(STRING_KEYS),
        max_size=len(STRING_KEYS),
    )
)
def test_quote_value_round_trips_through_hydra(texts: list[str]) -> None:
    # One composition checks seven values, which keeps the property test fast.
    overrides = [f"{key}={quote_value(text)}" for key, text in zip(STRING_KEYS, texts, strict=True)]
    plain = as_plain_dict(compose_config(overrides))
    for key, text in zip(STRING_KEYS, texts, strict=True):
        node = plain
        for part in key.split("."):
            node = node[part]
        assert node == text, key


@pytest.mark.parametrize("text", ["a,b", "a=b", "${x}", "it's", "C:\\dir\\", "\\'", " sp ", "[1]"])
def test_quote_value_round_trips_through_compose_config(text: str) -> None:
    assert compose_config([f"project={quote_value(text)}"]).project == text


# -- errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        (["bogus=1"], "bogus"),
        (["model.wieghts='x'"], "model.wieghts"),
        (["batch=sixteen"], "batch (--batch)"),
        (["window.steps=1.5"], "window.steps (--steps)"),
        (["amp_dtype='fp8'"], "amp_dtype (--amp-dtype)"),
        (["model=yolo9x"], "model"),
        (["mode=train"], "mode"),
        (["model.weights=/a,b.pt"], "model.weights (--weights)"),
        (["model.weights=/a=b.pt"], "model.weights (--weights)"),
        (["batch=[1"], "batch (--batch)"),
    ],
)
def test_bad_overrides_raise_one_line_config_errors(overrides: list[str], named: str) -> None:
    with pytest.raises(ConfigError) as caught:
        compose_config(overrides)
    err = caught.value
    assert err.message.startswith(named + ":"), err.message
    assert "\n" not in err.message
    assert (err.status, err.code) == (ExitStatus.USAGE, "bad_config")


def test_unknown_option_lists_the_choices() -> None:
    with pytest.raises(ConfigError, match=r"choose one of: yolo9c, yolo9m, yolo9s, yolo9t"):
        compose_config(["model=yolo9x"])


# -- side effects and outputs -----------------------------------------------------------------


def test_composing_leaves_cwd_and_logging_alone(tmp_path: Path) -> None:
    root = logging.getLogger()
    before = (os.getcwd(), list(root.handlers), root.level, logging.root.manager.disable)
    compose_config(["mode=infer"])
    compose_config([], config_dir=REPO_CONF, config_name="tune_train")
    assert (os.getcwd(), list(root.handlers), root.level, logging.root.manager.disable) == before
    assert not logging.getLogger("libreyolo").disabled


def test_resolved_config_is_frozen_and_plain() -> None:
    cfg = compose_config(["mode=infer", "amp_dtype=bfloat16"])
    with pytest.raises(FrozenInstanceError):
        cfg.batch = 2  # type: ignore[misc]
    plain = as_plain_dict(cfg)
    assert plain["mode"] == "infer" and plain["amp_dtype"] == "bfloat16"
    assert json.loads(json.dumps(plain)) == plain
    assert "max_det: 300" in config_yaml(cfg)


def test_importing_config_does_not_import_hydra() -> None:
    import subprocess
    import sys

    code = (
        "import sys, libreyolo.config; "
        "sys.exit('hydra' in sys.modules or 'omegaconf' in sys.modules)"
    )
    assert subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=False).returncode == 0


def test_repo_experiment_group_adds_onto_the_packaged_config() -> None:
    import yaml

    cfg = compose_config(["+experiment=deploy_grid"], config_dir=REPO_CONF)
    assert (cfg.mode, cfg.model.weights, cfg.window.runs) == (
        ModeOption.infer,
        "LibreYOLO9s.pt",
        500,
    )
    overridden = compose_config(["+experiment=deploy_grid", "batch=2"], config_dir=REPO_CONF)
    assert overridden.batch == 2
    params = yaml.safe_load((REPO_CONF / "experiment" / "deploy_grid.yaml").read_text())
    assert set(params["hydra"]["sweeper"]["params"]) == {"batch", "imgsz", "amp"}
