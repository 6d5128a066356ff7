"""An MLflow export that fails ends every run it started FAILED (read back with MLflow's own
client), and a tracking server that cannot be reached is given up on within a bound, in one
line with the right status."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf

from libreyolo.analysis.tracked import TrackedRun
from libreyolo.boundary.output import Output
from libreyolo.errors import ProfileError
from libreyolo.sweep.tracking_callbacks import MlflowCallback, run_queued
from libreyolo.tracking.mlflow_http import HTTP_BOUNDS
from libreyolo.tracking.mlflow_sink import log_mlflow
from tests.conftest import invoke
from tests.tracking.conftest import POINTS, ROOT
from tests.tracking.stores import runs_by_name

PROFILE = ROOT / "tests" / "fixtures" / "docs" / "train_yolo9t_cpu_trimmed.profile.json"
HINT = (
    "(start the server or fix the URI; set MLFLOW_HTTP_REQUEST_TIMEOUT or "
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES to wait longer)"
)
HANG_GUARD_S = 60  # far above the 15 s bound, far below MLflow's own 4 minutes


@pytest.fixture
def closed_port() -> int:
    """A localhost port nothing listens on: connecting is refused at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A localhost port that accepts connections (the kernel's backlog) and never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        yield int(sock.getsockname()[1])


@pytest.fixture
def no_user_http_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in HTTP_BOUNDS:
        monkeypatch.delenv(name, raising=False)


def _profile_with_override(tmp_path: Path, override: str) -> Path:
    """The trimmed training profile, made with one more override (which becomes a param)."""
    doc = json.loads(PROFILE.read_text())
    doc["run"]["overrides"].append(override)
    path = tmp_path / "bad" / "profile.json"
    path.parent.mkdir()
    path.write_text(json.dumps(doc))
    return path


def _statuses(client: Any, experiment: str = "libreyolo") -> dict[str, str]:
    return {name: run.info.status for name, run in runs_by_name(client, experiment).items()}


def _log_cli(
    uri: str, env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], float]:
    """`libreyolo profile log` of the 1.6.0 profile to `uri` in a process of its own, with no
    MLflow setting of the caller's but `env`; and the seconds it took."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    base["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), base.get("PYTHONPATH")]))
    profile = ROOT / "tests" / "fixtures" / "reference_v1" / "infer_b1.profile.json"
    argv = [sys.executable, "-m", "libreyolo", "profile", "log", str(profile), "--mlflow", uri]
    start = time.monotonic()
    proc = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        env={**base, **(env or {})},
        cwd=ROOT,
        timeout=HANG_GUARD_S,
        check=False,
    )
    return proc, time.monotonic() - start


@pytest.mark.parametrize(
    ("override", "logged"),
    [
        ("a/../b=hk", "a/__/b"),
        ("/x//y/=hk", "x/y"),
        (".../c=hk", "_.../c"),
        ("k" * 300 + "=hk", None),
    ],
    ids=["dotdot", "slashes", "dots", "too long"],
)
def test_a_key_mlflow_would_refuse_is_logged_as_one_it_takes(
    tmp_path: Path, mlflow_client: Any, override: str, logged: str | None
) -> None:
    # Such a key made MLflow's store refuse the whole run (left RUNNING, before the fix).
    profile = _profile_with_override(tmp_path, override)
    uri = f"file:{tmp_path / 'mlruns'}"
    result = invoke(["profile", "log", str(profile), "--mlflow", uri])
    assert result.status == 0, result.stderr
    assert _statuses(mlflow_client(uri)) == {"bad": "FINISHED"}
    params = runs_by_name(mlflow_client(uri), "libreyolo")["bad"].data.params
    keys = [key for key in params if params[key] == "hk"]
    assert len(keys) == 1 and (logged is None or keys == [logged])
    assert len(keys[0]) == 250 if logged is None else True


def test_a_failure_mid_sweep_ends_the_point_and_the_sweep_failed(
    tmp_path: Path, mlflow_client: Any
) -> None:
    def run(name: str, params: dict[str, str]) -> TrackedRun:
        return TrackedRun(name, 0, "ok", None, params, {"img_per_s": 1.0}, ())

    uri = f"file:{tmp_path / 'mlruns'}"
    runs = [run("p1", {"batch": "1"}), run("p2", {"k" * 300: "1"}), run("p3", {"batch": "3"})]
    with pytest.raises(ProfileError) as caught:
        log_mlflow(uri, "e", runs, "sweep", [])
    # p1 was logged before the failure; p3 was never started.
    assert _statuses(mlflow_client(uri), "e") == {
        "sweep": "FAILED",
        "p1": "FINISHED",
        "p2": "FAILED",
    }
    assert caught.value.message.startswith(
        f"MLflow at {uri} failed on run 'p2': 'Param key' exceeds the maximum length of 250"
    )


def test_an_interrupt_mid_export_ends_the_run_failed(
    reference_v1: Path, tmp_path: Path, mlflow_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mlflow.tracking import MlflowClient

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(MlflowClient, "log_artifact", interrupted)
    uri = f"file:{tmp_path / 'mlruns'}"
    result = invoke(
        ["profile", "log", str(reference_v1 / "infer_b1.profile.json"), "--mlflow", uri]
    )
    assert result.status == 130 and result.stderr == "interrupted\n"
    assert _statuses(mlflow_client(uri)) == {"infer_b1": "FAILED"}


def test_an_error_from_outside_mlflow_mid_export_ends_the_run_failed(
    reference_v1: Path, tmp_path: Path, mlflow_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An artifact upload raises requests' own HTTPError, not an MlflowException."""
    from mlflow.tracking import MlflowClient
    from requests.exceptions import HTTPError

    def server_error(*args: object, **kwargs: object) -> None:
        raise HTTPError("500 Server Error: INTERNAL SERVER ERROR")

    monkeypatch.setattr(MlflowClient, "log_artifact", server_error)
    uri = f"file:{tmp_path / 'mlruns'}"
    result = invoke(
        ["profile", "log", str(reference_v1 / "infer_b1.profile.json"), "--mlflow", uri]
    )
    assert result.status == 1
    assert result.stderr == (
        f"MLflow at {uri} failed on run 'infer_b1': 500 Server Error: INTERNAL SERVER ERROR; "
        "its open runs ended FAILED\n"
    )
    assert _statuses(mlflow_client(uri)) == {"infer_b1": "FAILED"}


def test_a_run_that_cannot_be_ended_is_named_in_the_line(
    reference_v1: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient

    def refuse(what: str) -> Any:
        def raiser(*args: object, **kwargs: object) -> None:
            raise MlflowException(what)

        return raiser

    monkeypatch.setattr(MlflowClient, "log_batch", refuse("batch refused"))
    monkeypatch.setattr(MlflowClient, "set_terminated", refuse("store gone"))
    uri = f"file:{tmp_path / 'mlruns'}"
    result = invoke(
        ["profile", "log", str(reference_v1 / "infer_b1.profile.json"), "--mlflow", uri]
    )
    assert result.status == 1
    assert result.stderr == (
        f"MLflow at {uri} failed on run 'infer_b1': batch refused; "
        "its open runs not ended: store gone\n"
    )


def test_a_refused_connection_is_given_up_within_the_bound(closed_port: int) -> None:
    uri = f"http://127.0.0.1:{closed_port}"
    proc, elapsed_s = _log_cli(uri)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == (
        f"cannot reach MLflow at {uri}: connection refused, gave up after 3 tries "
        f"within 15 s {HINT}\n"
    )
    assert elapsed_s < HANG_GUARD_S


def test_a_server_that_never_answers_is_given_up_on_the_users_timeout(silent_port: int) -> None:
    uri = f"http://127.0.0.1:{silent_port}"
    proc, elapsed_s = _log_cli(uri, {"MLFLOW_HTTP_REQUEST_TIMEOUT": "1"})
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == (
        f"cannot reach MLflow at {uri}: no answer within 1 s, gave up after 3 tries "
        f"within 6 s {HINT}\n"
    )
    assert elapsed_s < HANG_GUARD_S


def test_the_users_own_setting_wins_and_the_bounds_are_put_back(
    closed_port: int,
    reference_v1: Path,
    no_user_http_settings: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    uri = f"http://127.0.0.1:{closed_port}"
    result = invoke(
        ["profile", "log", str(reference_v1 / "infer_b1.profile.json"), "--mlflow", uri]
    )
    assert result.status == 2
    assert result.stderr == (
        f"cannot reach MLflow at {uri}: connection refused, gave up after 1 try within 4 s {HINT}\n"
    )
    # The process goes on (a sweep, a test run) with the environment it had.
    assert os.environ["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] == "0"
    assert [name for name in HTTP_BOUNDS if name in os.environ] == [
        "MLFLOW_HTTP_REQUEST_MAX_RETRIES"
    ]


def _copy(sweep: Path, to: Path) -> Any:
    shutil.copytree(sweep, to, ignore=shutil.ignore_patterns("mlruns"))
    return OmegaConf.create({"hydra": {"sweep": {"dir": str(to)}}})


@pytest.mark.slow  # the session's 2-point sweep
def test_the_mlflow_callback_gives_up_on_a_closed_port(
    tracked_sweep: Path,
    tmp_path: Path,
    closed_port: int,
    no_user_http_settings: None,
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = _copy(tracked_sweep, tmp_path / "sweep")
    uri = f"http://127.0.0.1:{closed_port}"
    MlflowCallback(tracking_uri=uri).on_multirun_end(config)
    start = time.monotonic()
    run_queued(Output.plain())  # what main does once the report is written
    assert time.monotonic() - start < HANG_GUARD_S
    assert capsys.readouterr().err == (
        f"warning: mlflow: nothing logged: cannot reach MLflow at {uri}: connection refused, "
        f"gave up after 3 tries within 15 s {HINT}\n"
    )


@pytest.mark.slow  # the session's 2-point sweep
def test_the_mlflow_callback_ends_its_runs_failed_and_says_so(
    tracked_sweep: Path,
    tmp_path: Path,
    mlflow_client: Any,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient

    real = MlflowClient.log_batch
    calls: list[str] = []

    def second_refused(self: Any, run_id: str, *args: Any, **kwargs: Any) -> Any:
        calls.append(run_id)
        if len(calls) == 2:
            raise MlflowException("refused by the store")
        return real(self, run_id, *args, **kwargs)

    monkeypatch.setattr(MlflowClient, "log_batch", second_refused)
    config = _copy(tracked_sweep, tmp_path / "sweep")
    uri = f"file:{tmp_path / 'mlruns'}"
    MlflowCallback(tracking_uri=uri).on_multirun_end(config)
    run_queued(Output.plain())
    assert capsys.readouterr().err == (
        f"warning: mlflow: MLflow at {uri} failed on run '{POINTS[1]}': refused by the store; "
        "its open runs ended FAILED\n"
    )
    assert _statuses(mlflow_client(uri)) == {
        "sweep": "FAILED",  # the parent run, named after the sweep's folder
        POINTS[0]: "FINISHED",
        POINTS[1]: "FAILED",
    }
