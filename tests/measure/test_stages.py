"""Named stages: an unexpected failure becomes one line that names the stage."""

from __future__ import annotations

import pytest


def test_an_unexpected_failure_names_its_stage() -> None:
    from libreyolo.errors import ExitStatus, UsageError
    from libreyolo.measure.stages import StageError, stage

    seen: list[str] = []
    with (
        pytest.raises(StageError) as caught,
        stage("load weights", lambda s, d, t: seen.append(s), hint="check --weights"),
    ):
        raise RuntimeError("size mismatch for head.cls")
    assert (
        str(caught.value) == "stage 'load weights' failed: RuntimeError: size mismatch for head.cls"
    )
    assert caught.value.hint == "check --weights" and caught.value.status == ExitStatus.NO_PROFILE
    assert seen == ["load weights"]
    with pytest.raises(UsageError), stage("build data", None, hint="x"):
        raise UsageError("expected errors pass through unchanged")
