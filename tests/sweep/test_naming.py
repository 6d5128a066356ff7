"""Point folders name every swept key: the packaged template grows a part per key it does not
name (`model=yolo9t,yolox_n` keeps two folders), a user's template must name them all, and two
jobs in one folder are refused before any point runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hydra import compose, initialize_config_module
from omegaconf import open_dict

from libreyolo.config.schema import register_schemas
from libreyolo.config.slug import MAX_SLUG_CHARS, slug
from libreyolo.errors import UsageError
from libreyolo.sweep.naming import PACKAGED_SUBDIR, name_swept_keys
from libreyolo.sweep.plan import Plan, grid_plan

ROOT = Path(__file__).resolve().parents[2]


def _plan(tmp_path: Path, *grid: str, subdir: str | None = None) -> Plan | None:
    register_schemas()
    hydra = [] if subdir is None else [f"hydra.sweep.subdir='{subdir}'"]
    with initialize_config_module("libreyolo.conf", version_base="1.3"):
        config = compose("profile", overrides=hydra, return_hydra_config=True)
        with open_dict(config):  # what `libreyolo-sweep -m <grid>` hands the callback
            config.hydra.overrides.task = list(grid)
            config.hydra.overrides.hydra = hydra
            config.hydra.sweep.dir = str(tmp_path)
        name_swept_keys(config)
        return grid_plan(config)


def test_the_packaged_template_is_the_one_naming_extends() -> None:
    packaged = yaml.safe_load((ROOT / "libreyolo/conf/profile.yaml").read_text(encoding="utf-8"))
    assert packaged["hydra"]["sweep"]["subdir"] == PACKAGED_SUBDIR


@pytest.mark.parametrize(
    ("grid", "names"),
    [
        (("batch=4,8",), ["b4_s640_amp1", "b8_s640_amp1"]),  # the axes alone: names unchanged
        (("model=yolo9t,yolox_n",), ["b16_s640_amp1_model-yolo9t", "b16_s640_amp1_model-yolox_n"]),
        (("batch=1", "conf=0.25,0.5"), ["b1_s640_amp1_conf-0.25", "b1_s640_amp1_conf-0.5"]),
        (
            ("window.warmup=1,2", "half=true,false"),
            [
                "b16_s640_amp1_warmup-1_half-1",
                "b16_s640_amp1_warmup-1_half-0",
                "b16_s640_amp1_warmup-2_half-1",
                "b16_s640_amp1_warmup-2_half-0",
            ],
        ),
        (
            ("model.weights=a/b.pt,c d.pt",),
            ["b16_s640_amp1_weights-a%2Fb.pt", "b16_s640_amp1_weights-c%20d.pt"],
        ),
    ],
)
def test_every_swept_key_names_the_point_folder(
    tmp_path: Path, grid: tuple[str, ...], names: list[str]
) -> None:
    plan = _plan(tmp_path, *grid)
    assert plan is not None and list(plan) == names


def test_a_users_template_that_leaves_out_a_swept_key_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as err:
        _plan(tmp_path, "batch=1,2", "conf=0.1,0.2", subdir="p${batch}")
    assert err.value.message == (
        "hydra.sweep.subdir 'p${batch}' does not name the swept key 'conf': points would share "
        "a folder and overwrite each other's profile"
    )


def test_a_users_template_naming_every_key_or_the_job_is_kept(tmp_path: Path) -> None:
    plan = _plan(tmp_path, "conf=0.1,0.2", subdir="c${conf}")
    assert plan is not None and list(plan) == ["c0.1", "c0.2"]
    plan = _plan(tmp_path, "conf=0.1,0.2", subdir="job${hydra.job.num}")
    assert plan is not None and list(plan) == ["job0", "job1"]


def test_two_jobs_of_one_point_are_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as err:
        _plan(tmp_path, "conf=0.1,0.10")  # Hydra reads both as the float 0.1
    assert err.value.message == (
        "two jobs of the grid are the same point 'b16_s640_amp1_conf-0.1' (conf=0.1 twice)"
    )


def test_slug_keeps_distinct_values_distinct_and_short() -> None:
    assert slug("yolox_n") == "yolox_n" and slug(True) == "1" and slug(0.25) == "0.25"
    assert slug("a/b") != slug("a_b") and "/" not in slug("../../etc")
    assert slug("") == "%00"
    long_a, long_b = slug("x" * 300 + "a"), slug("x" * 300 + "b")
    assert long_a != long_b and len(long_a) == len(long_b) == MAX_SLUG_CHARS


@pytest.mark.slow
def test_a_two_model_sweep_keeps_two_profiles(tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    argv = [
        sys.executable,
        "-m",
        "libreyolo.sweep",
        "-m",
        "mode=infer",
        "device=cpu",
        "imgsz=64",
        "window.warmup=0",
        "window.runs=2",
        "trace=false",
        "sweep.isolate=false",
        f"sweep.lock_dir={tmp_path / 'locks'}",
        f"hydra.sweep.dir={sweep}",
        "model=yolo9t,yolox_n",
    ]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    record = json.loads((sweep / "sweep.json").read_text(encoding="utf-8"))
    assert sorted(record["points"]) == ["b1_s64_amp1_model-yolo9t", "b1_s64_amp1_model-yolox_n"]
    families = set()
    for name in record["points"]:
        profile = json.loads((sweep / name / "infer" / "profile.json").read_text(encoding="utf-8"))
        families.add(profile["run"]["family"])
    assert families == {"yolo9", "yolox"}
