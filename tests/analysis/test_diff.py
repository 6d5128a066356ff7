"""diff_profiles: per-step changes of phases, ops and kernels between two profiles."""

from __future__ import annotations

from pathlib import Path

import pytest

from libreyolo.analysis.compare import compare
from libreyolo.analysis.diff import ProfileDiff, diff_profiles
from libreyolo.cli.sources import open_profile
from libreyolo.document.model import (
    KernelStat,
    OpStat,
    PhaseStat,
    Profile,
    RunInfo,
    Scalar,
    Tool,
    TraceAnalysis,
)
from tests.fixture_files import YOLO9T, fixture_file
from tests.quiet import invoke_quietly

CHECKPOINT = fixture_file(YOLO9T)
BATCH_NORM_OPS = {"aten::batch_norm", "aten::_batch_norm_impl_index", "aten::native_batch_norm"}


def _profile(
    *,
    steps: int = 2,
    step_ms: float | None = 10.0,
    phases: tuple[PhaseStat, ...] = (),
    ops: tuple[OpStat, ...] = (),
    kernels: tuple[KernelStat, ...] = (),
    has_gpu: bool = False,
) -> Profile:
    trace = TraceAnalysis(
        source="profiler_steps",
        num_steps=steps,
        window_ms=100.0,
        has_gpu=has_gpu,
        phases=list(phases),
        ops=list(ops),
        kernels=list(kernels),
    )
    metrics: dict[str, Scalar] = {} if step_ms is None else {"step_ms": step_ms}
    return Profile(
        kind="infer",
        created=None,
        tool=Tool(version="0"),
        run=RunInfo(mode="inference"),
        trace=trace,
        metrics=metrics,
    )


def _op(name: str, self_ms: float | None, calls: int = 2) -> OpStat:
    return OpStat(name=name, self_ms=self_ms, total_ms=2 * (self_ms or 1.0), num_calls=calls)


def _kernel(name: str, ms: float, calls: int = 2, op: str | None = None) -> KernelStat:
    return KernelStat(
        name=name, category="gemm / conv", tensor_core=True, total_ms=ms, num_calls=calls, op=op
    )


def test_diff_divides_each_side_by_its_own_step_count() -> None:
    before = _profile(steps=2, ops=(_op("aten::conv2d", 4.0, calls=4),))
    after = _profile(steps=4, ops=(_op("aten::conv2d", 12.0, calls=8),))
    (row,) = diff_profiles(before, after).ops.changed
    assert (row.ms_before, row.ms_after, row.change_ms) == (2.0, 3.0, 1.0)
    assert (row.calls_before, row.calls_after) == (2.0, 2.0)


def test_diff_phase_share_is_of_the_step_change() -> None:
    before = _profile(step_ms=60.0, phases=(PhaseStat(name="backward", wall_ms_per_step=20.0),))
    after = _profile(step_ms=112.0, phases=(PhaseStat(name="backward", wall_ms_per_step=61.0),))
    diff = diff_profiles(before, after)
    (phase,) = diff.phases
    assert diff.total_change_ms == 52.0 and diff.total_from == "step_ms"
    assert phase.wall_change_ms == 41.0
    assert phase.share_of_change == pytest.approx(41 / 52)


def test_diff_without_step_ms_totals_the_phase_walls() -> None:
    phases_a = (
        PhaseStat(name="a", wall_ms_per_step=1.0),
        PhaseStat(name="b", wall_ms_per_step=2.0),
    )
    phases_b = (
        PhaseStat(name="a", wall_ms_per_step=4.0),
        PhaseStat(name="b", wall_ms_per_step=1.0),
    )
    diff = diff_profiles(_profile(step_ms=None, phases=phases_a), _profile(phases=phases_b))
    assert (diff.total_change_ms, diff.total_from) == (2.0, "phases")
    assert [p.share_of_change for p in diff.phases] == [1.5, -0.5]


def test_diff_keeps_values_one_side_lacks_unknown() -> None:
    before = _profile(phases=(PhaseStat(name="forward", wall_ms_per_step=5.0),))
    after = _profile(phases=(PhaseStat(name="forward"), PhaseStat(name="nms", cpu_ms=2.0)))
    diff = diff_profiles(before, after)
    forward, nms = diff.phases
    assert (forward.wall_ms_after, forward.wall_change_ms, forward.share_of_change) == (
        None,
        None,
        None,
    )
    assert (nms.wall_ms_before, nms.wall_ms_after) == (None, 1.0)
    assert forward.gpu_ms_before is None  # CPU-only: no GPU time, not 0 ms of it


def test_diff_drops_a_phase_known_on_neither_side() -> None:
    phase = (PhaseStat(name="forward"),)
    assert diff_profiles(_profile(phases=phase), _profile(phases=phase)).phases == ()


def test_diff_ops_fall_back_to_total_time_when_a_side_lacks_self_time() -> None:
    before = _profile(ops=(_op("aten::add", None),))
    after = _profile(ops=(_op("aten::add", 3.0),))
    diff = diff_profiles(before, after)
    assert diff.op_time == "total"
    assert (diff.ops.changed[0].ms_before, diff.ops.changed[0].ms_after) == (1.0, 3.0)


def test_diff_lists_new_and_gone_rows_and_cuts_to_top() -> None:
    before = _profile(ops=(*(_op(f"op{i}", float(i)) for i in range(5)), _op("gone", 1.0)))
    after = _profile(ops=(*(_op(f"op{i}", 2.0 * i) for i in range(5)), _op("new", 1.0)))
    ops = diff_profiles(before, after, top=2).ops
    assert [r.name for r in ops.changed] == ["op4", "op3"]
    assert (ops.num_matched, ops.num_new, ops.num_gone) == (5, 1, 1)
    assert [(r.name, r.status, r.ms_before) for r in ops.new] == [("new", "new", None)]
    assert [(r.name, r.status, r.ms_after) for r in ops.gone] == [("gone", "gone", None)]


def test_diff_merges_kernel_variants_before_matching() -> None:
    tile = "sm80_xmma_fprop_implicit_gemm_tilesize{}_stage4_execute_kernel"
    before = _profile(
        has_gpu=True,
        kernels=(_kernel(tile.format("128x128x16"), 4.0), _kernel(tile.format("64x64x32"), 2.0)),
    )
    after = _profile(has_gpu=True, kernels=(_kernel(tile.format("256x64x32"), 2.0),))
    kernels = diff_profiles(before, after).kernels
    assert kernels is not None and kernels.num_new == kernels.num_gone == 0
    (row,) = kernels.changed
    assert (row.ms_before, row.ms_after, row.num_merged) == (3.0, 1.0, (2, 1))


def test_diff_pairs_a_renamed_kernel_by_the_op_that_launched_it() -> None:
    conv, mm = "aten::cudnn_convolution", "aten::mm"
    before = _profile(
        has_gpu=True,
        kernels=(
            _kernel("sm80_xmma_fprop_implicit_gemm", 6.0, op=conv),
            _kernel("cudnn::winograd_small", 2.0, op=conv),
            _kernel("ampere_sgemm_nn", 1.0, op=mm),
            _kernel("orphan_kernel", 1.0),
        ),
    )
    after = _profile(
        has_gpu=True,
        kernels=(
            _kernel("implicit_convolve_sgemm", 8.0, op=conv),
            _kernel("other_kernel", 1.0),  # no op: never paired
        ),
    )
    kernels = diff_profiles(before, after).kernels
    assert kernels is not None
    (row,) = kernels.changed
    assert row.matched_by == "op" and row.status == "changed"
    assert row.name == (
        "xmma_fprop_implicit_gemm -> implicit_convolve_sgemm (same op aten::cudnn_convolution)"
    )
    assert (row.ms_before, row.ms_after, row.change_ms) == (3.0, 4.0, 1.0)
    gone = ["cudnn::winograd_small", "orphan_kernel", "sgemm_nn"]  # normalised, largest first
    assert [r.name for r in kernels.gone] == gone
    assert [r.name for r in kernels.new] == ["other_kernel"]
    assert (kernels.num_matched, kernels.num_new, kernels.num_gone) == (1, 1, 3)


def test_diff_matches_by_name_before_op() -> None:
    op = "aten::addmm"
    before = _profile(has_gpu=True, kernels=(_kernel("gemm_a", 2.0, op=op),))
    after = _profile(
        has_gpu=True, kernels=(_kernel("gemm_a", 3.0, op=op), _kernel("gemm_b", 1.0, op=op))
    )
    kernels = diff_profiles(before, after).kernels
    assert kernels is not None
    assert [(r.name, r.matched_by) for r in kernels.changed] == [("gemm_a", "name")]
    assert [r.name for r in kernels.new] == ["gemm_b"]


def test_diff_cpu_only_has_no_kernel_section() -> None:
    diff = diff_profiles(_profile(), _profile())
    assert diff.kernels is None and not diff.has_gpu


def test_compare_carries_the_diff_with_its_top() -> None:
    ops = tuple(_op(f"op{i}", float(i)) for i in range(5))
    result = compare(_profile(ops=ops), _profile(ops=ops), top=3)
    assert isinstance(result.diff, ProfileDiff) and len(result.diff.ops.changed) == 3


# Known answers from real CPU measurements of the fixture checkpoint.


def _measure(root: Path, name: str, *flags: str) -> Profile:
    project = root / name
    argv = ["profile", "infer", "--device", "cpu", "--warmup", "1", "--runs", "4"]
    path = project / "infer" / "profile.json"
    argv += ["--weights", str(CHECKPOINT), "--project", str(project), *flags]
    result = invoke_quietly(argv, path)  # starved numbers would diff the host's load
    assert result.status == 0, result.stderr
    return open_profile(str(path))


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Profile]:
    root = tmp_path_factory.mktemp("diff")
    return {
        "128": _measure(root, "s128", "--imgsz", "128", "--fuse", "bn"),
        "256": _measure(root, "s256", "--imgsz", "256", "--fuse", "bn"),
        "unfused": _measure(root, "none", "--imgsz", "128", "--fuse", "none"),
    }


@pytest.mark.slow
def test_diff_of_a_larger_input_is_mostly_forward_and_convolution(measured) -> None:
    diff = diff_profiles(measured["128"], measured["256"], top=5)
    changes = {p.phase: p.wall_change_ms or 0.0 for p in diff.phases}
    assert max(changes, key=lambda name: abs(changes[name])) == "forward"
    assert changes["forward"] > 0.5 * sum(abs(c) for c in changes.values())
    assert any("conv" in row.name for row in diff.ops.changed)
    assert diff.kernels is None


@pytest.mark.slow
def test_diff_of_folding_batch_norm_lists_the_batch_norm_ops_gone(measured) -> None:
    diff = diff_profiles(measured["unfused"], measured["128"], top=50)
    gone = {row.name for row in diff.ops.gone}
    assert BATCH_NORM_OPS & gone
    assert not BATCH_NORM_OPS & {row.name for row in diff.ops.new + diff.ops.changed}
