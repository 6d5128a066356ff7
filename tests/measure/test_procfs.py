"""The /proc parsers and the reading-to-reading rules, on text recorded from Linux 6.x."""

from __future__ import annotations

import pytest

from libreyolo.measure.procfs import (
    CpuTicks,
    ThreadTimes,
    delta,
    parse_proc_stat,
    parse_running,
    parse_schedstat,
    steal_frac,
)

# /proc/<pid>/task/<tid>/schedstat of the main thread and the intra-op thread of one process,
# read at the start and the end of one measured step.
BEFORE = {
    (100, 100): "1475418117 10281331 295\n",
    (100, 101): "812004311 2005171 120\n",
    (100, 102): "3100 0 2\n",  # exits during the step
}
AFTER = {
    (100, 100): "1502418117 19281331 301\n",
    (100, 101): "838004311 5005171 131\n",
    (100, 103): "5000000 4000000 7\n",  # started during the step: no baseline
}
PROC_STAT = (
    "cpu  764615 19189 104474 794768 7952 0 720 842 0 0\n"
    "cpu0 255913 7407 36629 543688 1187 0 105 401 0 0\n"
    "intr 1234 0 0\n"
)


def _times(text: dict[tuple[int, int], str]) -> dict[tuple[int, int], ThreadTimes]:
    parsed = {key: parse_schedstat(line) for key, line in text.items()}
    return {key: times for key, times in parsed.items() if times is not None}


def test_schedstat_line_gives_on_cpu_and_wait_ns() -> None:
    assert parse_schedstat("1475418117 10281331 295\n") == ThreadTimes(1475418117, 10281331)


@pytest.mark.parametrize("text", ["", "\n", "12\n", "a b c\n", "-1 5 3\n"])
def test_schedstat_garbage_is_none(text: str) -> None:
    assert parse_schedstat(text) is None


def test_delta_sums_threads_present_in_both_readings() -> None:
    grown = delta(_times(BEFORE), _times(AFTER))
    # main: +27 ms on CPU, +9 ms waiting; intra-op: +26 ms, +3 ms. The exited thread's last
    # slice is lost and the new one has no baseline: neither counts.
    assert grown.on_cpu_ns == 27_000_000 + 26_000_000
    assert grown.wait_ns == 9_000_000 + 3_000_000
    assert grown.num_threads == 2


def test_a_reused_tid_whose_counters_went_back_is_a_new_thread() -> None:
    before = {(1, 7): ThreadTimes(9_000, 9_000)}
    after = {(1, 7): ThreadTimes(100, 50)}
    assert delta(before, after).num_threads == 0


def test_proc_stat_total_and_steal() -> None:
    ticks = parse_proc_stat(PROC_STAT)
    assert ticks == CpuTicks(
        total=764615 + 19189 + 104474 + 794768 + 7952 + 0 + 720 + 842, steal=842
    )


@pytest.mark.parametrize("text", ["", "cpu0 1 2 3 4 5 6 7 8\n", "cpu  1 2 3 4\n", "cpu  a b\n"])
def test_proc_stat_without_a_full_cpu_line_is_none(text: str) -> None:
    assert parse_proc_stat(text) is None


def test_steal_frac_over_the_window() -> None:
    assert steal_frac(CpuTicks(1000, 10), CpuTicks(1400, 50)) == pytest.approx(0.1)
    assert steal_frac(CpuTicks(1000, 10), CpuTicks(1000, 10)) is None  # no tick passed
    assert steal_frac(None, CpuTicks(1000, 10)) is None


def test_loadavg_running_count() -> None:
    assert parse_running("1.23 1.11 1.29 5/80 9295\n") == 5
    assert parse_running("1.23 1.11 1.29\n") is None
    assert parse_running("1.23 1.11 1.29 x/80 9295\n") is None
