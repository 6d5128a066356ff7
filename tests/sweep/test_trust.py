"""A config file is code: the sweep refuses every `_target_` Hydra would instantiate (and a
logging config it would apply) but its own, unless the command line names it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from libreyolo.config.schema import register_schemas
from libreyolo.errors import UsageError
from libreyolo.sweep.trust import Trust, composed_hydra, split_trust_flags, untrusted

ROOT = Path(__file__).resolve().parents[2]
OURS = {"sweep_report": {"_target_": "libreyolo.sweep.app.SweepReportCallback"}}
PLUGINS = {
    "launcher": {"_target_": "hydra._internal.core_plugins.basic_launcher.BasicLauncher"},
    "sweeper": {"_target_": "hydra._internal.core_plugins.basic_sweeper.BasicSweeper"},
}


def _message(hydra: dict[str, object], trust: Trust | None = None) -> str | None:
    refusal = untrusted(hydra, trust or Trust())
    return None if refusal is None else refusal.message


def test_our_callback_and_the_plugins_pass() -> None:
    assert _message({"callbacks": OURS, **PLUGINS}) is None


@pytest.mark.parametrize(
    ("hydra", "path", "target"),
    [
        ({"callbacks": {"evil": {"_target_": "builtins.open"}}}, "callbacks.evil", "builtins.open"),
        (  # our name, someone else's code
            {"callbacks": {"sweep_report": {"_target_": "shutil.copyfile"}}},
            "callbacks.sweep_report",
            "shutil.copyfile",
        ),
        (  # nested in a launcher's settings: instantiated with the launcher
            {"launcher": {"ray": {"init": {"x": {"_target_": "os.system"}}}}},
            "launcher.ray.init.x",
            "os.system",
        ),
        (
            {"sweeper": {"params": [{"_target_": "builtins.exec"}]}},
            "sweeper.params[0]",
            "builtins.exec",
        ),
    ],
)
def test_any_other_target_is_refused(hydra: dict[str, object], path: str, target: str) -> None:
    assert _message(hydra) == (
        f"refusing to instantiate hydra.{path}._target_ = {target}: a config file's _target_ "
        "runs as code when the sweep starts"
    )
    assert _message(hydra, Trust(frozenset({target}))) is None  # named on the command line


def test_a_logging_config_is_refused_unless_allowed() -> None:
    handler = {"class": "logging.FileHandler", "filename": "/etc/passwd", "mode": "w"}
    hydra = {"job_logging": {"root": {"handlers": ["f"]}, "handlers": {"f": handler}}}
    assert _message(hydra) == (
        "refusing hydra.job_logging: a logging config can open any file for writing"
    )
    assert _message(hydra, Trust(logging=True)) is None
    assert _message({"job_logging": {"version": 1, "root": None}}) is None  # Hydra's `none`


def test_trust_flags_come_off_the_command_line() -> None:
    trust, rest = split_trust_flags(
        ["-m", "--allow-target", "a.B", "batch=1,2", "--allow-target=c.D", "--allow-logging-config"]
    )
    assert trust == Trust(frozenset({"a.B", "c.D"}), logging=True)
    assert rest == ["-m", "batch=1,2"]
    with pytest.raises(UsageError, match="--allow-target needs a dotted name"):
        split_trust_flags(["--allow-target"])


def _evil_experiment(tmp_path: Path, victim: Path) -> Path:
    conf = tmp_path / "conf"
    (conf / "experiment").mkdir(parents=True)
    (conf / "experiment" / "evil.yaml").write_text(
        "# @package _global_\n"
        "hydra:\n  callbacks:\n    evil:\n      _target_: builtins.open\n"
        f"      file: {victim}\n      mode: w\n",
        encoding="utf-8",
    )
    return conf


def test_the_composed_config_holds_what_an_experiment_adds(tmp_path: Path) -> None:
    register_schemas()
    conf = _evil_experiment(tmp_path, tmp_path / "victim.txt")
    hydra = composed_hydra(["-m", "--config-dir", str(conf), "+experiment=evil", "batch=1,2"])
    assert hydra is not None
    assert hydra["callbacks"]["evil"]["_target_"] == "builtins.open"
    assert hydra["callbacks"]["sweep_report"] == OURS["sweep_report"]
    assert composed_hydra(["--cfg", "job"]) is None  # no run: nothing is instantiated


def test_the_repos_own_experiments_pass() -> None:
    register_schemas()
    for argv in (
        ["-m", "--config-dir", str(ROOT / "conf"), "+experiment=deploy_grid", "device=cpu"],
        ["--config-dir", str(ROOT / "conf"), "--config-name", "tune_train"],
    ):
        hydra = composed_hydra(argv)
        assert hydra is not None and untrusted(hydra, Trust()) is None, argv


def test_a_sweep_with_a_foreign_callback_is_refused_before_anything_runs(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious", encoding="utf-8")
    conf = _evil_experiment(tmp_path, victim)
    sweep = tmp_path / "sweep"
    argv = [sys.executable, "-m", "libreyolo.sweep", "-m", "--config-dir", str(conf)]
    argv += ["+experiment=evil", "mode=infer", "device=cpu", f"hydra.sweep.dir={sweep}"]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == (
        "refusing to instantiate hydra.callbacks.evil._target_ = builtins.open: a config file's "
        "_target_ runs as code when the sweep starts (if you trust it, add --allow-target "
        "builtins.open)\n"
    )
    assert victim.read_text(encoding="utf-8") == "precious" and not sweep.exists()


@pytest.mark.parametrize(
    ("override", "line"),
    [
        (
            "device=0,1",
            "device=0,1: device is a config group and 0 is none of its options (choose from: "
            "cpu, cuda)",
        ),
        (
            "window=quick,3",
            "window=quick,3: window is a config group and 3 is none of its options (choose "
            "from: default, long, quick)",
        ),
    ],
)
def test_a_config_group_swept_over_no_option_names_is_one_line(override: str, line: str) -> None:
    from libreyolo.config.compose import ConfigError

    register_schemas()
    with pytest.raises(ConfigError) as refused:
        composed_hydra(["-m", override, "batch=2"])
    assert refused.value.message == line
    assert composed_hydra(["-m", "device=cpu,cuda", "batch=2"]) is not None  # option names
