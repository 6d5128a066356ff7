"""The execution record as the readers see it: `get`'s exec keys, the verdict's findings and
the summary's `exec` line, on profiles built here."""

from __future__ import annotations

import msgspec.structs

from libreyolo.analysis.build import finalize, read_older
from libreyolo.analysis.compare import compare
from libreyolo.analysis.exec_verdict import with_exec
from libreyolo.analysis.execution import KEYS, execution_metrics
from libreyolo.analysis.report import profile_report
from libreyolo.analysis.summary import summarize
from libreyolo.document.model import (
    Compiled,
    Execution,
    Exported,
    GraphCapture,
    Profile,
    Verdict,
)
from libreyolo.render.exec_text import exec_lines
from libreyolo.render.html.profile_page import profile_page
from libreyolo.render.jsondoc import to_jsonable
from libreyolo.render.summary_text import summary_lines
from tests.compute_profiles import gpu_profile
from tests.profiles import repeat_profile

COMPILED = Compiled(
    mode="default", backend="inductor", dynamic=False, compile_s=41.0, num_graphs=1,
    graph_breaks=0, warmup_recompiles=1, window_recompiles=0,
)  # fmt: skip
EXPORTED = Exported(
    export_s=1.12, cached=True, opset=17, exporter="torchscript", path="/tmp/m.onnx",
    onnxruntime="1.20.0", provider="CPUExecutionProvider", intra_op_threads=2, session_s=0.31,
)  # fmt: skip


def _ran(name: str, **records: object) -> Execution:
    return Execution(name=name, channels_last=False, torch="2.5.0", **records)  # type: ignore[arg-type]


def _with(execution: Execution | None, busy_share: float = 0.95) -> Profile:
    """The H200 training profile (host-bound at a low busy share) re-finalized as `execution`."""
    return finalize(
        msgspec.structs.replace(gpu_profile(busy_share=busy_share), execution=execution)
    )


def test_every_profile_has_the_exec_keys_null_where_not_its_mode() -> None:
    assert execution_metrics(None) == dict.fromkeys(KEYS)
    eager = _with(_ran("eager")).metrics
    assert {k: eager[k] for k in KEYS} == dict.fromkeys(KEYS) | {
        "exec": "eager",
        "channels_last": False,
    }
    compiled = execution_metrics(_ran("compile", compiled=COMPILED))
    assert (compiled["compile_s"], compiled["num_graphs"], compiled["graph_breaks"]) == (41.0, 1, 0)
    assert compiled["window_recompiles"] == 0 and compiled["export_s"] is None
    exported = execution_metrics(_ran("onnxruntime", exported=EXPORTED))
    assert (exported["export_s"], exported["onnx_provider"]) == (1.12, "CPUExecutionProvider")
    assert (
        execution_metrics(_ran("cudagraphs", graph=GraphCapture(capture_s=0.2)))["capture_s"] == 0.2
    )


def test_an_older_map_gets_the_keys_from_its_record_or_null() -> None:
    profile = _with(_ran("compile", compiled=COMPILED))
    older = msgspec.structs.replace(profile, metrics={"img_per_s": 200.0})
    assert read_older(older).metrics["compile_s"] == 41.0
    predates = msgspec.structs.replace(older, execution=None)
    assert read_older(predates).metrics["exec"] is None


def test_a_window_that_recompiled_is_not_a_steady_state() -> None:
    compiled = msgspec.structs.replace(COMPILED, window_recompiles=3)
    verdict = _with(_ran("compile", compiled=compiled)).verdict
    assert verdict is not None and verdict.bound == "compute"
    assert "the window recompiled 3 times, so it is not a steady state" in verdict.why
    assert verdict.evidence["window_recompiles"] == 3
    assert "TORCH_LOGS=recompiles" in verdict.levers[0]


def test_a_graph_broken_model_names_the_first_reason() -> None:
    broken = msgspec.structs.replace(
        COMPILED, num_graphs=3, graph_breaks=2, break_reasons=["Tensor.item() call", "print"]
    )
    verdict = _with(_ran("compile", compiled=broken)).verdict
    assert verdict is not None
    assert "graph-broken into 3 graphs (2 breaks); the first: Tensor.item() call" in verdict.why


def test_a_compiled_run_still_host_bound_gets_the_levers_not_in_effect() -> None:
    verdict = _with(_ran("compile", compiled=COMPILED), busy_share=0.3).verdict
    assert verdict is not None and verdict.bound == "host / launch"
    assert "still host-bound as a compiled run: " in verdict.why
    assert verdict.levers[:2] == [
        "CUDA graphs (--compile-mode reduce-overhead)",
        "larger --batch (amortise the remaining launches)",
    ]
    assert "op fusion (torch.compile)" not in verdict.levers
    graphs = _with(_ran("cudagraphs", graph=GraphCapture(capture_s=0.2)), busy_share=0.3).verdict
    assert graphs is not None and "as a CUDA-graph run" in graphs.why
    assert "CUDA graphs" not in graphs.levers and graphs.levers[0].startswith("larger --batch")


def test_onnxruntime_preprocess_over_half_the_latency_is_not_the_export() -> None:
    profile = msgspec.structs.replace(
        gpu_profile(), execution=_ran("onnxruntime", exported=EXPORTED)
    )
    metrics = {"preprocess_ms": 6.0, "forward_ms": 3.0, "nms_ms": 1.0}
    verdict = with_exec(profile, metrics, Verdict(bound="preprocess", why="preprocess is ~60%"))
    assert verdict.why == (
        "preprocess is ~60%; preprocess takes 60 % of the ONNX Runtime latency: the stage split"
        " is the same code as eager, so the export is not what is slow"
    )
    quiet = with_exec(profile, metrics | {"preprocess_ms": 2.0}, Verdict(bound="x", why="y"))
    assert quiet.why == "y"


def test_an_eager_verdict_is_untouched() -> None:
    assert _with(_ran("eager"), busy_share=0.3).verdict == _with(None, busy_share=0.3).verdict


def test_summary_prints_the_exec_line_for_non_eager_modes_only() -> None:
    assert exec_lines(_ran("compile", compiled=COMPILED)) == [
        "exec     compile (default, inductor) · compile 41.0 s · 1 graph, 0 breaks"
        " · recompiles warmup 1, window 0"
    ]
    assert exec_lines(_ran("onnxruntime", exported=EXPORTED)) == [
        "exec     onnxruntime (CPUExecutionProvider, opset 17) · export 1.1 s (cached)"
        " · session 0.3 s"
    ]
    assert exec_lines(_ran("cudagraphs", graph=GraphCapture(capture_s=0.2))) == [
        "exec     cudagraphs · capture 0.2 s"
    ]
    assert exec_lines(_ran("eager")) == [] and exec_lines(None) == []
    summary = summarize(_with(_ran("compile", compiled=COMPILED)))
    assert any(line.startswith("exec     compile") for line in summary_lines(summary))


def test_summary_json_always_has_execution() -> None:
    compiled = to_jsonable(summarize(_with(_ran("compile", compiled=COMPILED))), None)
    assert compiled["execution"]["compiled"]["compile_s"] == 41.0
    assert compiled["execution"]["name"] == "compile"
    assert to_jsonable(summarize(_with(None)), None)["execution"] is None


def _repeat(values: list[float], execution: Execution) -> Profile:
    """A `--repeat` aggregate of img/s trials that ran as `execution`."""
    return repeat_profile(values, execution=execution)


def test_compare_says_the_exec_modes_differ_and_keeps_its_significance() -> None:
    eager = _repeat([100.0, 101.0, 99.0], _ran("eager"))
    compiled = _repeat([150.0, 151.0, 149.0], _ran("compile", compiled=COMPILED))
    result = compare(eager, compiled)
    assert 'the profiles differ in exec: "eager" vs "compile"' in result.warnings
    assert not any("compile mode" in w for w in result.warnings)
    assert result.significance.significant is True
    assert result.significance.n == (3, 3)
    tuned = _repeat(
        [150.0, 151.0, 149.0],
        _ran("compile", compiled=msgspec.structs.replace(COMPILED, mode="max-autotune")),
    )
    assert compare(compiled, tuned).warnings == (
        'the profiles differ in compile mode: "default" vs "max-autotune"',
    )


def test_the_report_page_says_how_it_ran() -> None:
    page = profile_page(profile_report(_with(_ran("compile", compiled=COMPILED)), "p.json"))
    assert "how it ran" in page
    assert "compile (default, inductor) · compile 41.0 s · 1 graph, 0 breaks" in page
    assert "imgsz 64 · exec compile</div>" in page  # the header names the mode
    older = profile_page(profile_report(_with(None), "p.json"))
    assert "not recorded" in older and "exec " not in older.split("</header>")[0]
