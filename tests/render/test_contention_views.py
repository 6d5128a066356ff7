"""How contention reads in `summary`, `compare`, `phases --json` and the run's outcome."""

from __future__ import annotations

import json

from libreyolo.analysis.compare import compare
from libreyolo.analysis.outcome import outcome
from libreyolo.analysis.phases import phase_breakdown
from libreyolo.analysis.summary import summarize
from libreyolo.render.jsondoc import to_json_text
from libreyolo.render.summary_text import CONTENDED_LINE
from libreyolo.render.text import to_lines
from tests.analysis.test_contention import _profile

BUSY = [20.0, 30.0, 22.0, 20.0, 2.0]  # wait per step; 20 ms on CPU each


def test_a_contended_summary_warns_names_the_steps_and_says_what_it_measured() -> None:
    lines = to_lines(summarize(_profile(BUSY)))
    assert "host     CPU wait 48% of runnable time (18.8 ms/step)  |  steal 0%" in lines
    assert (
        "         steps hit hardest: #1 waited 30.0 ms (60%), #2 waited 22.0 ms (52%), "
        "#0 waited 20.0 ms (50%)"
    ) in lines
    assert CONTENDED_LINE in lines
    verdict = next(line for line in lines if line.startswith(">> "))
    assert verdict.startswith(">> CONTENDED: threads waited 48% of their runnable time")
    assert (
        "   as measured on the busy host: no share of the step could be measured (inflated "
        "unevenly by the wait for a CPU: they name no bottleneck)" in lines
    )


def test_a_quiet_summary_has_the_host_line_and_no_warning() -> None:
    lines = to_lines(summarize(_profile([0.5] * 5)))
    assert "host     CPU wait 2% of runnable time (0.5 ms/step)  |  steal 0%" in lines
    assert CONTENDED_LINE not in lines
    assert not any("hit hardest" in line or "quiet host" in line for line in lines)


def test_unknown_contention_is_one_host_line() -> None:
    lines = to_lines(summarize(_profile([0.5], host=False)))
    assert (
        "host     contention unknown: this profile has no host samples (older file or a bare trace)"
        in lines
    )


def test_summary_json_carries_the_contention_block() -> None:
    doc = json.loads(to_json_text(summarize(_profile(BUSY))))
    block = doc["contention"]
    assert block["contended"] is True and block["cpu_wait_frac"] == 0.485  # 94 / (94 + 100)
    assert block["unknown"] is None
    assert [s["index"] for s in block["hardest_steps"]] == [1, 2, 0]
    assert set(block["hardest_steps"][0]) == {
        "index",
        "synced",
        "wall_ms",
        "cpu_ms",
        "cpu_wait_ms",
        "cpu_wait_frac",
    }
    assert doc["verdict"]["bound"] == "contended" and doc["verdict"]["quiet_bound"] is None
    assert doc["verdict"]["quiet_why"].endswith("they name no bottleneck)")


def test_phases_json_lists_every_sampled_step() -> None:
    doc = json.loads(to_json_text(phase_breakdown(_profile(BUSY))))
    assert [s["cpu_wait_ms"] for s in doc["steps"]] == BUSY
    assert doc["steps"][1]["cpu_wait_frac"] == 0.6


def test_compare_warns_that_a_contended_side_cannot_be_trusted() -> None:
    result = compare(_profile([0.5] * 5), _profile(BUSY))
    assert result.warnings == (
        "the after profile was measured on a contended host (threads waited 48% of their "
        "runnable time for a CPU): its times are inflated and the significance call cannot be "
        "trusted; measure it again on a quiet machine",
    )
    assert "CPU wait       2% -> 48% (+46.1 points)" in to_lines(result)  # points, not a ratio
    doc = json.loads(to_json_text(result, source=("a", "b")))
    assert doc["contended"] == {"before": False, "after": True, "change": None}


def test_the_run_outcome_says_contended_and_what_it_measured() -> None:
    result = outcome(_profile(BUSY), "p/profile.json", None)
    lines = to_lines(result)
    assert lines[2].startswith(">> CONTENDED: threads waited 48%")
    assert lines[3].startswith("   as measured on the busy host: ")
    doc = json.loads(to_json_text(result))
    assert (doc["contended"], doc["bound"], doc["quiet_bound"]) == (True, "contended", None)
    training = to_lines(outcome(_profile(BUSY, mode="training"), "p/profile.json", None))
    assert training[0].endswith("|  contended") and training[1].startswith(">> CONTENDED:")
