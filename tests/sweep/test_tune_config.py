"""`tuned.yaml`: the training settings a search recommends, as a file both front doors compose,
written only over files of ours."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from libreyolo.config.compose import as_plain_dict
from libreyolo.config.schema import ProfileConfig
from libreyolo.errors import UsageError
from libreyolo.sweep.owned import refuse_foreign, refuse_foreign_tune
from libreyolo.sweep.tuned_config import (
    is_tuned_config,
    train_settings,
    tuned_name,
    tuned_text,
    write_tuned,
)
from tests.conftest import invoke
from tests.sweep.helpers import tune_argv


def _text(batch: int = 24, imgsz: int = 320, threads: int | None = None) -> str:
    config = as_plain_dict(ProfileConfig())
    config["dataset"] |= {"workers": 3}
    config["model"] |= {"weights": "/w/LibreYOLO9t.pt"}
    why = "knee: batch 24: 41.0 ± 0.3 img/s; 32 adds +1.2 %,\nnot significant (Welch p 0.41)"
    return tuned_text(config, batch=batch, imgsz=imgsz, amp=True, threads=threads, why=why)


def test_the_file_holds_the_settings_to_train_with_and_runs_nothing() -> None:
    text = _text(threads=2)
    lines = text.splitlines()
    assert lines[0] == "# @package _global_"
    assert lines[1] == (  # one comment line: the evidence's newline does not end it
        "# libreyolo-sweep hydra/sweeper=tune: knee: batch 24: 41.0 ± 0.3 img/s; 32 adds "
        "+1.2 %, not significant (Welch p 0.41)"
    )
    assert yaml.safe_load(text) == {
        "batch": 24,
        "imgsz": 320,
        "amp": True,
        "threads": 2,
        "dataset": {"name_or_path": "synthetic", "workers": 3},
        "model": {"family": "yolo9", "size": None, "weights": "/w/LibreYOLO9t.pt"},
    }
    assert "_target_" not in text
    line = train_settings(batch=24, imgsz=320, amp=True, threads=None, workers=3)
    assert line == "batch=24 imgsz=320 amp=true workers=3"


def test_on_several_ranks_the_file_and_the_line_carry_the_ranks_of_the_global_batch() -> None:
    config = as_plain_dict(ProfileConfig())
    config["device"] = {"name": "cpu", "nproc": 2}
    text = tuned_text(config, batch=8, imgsz=128, amp=False, threads=None, why="maxfit: b8")
    assert yaml.safe_load(text)["device"] == {"name": "cpu", "nproc": 2}
    world = {"name": "cpu", "nproc": 2}
    line = train_settings(batch=8, imgsz=128, amp=False, threads=None, workers=0, world=world)
    assert line == (
        "batch=8 imgsz=128 amp=false workers=0 device=cpu; the global batch over 2 CPU ranks, "
        "which libreyolo 1.6.0 does not train (its SyncBatchNorm needs GPUs): on GPUs, measure "
        "--device 0,1"
    )
    gpus = {"name": "0,1", "nproc": 1}
    line = train_settings(batch=64, imgsz=640, amp=True, threads=None, workers=8, world=gpus)
    assert line == "batch=64 imgsz=640 amp=true workers=8 device=0,1"
    config["device"] = {"name": "cpu", "nproc": 1}  # one process: the machine's own, left out
    assert "device" not in yaml.safe_load(_tuned(config))


def _tuned(config: dict[str, object]) -> str:
    return tuned_text(config, batch=8, imgsz=128, amp=False, threads=None, why="maxfit: b8")


def test_the_file_composes_for_libreyolo_profile_and_libreyolo_sweep(tmp_path: Path) -> None:
    conf = tmp_path / "conf"
    (conf / "experiment").mkdir(parents=True)
    (conf / "experiment" / "tuned.yaml").write_text(_text(), encoding="utf-8")
    config_flags = ["--config-dir", str(conf), "--config", "experiment/tuned"]
    profile = invoke(["profile", "run", "synthetic", *config_flags, "--print-config", "--json"])
    assert profile.status == 0, profile.stderr
    config = profile.json()
    assert (config["batch"], config["imgsz"], config["dataset"]["workers"]) == (24, 320, 3)
    experiment = ["--config-dir", str(conf), "+experiment=tuned"]
    sweep = subprocess.run(
        [sys.executable, "-m", "libreyolo.sweep", *experiment, "--cfg", "job"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert sweep.returncode == 0, sweep.stderr
    job = yaml.safe_load(sweep.stdout)
    assert (job["batch"], job["imgsz"], job["dataset"]["workers"]) == (24, 320, 3)
    assert job["model"]["weights"] == "/w/LibreYOLO9t.pt"


@pytest.mark.parametrize(
    ("point", "batch", "num_series", "name"),
    [
        ("b32_s640_amp1", 32, 1, "tuned.yaml"),
        ("b32_s640_amp1", 32, 2, "tuned_s640_amp1.yaml"),
        ("b8_s320_amp0_t2_model-yolox_n", 8, 3, "tuned_s320_amp0_t2_model-yolox_n.yaml"),
        ("p3", 8, 2, "tuned_2.yaml"),  # a folder template of the user's: numbered
        ("b8_../../x", 8, 2, "tuned_x.yaml"),  # never a path
    ],
)
def test_each_series_file_is_named_by_its_values(
    point: str, batch: int, num_series: int, name: str
) -> None:
    assert tuned_name(point, batch, index=1, num_series=num_series) == name


def test_a_search_replaces_its_own_files_and_never_another(tmp_path: Path) -> None:
    write_tuned(tmp_path, {"tuned_s320_amp1.yaml": _text(), "tuned_s640_amp1.yaml": _text()})
    assert is_tuned_config(tmp_path / "tuned_s640_amp1.yaml")
    (tmp_path / "tuned_mine.yaml").write_text("batch: 1\n", encoding="utf-8")
    write_tuned(tmp_path, {"tuned.yaml": _text(batch=8)})  # one series now
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tuned.yaml", "tuned_mine.yaml"]
    assert yaml.safe_load((tmp_path / "tuned.yaml").read_text(encoding="utf-8"))["batch"] == 8
    with pytest.raises(UsageError, match=r"tuned_mine\.yaml: libreyolo-sweep did not write it"):
        refuse_foreign_tune(tmp_path)
    (tmp_path / "tuned_mine.yaml").unlink()
    refuse_foreign_tune(tmp_path)
    shutil.copy(tmp_path / "tuned.yaml", tmp_path / "tune.json")  # not a tune record
    with pytest.raises(UsageError, match=r"tune\.json: libreyolo-sweep did not write it"):
        refuse_foreign_tune(tmp_path)
    refuse_foreign(tmp_path)  # a grid or a report writes neither file: none of its business


def test_a_search_into_a_folder_with_a_foreign_tune_json_is_refused(tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    (sweep / "tune.json").write_text("precious", encoding="utf-8")
    argv = tune_argv(sweep, "tune.goal=maxfit")
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        f"refusing to replace {sweep / 'tune.json'}: libreyolo-sweep did not write it "
        "(move it away, or choose another hydra.sweep.dir)\n"
    )
    assert (sweep / "tune.json").read_text(encoding="utf-8") == "precious"
    assert not (sweep / "b1_s64_amp1").exists()  # nothing measured
