"""The bottleneck verdict: a label, why (in numbers), the evidence behind it, and levers.

Pure. The verdict comes from unsynced numbers (step time, dataload stall, GPU utilisation);
synced samples feed only the composition (the inference stage split). On a CPU-only profile the
verdict speaks of the CPU and its op mix, never of "host / launch". A CUDA profile whose trace
recorded no GPU activity (`--no-trace`, or CUPTI recorded nothing) says so (`no-gpu-trace`),
never the CPU verdict: nothing says where its step time went. MFU never changes the label; it
joins the evidence of a quiet verdict and, on a busy GPU far below its peak, its reason and
levers (`mfu_verdict.py`); the execution mode adds what it explains (`exec_verdict.py`).
"""

from __future__ import annotations

import msgspec.structs

from libreyolo.analysis import contention
from libreyolo.analysis.exec_verdict import with_disagreement, with_exec
from libreyolo.analysis.mfu_verdict import with_mfu
from libreyolo.analysis.opclass import op_category_ms
from libreyolo.document.health_names import SUSPECT
from libreyolo.document.mode import Mode
from libreyolo.document.model import Profile, Scalar, TraceHealth, Verdict
from libreyolo.document.phases import FORWARD, POSTPROCESS, PREPROCESS

SUSPECT_LEVERS = (
    "measure again: each --repeat trial records its trace in a fresh process of its own",
    "use a PyTorch whose profiler keeps every record (pytorch#192021 dropped a later "
    "session's first kernels; fixed 2026-08)",
)
DATALOAD_SHARE_BOUND = 0.2  # the step waits on input for ≥ 20 %: the loader is the bottleneck
UTIL_COMPUTE = 0.8  # the GPU is busy ≥ 80 % of the window: adding work would not hide anything
STAGE_SHARE_BOUND = 0.35  # an inference stage this large beside forward dominates the latency
STAGES = ((PREPROCESS, "preprocess_ms"), (FORWARD, "forward_ms"), (POSTPROCESS, "nms_ms"))

LEVERS = {
    "memory-pressure": ["lower --batch", "reduce activation memory", "avoid the OOM edge"],
    "dataloader": ["more --workers", "cache images in RAM", "lighter augmentation", "larger batch"],
    "host / launch": [
        "larger --batch (amortise launches)",
        "fewer per-step .item()/syncs",
        "CUDA graphs",
        "op fusion (torch.compile)",
    ],
    "compute": ["AMP / bf16", "smaller --imgsz", "a smaller model"],
    "nms / postprocess": ["lower --max-det", "higher --conf", "fewer classes"],
    PREPROCESS: ["larger --batch", "faster decode", "GPU preprocessing"],
}


# Ranks this tool started on one host share its CPUs.
WORLD_CONTENTION_LEVER = "fewer ranks on this host (--nproc), or --threads 1 per rank"
CPU_LEVERS = ["more CPU threads", "smaller --imgsz", "a smaller model", "a CUDA device"]
NO_GPU_TRACE = "no-gpu-trace"
NO_GPU_TRACE_LEVERS = [
    "run with the trace on (drop --no-trace)",
    "check that CUPTI can record on this machine (driver, permissions, another profiler)",
]


def _pct(share: float) -> str:
    return f"{share * 100:.0f}%"


def _verdict(bound: str, why: str, evidence: dict[str, Scalar]) -> Verdict:
    return Verdict(bound=bound, why=why, evidence=evidence, levers=LEVERS.get(bound, []))


def _cpu_verdict(profile: Profile, evidence: dict[str, Scalar]) -> Verdict:
    ops = profile.trace.ops if profile.trace else []
    categories = op_category_ms(ops)
    total = sum(categories.values())
    why = "the step runs on the CPU"
    if total > 0:
        top, top_ms = max(categories.items(), key=lambda item: item[1])
        kind = "inclusive op time" if any(op.self_ms is None for op in ops) else "op self time"
        evidence |= {"top_op_category": top, "top_op_category_share": round(top_ms / total, 3)}
        why += f"; {top} ops take {_pct(top_ms / total)} of {kind}"
    return Verdict(bound="compute", why=why + " — CPU-bound", evidence=evidence, levers=CPU_LEVERS)


def ran_on_cuda(profile: Profile) -> bool:
    """Whether the profile measured a CUDA device (its resolved run device)."""
    return (profile.run.device or "").startswith("cuda")


def _no_gpu_trace_verdict(profile: Profile, evidence: dict[str, Scalar]) -> Verdict:
    why = (
        f"no GPU activity was recorded for this {profile.run.device or 'CUDA'} run: "
        "GPU busy time, kernels and the bottleneck are unknown — run with the trace on, "
        "or check that CUPTI can record"
    )
    return Verdict(bound=NO_GPU_TRACE, why=why, evidence=evidence, levers=NO_GPU_TRACE_LEVERS)


def _inference_stage_verdict(metrics: dict[str, Scalar]) -> Verdict | None:
    pre, fwd, post = (metrics.get(k) for k in ("preprocess_ms", "forward_ms", "nms_ms"))
    if not all(isinstance(v, int | float) for v in (pre, fwd, post)):
        return None
    pre, fwd, post = float(pre), float(fwd), float(post)  # type: ignore[arg-type]
    step = pre + fwd + post
    evidence: dict[str, Scalar] = {"preprocess_ms": pre, "forward_ms": fwd, "postprocess_ms": post}
    if step <= 0:
        return None
    if post >= fwd and post / step >= STAGE_SHARE_BOUND:
        why = f"postprocess (NMS) is ~{_pct(post / step)} of the step ({post:.2f} ms)"
        return _verdict("nms / postprocess", why, evidence)
    if pre >= fwd and pre / step >= STAGE_SHARE_BOUND:
        why = f"preprocess is ~{_pct(pre / step)} of the step ({pre:.2f} ms)"
        return _verdict(PREPROCESS, why, evidence)
    return None


def suspect_verdict(health: TraceHealth) -> Verdict:
    """`suspect-trace`: the trace failed a health check (`kineto/health.py`), so no bottleneck
    is named from it; the failed checks are the evidence."""
    failed = health.failed()
    names = ", ".join(check.name for check in failed)
    why = f"the trace failed its health check ({names}): no bottleneck is named from it"
    evidence: dict[str, Scalar] = {check.name: check.found for check in failed}
    return Verdict(bound=SUSPECT, why=why, evidence=evidence, levers=list(SUSPECT_LEVERS))


def decide(profile: Profile, metrics: dict[str, Scalar]) -> Verdict:
    """The verdict for a profile whose metrics (apart from `bound`) are computed:
    `suspect-trace` when its trace failed a health check (nothing else is said), `contended`
    when the host starved the measured threads, with what its numbers can still say beside
    it: the verdict a quiet host's rules give when starving cannot have made it (`quiet_bound`
    and `quiet_why`), else only the measured shares (`quiet_why`, no `quiet_bound`). A quiet
    verdict carries `mfu` in its evidence when known (`mfu_verdict`); a contended one states
    nothing of it (a starved window's img/s, and so its MFU, is off by how long it waited), but
    states a mode's disagreement with eager fp32, which no load can cause."""
    health = profile.trace.health if profile.trace is not None else None
    if health is not None and health.suspect:  # its numbers are not to be believed at all
        return suspect_verdict(health)
    quiet = _decide_quiet(profile, metrics)
    if metrics.get("contended") is not True:
        return with_exec(profile, metrics, with_mfu(profile, metrics, quiet))
    why, evidence = contention.reason(profile, metrics)
    supported = _survives_contention(profile, quiet)
    contended = msgspec.structs.replace(
        _verdict("contended", why, evidence),
        levers=_contention_levers(profile),
        quiet_bound=quiet.bound if supported else None,
        quiet_why=quiet.why if supported else as_measured(profile, metrics),
    )
    return with_disagreement(profile, contended)


def _survives_contention(profile: Profile, quiet: Verdict) -> bool:
    """Whether starving the host can not have produced `quiet`: a contended window inflates
    every CPU time, and unevenly (a thread that loses its CPU stalls each parallel region it
    belongs to, so multi-threaded work such as a CPU forward grows more than a single-threaded
    letterbox or loader wait), so no share of CPU time names a bottleneck. What still holds:
    allocator thrash (counts, not times), a GPU busy ≥ UTIL_COMPUTE (a starved host can only
    lower it), and a CUDA run that recorded no GPU activity."""
    if quiet.bound in ("memory-pressure", NO_GPU_TRACE):
        return True
    return quiet.bound == "compute" and profile.trace is not None and profile.trace.has_gpu


def as_measured(profile: Profile, metrics: dict[str, Scalar]) -> str:
    """The shares a contended window measured, stated as numbers, not as a bottleneck."""
    parts = []
    stages = {name: metrics.get(key) for name, key in STAGES}
    times = {k: float(v) for k, v in stages.items() if isinstance(v, int | float)}
    step = sum(times.values())
    if profile.kind == Mode.INFER and len(times) == len(STAGES) and step > 0:
        parts.append(", ".join(f"{k} {_pct(v / step)}" for k, v in times.items()) + " of the step")
    dataload = metrics.get("dataload_frac")
    if profile.kind != Mode.INFER and isinstance(dataload, float):
        parts.append(f"dataload {_pct(dataload)} of the step")
    if profile.trace is not None and profile.trace.has_gpu:
        parts.append(f"GPU ~{_pct(float(metrics.get('gpu_util') or 0.0))} busy")
    else:
        ops = profile.trace.ops if profile.trace else []
        categories = op_category_ms(ops)
        total = sum(categories.values())
        if total > 0:
            top, top_ms = max(categories.items(), key=lambda item: item[1])
            parts.append(f"{top} ops {_pct(top_ms / total)} of op time")
    measured = "; ".join(parts) if parts else "no share of the step could be measured"
    return f"{measured} (inflated unevenly by the wait for a CPU: they name no bottleneck)"


def _contention_levers(profile: Profile) -> list[str]:
    workers = profile.host.num_workers if profile.host is not None else None
    levers = [lever for lever in contention.LEVERS if workers or "--workers" not in lever]
    if profile.world is not None and profile.world.launcher == "spawn":
        levers.insert(0, WORLD_CONTENTION_LEVER)
    return levers


def _decide_quiet(profile: Profile, metrics: dict[str, Scalar]) -> Verdict:
    has_gpu = profile.trace is not None and profile.trace.has_gpu
    util = float(metrics.get("gpu_util") or 0.0)
    dataload = metrics.get("dataload_frac")
    evidence: dict[str, Scalar] = {"gpu_util": util if has_gpu else None}
    if metrics.get("memory_pressure"):
        mallocs = metrics.get("cuda_mallocs_per_step")
        evidence["cuda_mallocs_per_step"] = mallocs
        why = f"allocator thrash (~{mallocs} cudaMalloc/free per step) — VRAM pressure"
        return _verdict(
            "memory-pressure", why + "; throughput and utilisation are unreliable", evidence
        )
    if isinstance(dataload, float) and dataload >= DATALOAD_SHARE_BOUND:
        evidence["dataload_frac"] = dataload
        why = f"the step waits on input data: dataload takes ~{_pct(dataload)} of the step"
        return _verdict("dataloader", why, evidence)
    if profile.kind == Mode.INFER:
        staged = _inference_stage_verdict(metrics)
        if staged is not None:
            return staged
    if not has_gpu and ran_on_cuda(profile):
        return _no_gpu_trace_verdict(profile, evidence)
    if not has_gpu:
        return _cpu_verdict(profile, evidence)
    if util >= UTIL_COMPUTE:
        return _verdict("compute", f"the GPU is saturated (~{_pct(util)} busy)", evidence)
    kernels, mean_us = metrics.get("kernels_per_step"), metrics.get("mean_kernel_us") or 0.0
    evidence |= {"kernels_per_step": kernels, "mean_kernel_us": mean_us}
    why = (
        f"GPU only ~{_pct(util)} busy — fed too slowly: {kernels} kernels/step "
        f"at ~{float(mean_us):.0f}us each plus host overhead"
    )
    return _verdict("host / launch", why, evidence)
