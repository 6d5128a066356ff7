"""Fresh processes to measure in: a sweep point's, and each `--repeat` trial's.

Role: `fresh_context` is a fork server that has imported torch and the collectors once but never
touched CUDA or run an op, so each child starts with no CUDA context, allocator cache, cuDNN
autotune, oneDNN primitive state or profiler session to inherit, and skips the ~3 s of imports a
fresh interpreter pays; a fresh interpreter (spawn) where there is no fork. `start_method`,
`stop_child` and `end_with_parent` are how a parent starts and stops such a child, and how the
child ends when its parent is killed outright.

Must not: import torch itself (the fork server does, in its own process), print, or exit.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.context
import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from libreyolo.workload.registry import BUILTIN_MODULES

STOP_GRACE_S = 5.0  # a stopped child gets this long after SIGTERM before SIGKILL
# Imported once by the fork server: torch, torchvision (~3 s here, most of it torch._dynamo
# pulled in by torchvision.ops), the collectors, the workload and the trace analyser,
# everything a measurement imports lazily. Nothing Hydra.
CHILD_PRELOAD = (
    "libreyolo.measure.infer",
    "libreyolo.measure.train",
    "libreyolo.workload.api",
    "libreyolo.workload.train",
    "libreyolo.workload.registry",
    "libreyolo.workload.data.dataset",
    "libreyolo.workload.data.loader",
    "libreyolo.kineto.reduce",
    "libreyolo.analysis.repeat",
)

FreshContext = multiprocessing.context.ForkServerContext | multiprocessing.context.SpawnContext


def fresh_context() -> FreshContext:
    """Where a fresh measuring process comes from (see the module docstring)."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    assert isinstance(context, multiprocessing.context.ForkServerContext)
    # The fork server skips a module that fails to import (a family's missing optional part).
    context.set_forkserver_preload([*CHILD_PRELOAD, *BUILTIN_MODULES])
    return context


@contextmanager
def start_method(method: str) -> Iterator[None]:
    """The process-wide default start method set to `method` while a child starts. A child
    replays its parent's default (`spawn.prepare`) before it runs anything, and a launcher's
    worker may have its own: joblib's loky workers have `loky`, which a stdlib child cannot
    set (`cannot find context for 'loky'`: the child dies before it runs)."""
    current = multiprocessing.get_start_method(allow_none=True)
    if current is None or current in multiprocessing.get_all_start_methods():
        yield
        return
    multiprocessing.set_start_method(method, force=True)
    try:
        yield
    finally:
        multiprocessing.set_start_method(current, force=True)


def stop_child(child: multiprocessing.process.BaseProcess) -> None:
    """SIGTERM, then SIGKILL after `STOP_GRACE_S`: a stopped parent leaves no child measuring."""
    if child.is_alive():
        child.terminate()
        child.join(STOP_GRACE_S)
    if child.is_alive():
        child.kill()
        child.join()


def end_with_parent() -> None:
    """In a fresh child: send this process SIGTERM once the process that started it is gone
    (killed outright, so no SIGTERM of its own came): a thread waits on the parent's sentinel
    pipe. (The fork server, its parent in the process tree, lives on while any child holds
    its pipe.)"""
    parent = multiprocessing.parent_process()
    if parent is None:
        return

    def watch() -> None:
        parent.join()
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="libreyolo-parent-watch", daemon=True).start()
