"""A tune search's prior (`sweep.tune_prior`, `measure.budget_prior`): the batch the probe steps
predict under `tune.memory_budget_mb` before the first point, only where they can predict it,
and a warning (never a failed search) where they cannot."""

from __future__ import annotations

import dataclasses
import io
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import msgspec
import pytest

from libreyolo.config.compose import as_plain_dict
from libreyolo.config.schema import DeviceConfig, ExecConfig, ExecMode, mode_defaults
from libreyolo.document.json_value import JsonObject
from libreyolo.document.tune_model import TunePrior
from libreyolo.sweep import prior_probe, tune_prior
from tests.sweep.helpers import CHECKPOINT


def _config(**changes: Any) -> JsonObject:
    settings: dict[str, Any] = {"device": DeviceConfig(name="cpu"), "imgsz": 128} | changes
    cfg = dataclasses.replace(mode_defaults("run"), **settings)
    plain = as_plain_dict(cfg)
    plain["tune"]["memory_budget_mb"] = 2600.0  # type: ignore[index]
    plain["model"]["weights"] = str(CHECKPOINT)  # type: ignore[index]
    plain["dataset"]["workers"] = 0  # type: ignore[index]
    return plain


def test_only_our_eager_cpu_training_under_a_budget_has_a_prior() -> None:
    assert tune_prior.wants_prior(_config())
    unbudgeted = _config()
    unbudgeted["tune"]["memory_budget_mb"] = None  # type: ignore[index]
    assert not tune_prior.wants_prior(unbudgeted)
    assert not tune_prior.wants_prior(_config(device=DeviceConfig(name="0")))
    assert not tune_prior.wants_prior(_config(exec=ExecConfig(name=ExecMode.compile)))
    assert not tune_prior.wants_prior(_config(trainer="/opt/v16/bin/python"))
    inference = _config()
    inference["mode"] = "infer"
    assert not tune_prior.wants_prior(inference)


def test_the_probe_predicts_a_batch_under_the_budget_in_a_process_of_its_own() -> None:
    """The real probe process on the fixture checkpoint: a batch whose predicted peak is
    under the budget, anchored above a fresh process's start; a budget under the anchor
    predicts not one image (0), which the search does not take as an answer."""
    prior = tune_prior.series_prior(_config(), 2600.0, "imgsz=128")
    assert prior is not None
    assert prior.batch > 4  # batch 4's step was the anchor, well under 2.6 GB at 128 px
    assert prior.anchor_mb < prior.predicted_mb <= 2600.0
    assert 0 < prior.probe_s < tune_prior.PRIOR_TIMEOUT_S
    tight = tune_prior.series_prior(_config(), prior.anchor_mb / 4, "imgsz=128")
    assert tight is not None and tight.batch == 0


def _answer(
    monkeypatch: pytest.MonkeyPatch, run: Callable[..., subprocess.CompletedProcess[bytes]]
) -> None:
    monkeypatch.setattr(tune_prior.subprocess, "run", run)


def _done(code: int, stdout: bytes = b"", stderr: bytes = b"") -> Callable[..., Any]:
    return lambda argv, **_: subprocess.CompletedProcess(argv, code, stdout, stderr)


def _timeout(argv: list[str], **kwargs: Any) -> Any:
    raise subprocess.TimeoutExpired(argv, kwargs["timeout"])


def _missing(argv: list[str], **_: Any) -> Any:
    raise FileNotFoundError(2, "No such file or directory")


@pytest.mark.parametrize(
    ("run", "why"),
    [
        (
            _done(1, stderr=b"loading\nNoProfileError: the probe steps' memory did not grow\n"),
            "NoProfileError: the probe steps' memory did not grow",
        ),
        (_done(-9), "the probe exited -9"),
        (_done(0, stdout=b"not json"), "the probe's answer is not a prior"),
        (_done(0, stdout=b"[13]"), "the probe's answer is not a prior (not an object)"),
        (
            _done(0, stdout=b'{"batch": -3, "predicted_mb": 1, "anchor_mb": 1, "probe_s": 1}'),
            "the probe's answer is not a prior",
        ),
        (_timeout, f"the probe steps ran past {tune_prior.PRIOR_TIMEOUT_S:g} s"),
        (_missing, "cannot start the probe (No such file or directory)"),
    ],
)
def test_no_prior_is_a_warning_and_the_search_goes_on_without_one(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    run: Callable[..., Any],
    why: str,
) -> None:
    _answer(monkeypatch, run)
    assert tune_prior.series_prior(_config(), 2600.0, "imgsz=128") is None
    (line,) = capsys.readouterr().err.splitlines()
    head = "warning: imgsz=128: no memory prediction before its first point"
    assert line.startswith(f"{head} ({why}")
    assert line.endswith("; it is searched without one")


def test_a_prior_that_is_one_decodes(monkeypatch: pytest.MonkeyPatch) -> None:
    answer = TunePrior(batch=13, predicted_mb=2474.7, anchor_mb=1071.5, probe_s=4.3)
    _answer(monkeypatch, _done(0, stdout=msgspec.json.encode(answer)))
    assert tune_prior.series_prior(_config(), 2600.0, "imgsz=128") == answer


@pytest.mark.parametrize(
    ("argv", "stdin", "why"),
    [
        (["2600"], b"{not json", "the config on stdin is not a resolved config (JSON is malformed"),
        (["2600"], b"[1, 2]", "the config on stdin is not a JSON object"),
        (["2600"], b'{"no_such_key": 1}', "the config on stdin is not a resolved config ("),
        ([], b"{}", "takes one memory budget in MB (got 0 arguments)"),
        (["lots"], b"{}", ": 'lots' is not a number of MB"),
    ],
)
def test_the_probe_process_refuses_bad_input_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    stdin: bytes,
    why: str,
) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
    with pytest.raises(SystemExit) as ended:
        prior_probe.main(argv)
    assert ended.value.code == 2
    out = capsys.readouterr()
    assert out.out == ""
    (line,) = out.err.splitlines()
    assert line.startswith("python -m libreyolo.sweep.prior_probe") and why in line


def test_the_prior_is_said_as_a_prediction_where_the_search_is_summed_up() -> None:
    from libreyolo.render.tune_text import prior_line

    said = prior_line(TunePrior(batch=13, predicted_mb=2489.4, anchor_mb=1086.0, probe_s=4.3))
    assert said == (
        "prior: batch 13 predicted under the budget (peak RSS 2489 MB), from two probe steps in 4 s"
    )
    none = prior_line(TunePrior(batch=0, predicted_mb=1100.0, anchor_mb=1086.0, probe_s=3.6))
    assert none == "prior: not one image predicted under the budget, from two probe steps in 4 s"
