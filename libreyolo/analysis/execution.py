"""How the model ran, as flat metrics: the execution mode and what compiling, exporting or
capturing it cost.

Role: `metrics.compute_metrics` adds `KEYS` to every profile's map, each null where the
profile's mode has no such fact (an eager run has no `compile_s`) and all null where the
profile predates the `execution` record (unknown, not eager: nothing says how it ran).

Must not: read files, or judge the numbers (the verdict does: `exec_verdict`).
"""

from __future__ import annotations

from libreyolo.defaults import MIN_AGREEMENT
from libreyolo.document.model import Execution, Scalar

# Present in every current profile's metric map, null when not that mode's or unknown.
KEYS = (
    "exec",
    "channels_last",
    "compile_s",
    "graph_breaks",
    "num_graphs",
    "window_recompiles",
    "export_s",
    "onnx_provider",
    "capture_s",
    "agreement",  # with eager fp32: the lower of box recall and precision (execution.agreement)
    "agrees",  # false: the run disagrees with eager fp32, so its speed is another model's
)


def execution_metrics(execution: Execution | None) -> dict[str, Scalar]:
    """The `KEYS` of one profile (all null without an execution record)."""
    metrics: dict[str, Scalar] = dict.fromkeys(KEYS)
    if execution is None:
        return metrics
    metrics |= {"exec": execution.name, "channels_last": execution.channels_last}
    if execution.compiled is not None:
        compiled = execution.compiled
        metrics |= {
            "compile_s": round(compiled.compile_s, 3),
            "graph_breaks": compiled.graph_breaks,
            "num_graphs": compiled.num_graphs,
            "window_recompiles": compiled.window_recompiles,
        }
    if execution.exported is not None:
        metrics |= {
            "export_s": round(execution.exported.export_s, 3),
            "onnx_provider": execution.exported.provider,
        }
    if execution.graph is not None:
        metrics["capture_s"] = round(execution.graph.capture_s, 3)
    if execution.agreement is not None:
        metrics |= {
            "agreement": execution.agreement.score(),
            "agrees": not execution.agreement.disagrees(MIN_AGREEMENT),
        }
    return metrics
