"""Each series' prior before a tune search measures anything: where a training series runs on
the CPU under `tune.memory_budget_mb` with its own (eager) step, the largest batch its probe
steps predict under the budget (`measure.budget_prior`, run by `sweep.prior_probe` in a process
of its own).
maxfit starts there; knee and latency grow no further (`analysis.tune.decide`).

A prior that cannot be had (the probe fails or runs past PRIOR_TIMEOUT_S) is a warning, and
the series searches as before, from `tune.batch_min`: a prediction only saves points, the
points decide. A stop (Ctrl-C) ends the probe process with the search.

Must not: measure in this process, or let a prior stand in for a measured point.
"""

from __future__ import annotations

import subprocess
import sys

import msgspec

from libreyolo.boundary.output import Output
from libreyolo.config.schema import requested_ranks
from libreyolo.document.convert import convert
from libreyolo.document.json_value import JsonObject
from libreyolo.document.rules import field_problem
from libreyolo.document.tune_model import TunePrior

PRIOR_TIMEOUT_S = 300.0  # the probe builds the model and runs two small steps: seconds
PRIOR_MODULE = "libreyolo.sweep.prior_probe"


def wants_prior(config: JsonObject) -> bool:
    """The series' resolved config measures our own eager training step on the CPU, in one
    process, under a memory budget: the case the probe steps predict (`trainer=` measures
    another program, a compiled step has no tracked step, CUDA budgets hold the allocator's
    peak, and ranks track no step by category)."""
    tune, device, execution = config.get("tune"), config.get("device"), config.get("exec")
    if not isinstance(tune, dict) or tune.get("memory_budget_mb") is None:
        return False
    return (
        config.get("mode") == "run"
        and config.get("trainer") is None
        and isinstance(device, dict)
        and device.get("name") == "cpu"
        and requested_ranks(device) == 1
        and isinstance(execution, dict)
        and execution.get("name") == "eager"
    )


def series_prior(config: JsonObject, budget_mb: float, label: str) -> TunePrior | None:
    """The prior of the series `label` (its swept values), or None with a warning saying why."""
    found = _probe(config, budget_mb)
    if isinstance(found, TunePrior):
        return found
    Output.plain().notice(
        "warning",
        f"{label}: no memory prediction before its first point ({found}); it is searched "
        "without one",
    )
    return None


def _probe(config: JsonObject, budget_mb: float) -> TunePrior | str:
    """The probe process's prior, or why there is none."""
    try:
        done = subprocess.run(
            [sys.executable, "-m", PRIOR_MODULE, f"{budget_mb:g}"],
            input=msgspec.json.encode(config),
            capture_output=True,
            timeout=PRIOR_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return f"the probe steps ran past {PRIOR_TIMEOUT_S:g} s"
    except OSError as err:
        return f"cannot start the probe ({err.strerror or err})"
    if done.returncode != 0:
        lines = done.stderr.decode(errors="replace").strip().splitlines()
        return lines[-1] if lines else f"the probe exited {done.returncode}"
    try:
        data = msgspec.json.decode(done.stdout)
    except msgspec.DecodeError as err:
        return f"the probe's answer is not a prior ({err})"
    # checked by tune.json's own rules: the prior is recorded there as it came
    problem = field_problem(data, TunePrior, str) if isinstance(data, dict) else "not an object"
    if problem is not None:
        return f"the probe's answer is not a prior ({problem})"
    found: TunePrior = convert(data, TunePrior)
    return found
