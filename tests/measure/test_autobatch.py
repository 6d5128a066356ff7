"""AutoBatch's fit: a line through measured (batch, peak bytes) points, solved for 70 %."""

from __future__ import annotations

from libreyolo.measure.autobatch import MAX_BATCH, TARGET_SHARE, fit_batch

GB = 1_000_000_000


def test_fit_solves_the_line_for_the_target_share() -> None:
    points = [(1, 1 * GB + 200_000_000), (2, 1 * GB + 400_000_000), (4, 1 * GB + 800_000_000)]
    # 0.2 GB per image over a 1 GB base: 0.7 x 10 GB = 7 GB fits (7 - 1) / 0.2 = 30 images
    assert TARGET_SHARE == 0.70
    assert fit_batch(points, 10 * GB) == 30


def test_fit_never_returns_less_than_one_or_more_than_the_cap() -> None:
    assert fit_batch([(1, 9 * GB), (2, 18 * GB)], 10 * GB) == 1
    assert fit_batch([(1, 1000), (2, 1001)], 10 * GB) == MAX_BATCH


def test_fit_with_flat_or_single_points_keeps_what_ran() -> None:
    assert fit_batch([(1, GB), (2, GB), (4, GB)], 10 * GB) == 4
    assert fit_batch([(8, GB)], 10 * GB) == 8
    assert fit_batch([], 10 * GB) == 1
