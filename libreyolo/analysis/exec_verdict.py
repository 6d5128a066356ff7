"""What the execution mode adds to a verdict: a window that recompiled, a graph-broken model,
the host overhead a compiled run still pays, and an ONNX Runtime run whose time is outside the
exported graph.

Role: `verdict.decide` hands every quiet-host verdict here, after `mfu_verdict`. Each finding
joins the reason (after the bound's own) with its numbers in the evidence and its levers in
front of the bound's: `window_recompiles > 0` (the window is not a steady state),
`graph_breaks > 0` (dynamo split the model; the first reason named), a compiled or CUDA-graph
run still `host / launch`-bound (the levers not already in effect), and an ONNX Runtime run
whose preprocess or postprocess is more than half the latency (the stage code is eager's: the
export is not what is slow), and a run whose detections disagree with eager fp32 (its
`agreement` below `MIN_AGREEMENT`: not the same model, whatever its speed). An eager fp32 run,
or a file without `execution`, passes unchanged.

Must not: change the bound label, or add to a contended verdict anything but the disagreement
(`with_disagreement`: the detections differ whatever the host's load; timing findings would
read a starved window).
"""

from __future__ import annotations

import msgspec.structs

from libreyolo.analysis import stats
from libreyolo.analysis.exec_compare import how
from libreyolo.defaults import MIN_AGREEMENT
from libreyolo.document.model import Execution, Profile, Scalar, Verdict
from libreyolo.document.phases import POSTPROCESS, PREPROCESS

# Over half the latency outside the forward: whatever the exported graph gains, the stages
# around it (the same Python as eager's) set the latency.
STAGE_SHARE_OUTSIDE_GRAPH = 0.5
# The compile mode that wraps the compiled graphs in CUDA graphs: the host launch lever.
REDUCE_OVERHEAD = "reduce-overhead"
HOST_BOUND = "host / launch"
# The host-bound levers a compiled or captured run has already pulled.
IN_EFFECT = {
    "compile": frozenset({"op fusion (torch.compile)"}),
    "cudagraphs": frozenset({"CUDA graphs", "op fusion (torch.compile)"}),
}
RECOMPILE_LEVER = "fix the guard that fails in the window (TORCH_LOGS=recompiles shows why)"
BREAK_LEVER = "remove the graph break (TORCH_LOGS=graph_breaks shows each one)"
DISAGREE_LEVER = "check the mode's outputs against eager fp32 (the export's opset, --half) first"
# One thing the mode explains: its reason, its numbers, its levers.
Finding = tuple[str, dict[str, Scalar], list[str]]


def _recompiles(execution: Execution) -> Finding | None:
    compiled = execution.compiled
    if compiled is None or compiled.window_recompiles <= 0:
        return None
    n = compiled.window_recompiles
    why = (
        f"the window recompiled {n} time{'s' if n != 1 else ''}, so it is not a steady state "
        "(compile time is in the measured latency)"
    )
    return why, {"window_recompiles": n}, [RECOMPILE_LEVER]


def _breaks(execution: Execution) -> Finding | None:
    compiled = execution.compiled
    if compiled is None or compiled.graph_breaks <= 0:
        return None
    why = (
        f"the model is graph-broken into {compiled.num_graphs} graphs "
        f"({compiled.graph_breaks} break{'s' if compiled.graph_breaks != 1 else ''})"
    )
    if compiled.break_reasons:
        why += f"; the first: {compiled.break_reasons[0]}"
    return why, {"graph_breaks": compiled.graph_breaks}, [BREAK_LEVER]


def _host_bound(
    execution: Execution, metrics: dict[str, Scalar], verdict: Verdict
) -> Finding | None:
    if verdict.bound != HOST_BOUND or execution.name not in IN_EFFECT:
        return None
    host = stats.as_number(metrics.get("host_overhead_ms"))
    label = "compiled" if execution.name == "compile" else "CUDA-graph"
    why = f"still host-bound as a {label} run"
    if host is not None:
        why += f": {host:.2f} ms of host overhead per step remain"
    levers = []
    compiled = execution.compiled
    if execution.name == "compile" and (compiled is None or compiled.mode != REDUCE_OVERHEAD):
        levers.append("CUDA graphs (--compile-mode reduce-overhead)")
    levers.append("larger --batch (amortise the remaining launches)")
    return why, {"host_overhead_ms": host}, levers


def _outside_graph(execution: Execution, metrics: dict[str, Scalar]) -> Finding | None:
    if execution.name != "onnxruntime":
        return None
    stages = {
        name: stats.as_number(metrics.get(key))
        for name, key in ((PREPROCESS, "preprocess_ms"), (POSTPROCESS, "nms_ms"))
    }
    forward = stats.as_number(metrics.get("forward_ms"))
    if forward is None or any(ms is None for ms in stages.values()):
        return None
    latency = forward + sum(ms for ms in stages.values() if ms is not None)
    for name, ms in stages.items():
        if ms is not None and latency > 0 and ms / latency > STAGE_SHARE_OUTSIDE_GRAPH:
            why = (
                f"{name} takes {ms / latency * 100:.0f} % of the ONNX Runtime latency: the "
                "stage split is the same code as eager, so the export is not what is slow"
            )
            return why, {f"{name}_share": round(ms / latency, 3)}, []
    return None


def _disagrees(execution: Execution) -> Finding | None:
    agreement = execution.agreement
    if agreement is None or not agreement.disagrees(MIN_AGREEMENT):
        return None
    mode = "--half" if execution.name == "eager" else execution.name
    why = (
        f"{mode} disagrees with {agreement.reference} ({how(agreement)}; the floor is "
        f"{MIN_AGREEMENT}), so its speed is not the same model's"
    )
    return (
        why,
        {"agreement": agreement.score(), "max_rel_diff": agreement.max_rel_diff},
        [DISAGREE_LEVER],
    )


def with_exec(profile: Profile, metrics: dict[str, Scalar], verdict: Verdict) -> Verdict:
    """`verdict` with what the profile's execution mode explains of it (unchanged for eager
    fp32)."""
    execution = profile.execution
    if execution is None or (execution.name == "eager" and execution.agreement is None):
        return verdict
    findings = (
        _recompiles(execution),
        _breaks(execution),
        _host_bound(execution, metrics, verdict),
        _outside_graph(execution, metrics),
        _disagrees(execution),
    )
    return _joined(verdict, execution, findings)


def with_disagreement(profile: Profile, verdict: Verdict) -> Verdict:
    """`verdict` (a contended one) with the mode's disagreement with eager fp32, if any: the
    detections differ whatever the host's load, so a busy host never hides it."""
    if profile.execution is None:
        return verdict
    return _joined(verdict, profile.execution, (_disagrees(profile.execution),))


def _joined(verdict: Verdict, execution: Execution, found: tuple[Finding | None, ...]) -> Verdict:
    findings = [finding for finding in found if finding is not None]
    if not findings:
        return verdict
    pulled = IN_EFFECT.get(execution.name, frozenset())
    kept = [lever for lever in verdict.levers if lever not in pulled]
    added = [lever for _, _, levers in findings for lever in levers]
    evidence = dict(verdict.evidence)
    for _, found_evidence, _ in findings:
        evidence |= found_evidence
    return msgspec.structs.replace(
        verdict,
        why="; ".join([verdict.why, *(why for why, _, _ in findings)]),
        evidence=evidence,
        levers=added + [lever for lever in kept if lever not in added],
    )
