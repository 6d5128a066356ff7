"""The sweep on Ray: join a running cluster (or start a local one), ask each point for what it
needs, refuse what no node can run, and stop like the basic launcher.

Role: `launch` is the body of `hydra/launcher=ray` (the thin plug-in class in
`hydra_plugins/libreyolo_ray_launcher`). It connects with `init_kwargs` (the address from
`hydra.launcher.ray.init.address` or RAY_ADDRESS; with one, the keys Ray rejects for an
existing cluster are dropped; `check_reachable` refuses a `host:port` nothing answers on,
which Ray would retry forever), submits each job with `point_resources` (1 GPU and 1 CPU for a
CUDA point, 1 CPU for any other, unless `ray.remote` names them), after `check_schedulable`
has refused a sweep with a point no live node could ever hold (Ray would queue it forever).
A stop (`Stopped`, SIGINT or SIGTERM in the driver) cancels the submitted points (Ray raises
KeyboardInterrupt in each running one, which `run_point` records as `interrupted`), waits for
them, then propagates so `app.py` writes `sweep.json` and exits 128 + the signal (`stop.py` keeps
which signal: Ray re-raises a bare KeyboardInterrupt). `quiet_schema_warning` is the entry
point's, for the preset's name.

Must not: call hydra-ray-launcher's own `launch` (1.2.2 injects `object_store_memory`, which
Ray rejects with an address), leave Ray's SIGTERM handler installed (it exits 1 with no report),
or print but through `libreyolo.boundary`.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from libreyolo.config.schema import DeviceConfig
from libreyolo.errors import UsageError
from libreyolo.sweep.lease import cuda_index
from libreyolo.sweep.refused import Refused

# Keys Ray rejects when `ray.init` joins an existing cluster (they size a cluster it starts).
# hydra-ray-launcher 1.2.2 adds `object_store_memory` to every init: issue
# https://github.com/hydra-ecosystem/hydra/issues/2893, fixed by PR
# https://github.com/hydra-ecosystem/hydra/pull/3363 (merged, not released); our own `launch`
# never injects it, and this list drops it when the user sets it with an address.
CLUSTER_SIZING_KEYS = (
    "num_cpus",
    "num_gpus",
    "resources",
    "labels",
    "object_store_memory",
    "_system_config",
)
_LOG = logging.getLogger(__name__)
PROBE_TIMEOUT_S = 5.0  # a head that does not answer a TCP connect in this long is not there
STOP_WAIT_S = 30.0  # a cancelled point gets this long to record `interrupted`, then is killed
HINT_ADDRESS = "start one with `ray start --head`, or leave hydra.launcher.ray.init.address unset"


def quiet_schema_warning() -> None:
    """Hide Hydra's warning that `hydra/launcher/ray` is matched with hydra-ray-launcher's
    schema of the same name: harmless (the same `ray.init`/`ray.remote` maps, our `_target_`),
    and the preset keeps the name users know. Hydra warns while composing, before any plug-in
    of ours is imported, hence a call from the entry point."""
    warnings.filterwarnings(
        "ignore", message=r"\s*'hydra/launcher/ray' is validated against ConfigStore schema"
    )


def init_kwargs(init: Mapping[str, Any], environ: Mapping[str, str]) -> dict[str, Any]:
    """`ray.init`'s arguments: the configured ones without nulls; with an address (configured,
    or RAY_ADDRESS) none of `CLUSTER_SIZING_KEYS`."""
    kwargs = {key: value for key, value in init.items() if value is not None}
    address = kwargs.get("address") or environ.get("RAY_ADDRESS") or None
    if address is None:
        kwargs.pop("address", None)
        return kwargs
    kwargs["address"] = str(address)
    return {key: value for key, value in kwargs.items() if key not in CLUSTER_SIZING_KEYS}


def point_resources(device: str, remote: Mapping[str, Any]) -> dict[str, Any]:
    """`ray.remote` options of one point on `device`: `remote` as configured, with its null
    `num_cpus`/`num_gpus` filled in (a CUDA point 1 GPU and 1 CPU, any other 1 CPU, 0 GPU)."""
    options = {key: value for key, value in remote.items() if value is not None}
    options.setdefault("num_cpus", 1)
    options.setdefault("num_gpus", 1 if cuda_index(device) is not None else 0)
    return options


def _amount(value: float, unit: str = "") -> str:
    return f"{value:g} {unit}{'s' if value != 1 else ''}" if unit else f"{value:g}"


def unschedulable(
    request: Mapping[str, Any], nodes: Sequence[Mapping[str, float]], total: Mapping[str, float]
) -> str | None:
    """Why no node in `nodes` (each one's resources) can ever hold `request` (`ray.remote`
    options), e.g. `no node has 1 GPU: the cluster has cpu=4, gpu=0`; None when one can."""
    cpus = float(request.get("num_cpus") or 0)
    gpus = float(request.get("num_gpus") or 0)
    for node in nodes:
        if node.get("CPU", 0.0) >= cpus and node.get("GPU", 0.0) >= gpus:
            return None
    wanted = [_amount(gpus, "GPU") if gpus else "", _amount(cpus, "CPU") if cpus else ""]
    has = f"cpu={_amount(total.get('CPU', 0.0))}, gpu={_amount(total.get('GPU', 0.0))}"
    return f"no node has {' and '.join(w for w in wanted if w)}: the cluster has {has}"


def check_schedulable(requests: Sequence[Mapping[str, Any]]) -> None:
    """Refused (one line, exit 2) when a point asks for more than any live node has."""
    import ray

    nodes = [node["Resources"] for node in ray.nodes() if node.get("Alive")]
    total = ray.cluster_resources()
    for request in requests:
        reason = unschedulable(request, nodes, total)
        if reason is not None:
            raise Refused(
                UsageError(reason, hint="give the point fewer resources or add such a node")
            )


def check_reachable(address: str, timeout_s: float = PROBE_TIMEOUT_S) -> None:
    """Refused unless a `host:port` address accepts a TCP connection: `ray.init` would retry a
    dead one forever. `auto` and `ray://` addresses are left to Ray (it fails fast on them)."""
    host, colon, port = address.rpartition(":")
    if "://" in address or not colon or not port.isdigit():
        return
    try:
        socket.create_connection((host, int(port)), timeout=timeout_s).close()
    except OSError as err:
        why = err.strerror or type(err).__name__
        raise Refused(
            UsageError(
                f"cannot reach the Ray cluster at {address}: {why.lower()}", hint=HINT_ADDRESS
            )
        ) from None


def start_ray(init: Mapping[str, Any], environ: Mapping[str, str]) -> None:
    """Join or start Ray (`init_kwargs`) unless this process already did, keeping our SIGINT and
    SIGTERM handlers (`ray.init` replaces SIGTERM's with its own `sys.exit`); a cluster that
    cannot be joined is Refused with Ray's reason in one line."""
    import ray

    if ray.is_initialized():
        return
    kwargs = init_kwargs(init, environ)
    if "address" in kwargs:
        check_reachable(kwargs["address"])
    handlers = {each: signal.getsignal(each) for each in (signal.SIGINT, signal.SIGTERM)}
    try:
        ray.init(**kwargs)
    except (ConnectionError, ValueError, RuntimeError) as err:
        where = kwargs.get("address", "a local cluster")
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise Refused(
            UsageError(f"cannot join the Ray cluster at {where}: {first}", hint=HINT_ADDRESS)
        ) from None
    finally:
        for each, handler in handlers.items():
            signal.signal(each, handler)


def cancel_all(refs: Sequence[Any]) -> None:
    """Cancel every submitted point and wait until each has ended (its KeyboardInterrupt lets it
    record `interrupted`); after `STOP_WAIT_S`, kill the rest. Each result is read so that Ray
    reports no 'unhandled error' for it at exit."""
    import ray

    for ref in refs:
        ray.cancel(ref)
    _, late = ray.wait(list(refs), num_returns=len(refs), timeout=STOP_WAIT_S)
    for ref in late:
        ray.cancel(ref, force=True)
    for ref in refs:
        try:
            ray.get(ref, timeout=STOP_WAIT_S)
        except ray.exceptions.RayError:
            continue


def launch(
    ray_cfg: Any,
    *,
    config: Any,
    hydra_context: Any,
    task_function: Any,
    job_overrides: Sequence[Sequence[str]],
    initial_job_idx: int,
) -> list[Any]:
    """Run Hydra's jobs on Ray (see the module docstring); their `JobReturn`s in order."""
    import ray
    from hydra.core.singleton import Singleton
    from hydra.core.utils import configure_log, filter_overrides, setup_globals
    from hydra_plugins.hydra_ray_launcher._launcher_util import _run_job
    from omegaconf import OmegaConf, open_dict

    setup_globals()
    configure_log(config.hydra.hydra_logging, config.hydra.verbose)
    settings = OmegaConf.to_container(ray_cfg, resolve=True)
    assert isinstance(settings, dict)
    start_ray(settings.get("init") or {}, os.environ)
    remote = settings.get("remote") or {}
    _LOG.info("Ray launcher: %d jobs into %s", len(job_overrides), config.hydra.sweep.dir)
    jobs = []
    for idx, overrides in enumerate(job_overrides, start=initial_job_idx):
        sweep_config = hydra_context.config_loader.load_sweep_config(config, list(overrides))
        with open_dict(sweep_config):
            sweep_config.hydra.job.id = f"job_id_for_{idx}"  # as hydra-ray-launcher names it
            sweep_config.hydra.job.num = idx
        device = OmegaConf.select(sweep_config, "device.name", default=DeviceConfig.name)
        jobs.append((sweep_config, point_resources(str(device), remote)))
        _LOG.info("\t#%d : %s", idx, " ".join(filter_overrides(overrides)))
    check_schedulable([options for _, options in jobs])
    refs: list[Any] = []
    try:
        for sweep_config, options in jobs:
            task = ray.remote(**options)(_run_job)
            # _run_job(hydra_context, sweep_config, task_function, singleton_state)
            state = Singleton.get_state()
            refs.append(task.remote(hydra_context, sweep_config, task_function, state))
        return [ray.get(ref) for ref in refs]
    except KeyboardInterrupt:
        cancel_all(refs)
        raise
