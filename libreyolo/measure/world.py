"""Training on several ranks: one process per rank, one profile each, one of the world.

Role: `plan_world` reads what the config asks (`device.nproc` ranks on the CPU, or one rank per
CUDA index of `--device 0,1`) and refuses what `libreyolo train` would not run the same way: a
global batch that does not split evenly (1.6.0 floors `batch // world_size`, so images would
silently go unused), AutoBatch, `--repeat`, another execution mode, libreyolo 1.x's own trainer
and inference. `measure_world` starts the ranks as fresh processes (the fork server of
`fresh.py`), each with torchrun's environment (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE),
joined through a TCPStore this process hosts on a port the kernel picked (no port is guessed,
so none can be taken meanwhile); gloo on the CPU, NCCL on CUDA. Each rank measures the same
window into `rank<i>/` of the caller's staged set and sends its profile back; rank 0's progress
is shown. A rank that dies, fails or hangs past the collective timeout stops every other rank
(SIGTERM, then SIGKILL) and fails the run with the rank named (`RankFailedError`, exit 3); the
caller's staged set is then discarded, so the previous set stays.

Must not: print, commit the set, or import torch at module level (the CLI imports this lazily
either way; the children import it from the fork server).
"""

from __future__ import annotations

import contextlib
import dataclasses
import multiprocessing.connection
import os
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any, NoReturn

from libreyolo.config.schema import DeviceConfig, ExecMode, ProfileConfig
from libreyolo.document.mode import Mode
from libreyolo.document.model import Profile
from libreyolo.document.world import RANK_FOLDER, rank_profile
from libreyolo.errors import ProfileError, RankFailedError, UsageError
from libreyolo.measure.fresh import fresh_context, start_method, stop_child
from libreyolo.pids import exit_text

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

    from libreyolo.measure.artifacts import StagedRun

HOST = "127.0.0.1"
# A collective that waits this long for a peer fails its rank: a rank that hangs outside a
# collective (a stuck loader) is found by the others' timeout.
COLLECTIVE_TIMEOUT_S = 300.0
DEATH_GRACE_S = 2.0  # how long a failed rank's peers get to be seen dead, the likelier cause
Progress = Callable[[str, int, int], None]
PR_SET_NAME = 15  # prctl(2): the calling thread's name, what ps and top show


@dataclasses.dataclass(frozen=True)
class WorldPlan:
    """The ranks a run trains on: one device string each, and how the global batch splits."""

    devices: tuple[str, ...]
    global_batch: int

    @property
    def world_size(self) -> int:
        return len(self.devices)

    @property
    def batch_per_rank(self) -> int:
        return self.global_batch // self.world_size

    @property
    def backend(self) -> str:
        return "nccl" if self.devices[0].startswith("cuda") else "gloo"


@dataclasses.dataclass(frozen=True)
class Joined:
    """This process's place in a world torchrun (or a job launcher like it) started."""

    rank: int
    local_rank: int
    world_size: int


def joined_world(environ: dict[str, str] | None = None) -> Joined | None:
    """The world this process is a rank of (torchrun's RANK, LOCAL_RANK and WORLD_SIZE, two or
    more ranks), or None; UsageError for variables that are not numbers."""
    env = os.environ if environ is None else environ
    if "RANK" not in env or "WORLD_SIZE" not in env:
        return None
    try:
        joined = Joined(
            rank=int(env["RANK"]),
            local_rank=int(env.get("LOCAL_RANK", env["RANK"])),
            world_size=int(env["WORLD_SIZE"]),
        )
    except ValueError as err:
        raise UsageError(
            f"RANK={env['RANK']!r}, WORLD_SIZE={env['WORLD_SIZE']!r}: not a rank of a world "
            f"({err})",
            hint="launch with torchrun, or unset RANK and WORLD_SIZE",
        ) from None
    if joined.world_size < 2:
        return None
    if not 0 <= joined.rank < joined.world_size or joined.local_rank < 0:
        raise UsageError(
            f"RANK={joined.rank} in a world of {joined.world_size} (LOCAL_RANK="
            f"{joined.local_rank}): not a rank of it",
            hint="launch with torchrun, or unset RANK and WORLD_SIZE",
        )
    return joined


def plan_world(cfg: ProfileConfig, joined: Joined | None = None) -> WorldPlan | None:
    """The ranks `cfg` asks for (or, `joined`, the world torchrun started: each rank on
    `cuda:LOCAL_RANK`, or the CPU with `--device cpu`, as 1.6.0's trainer takes them), or None
    for one process; UsageError for what several ranks cannot measure as `libreyolo train`
    would run it."""
    names = [part.strip() for part in cfg.device.name.split(",")]
    nproc = cfg.device.nproc
    if nproc < 1:
        raise UsageError(f"--nproc must be 1 or more; got {nproc}")
    if joined is not None:
        if nproc not in (1, joined.world_size) or len(names) > 1:
            raise UsageError(
                f"torchrun started {joined.world_size} ranks: each measures its own device",
                hint="leave --nproc and a device list out under torchrun",
            )
        cpu = names[0].lower() == "cpu"
        device = "cpu" if cpu else f"cuda:{joined.local_rank}"
        _check_world(cfg, joined.world_size)
        return WorldPlan(devices=(device,) * joined.world_size, global_batch=cfg.batch)
    if len(names) > 1:
        if nproc not in (1, len(names)):
            raise UsageError(
                f"--device {cfg.device.name} names {len(names)} devices but --nproc is {nproc}",
                hint="leave --nproc out: each named device gets one rank",
            )
        if not all(name.isdigit() for name in names) or len(set(names)) != len(names):
            raise UsageError(
                f"--device {cfg.device.name}: several ranks need distinct CUDA indices",
                hint="e.g. --device 0,1, or --device cpu --nproc 2",
            )
        devices = tuple(f"cuda:{name}" for name in names)
    elif nproc > 1:
        if names[0].lower() != "cpu":
            raise UsageError(
                f"--nproc {nproc} with --device {cfg.device.name}: on CUDA each rank needs a "
                "device of its own",
                hint=f"name them: --device {','.join(str(i) for i in range(nproc))}",
            )
        devices = ("cpu",) * nproc
    else:
        return None
    _check_world(cfg, len(devices))
    return WorldPlan(devices=devices, global_batch=cfg.batch)


def _check_world(cfg: ProfileConfig, ranks: int) -> None:
    if cfg.mode.measures is not Mode.TRAIN:
        raise UsageError("several ranks train: `profile infer` measures one process")
    if cfg.trainer is not None:
        raise UsageError("--trainer measures libreyolo 1.x's trainer in one process")
    if cfg.batch == -1:
        raise UsageError(
            f"--batch -1 (AutoBatch) on {ranks} ranks is not measured yet",
            hint="give the global batch, a multiple of the ranks",
        )
    if cfg.batch % ranks:
        nearest = max(ranks, cfg.batch - cfg.batch % ranks)
        raise UsageError(
            f"--batch {cfg.batch} does not split over {ranks} ranks: libreyolo train gives each "
            f"rank {cfg.batch} // {ranks} = {cfg.batch // ranks} images and leaves the rest out",
            hint=f"give a multiple of {ranks}, e.g. --batch {nearest}",
        )
    if cfg.window.repeat > 1:
        raise UsageError("--repeat on several ranks is not measured yet", hint="leave it at 1")
    if ExecMode(cfg.exec.name) is not ExecMode.eager:
        raise UsageError(
            f"--exec {cfg.exec.name} on several ranks is not measured yet",
            hint="--exec eager",
        )


def measure_joined(
    cfg: ProfileConfig,
    plan: WorldPlan,
    joined: Joined,
    on_progress: Progress | None,
    notes: Sequence[str],
    stage: Callable[[], StagedRun],
) -> tuple[list[Profile], StagedRun | None, Profile]:
    """This rank's measurement in the world torchrun started: rank 0 stages the set (`stage`)
    and tells the others where; every rank measures into its folder of it; rank 0 gathers
    every profile. Returns (every rank's profile on rank 0, else []; the set on rank 0, else
    None; this rank's profile). A rank's expected error is raised on that rank; rank 0 raises
    the first rank's failure (`RankFailedError`, naming it)."""
    import torch.distributed as dist

    from libreyolo.measure.artifacts import BorrowedRun
    from libreyolo.measure.from_config import collect_trial

    timeout = timedelta(seconds=COLLECTIVE_TIMEOUT_S)
    dist.init_process_group(
        plan.backend, rank=joined.rank, world_size=joined.world_size, timeout=timeout
    )
    run: StagedRun | None = None
    try:
        run = stage() if joined.rank == 0 else None
        where: list[str | None] = [None, None]
        if run is not None:
            where = [str(run.staging), str(run.target)]
        dist.broadcast_object_list(where, src=0)
        staging, target = (str(part) for part in where)
        folder = RANK_FOLDER.format(rank=joined.rank)
        os.makedirs(os.path.join(staging, folder), exist_ok=True)
        mine: Profile | None = None
        error: Exception | None = None
        try:
            mine = collect_trial(
                rank_config(cfg, plan, joined.rank),
                BorrowedRun(os.path.join(staging, folder), os.path.join(target, folder)),
                on_progress if joined.rank == 0 else None,
                notes,
            )
        except Exception as err:  # rank 0 hears of it first, then it is raised here
            error = err
        gathered: list[Any] | None = [None] * joined.world_size if joined.rank == 0 else None
        told = None if error is None else f"{type(error).__name__}: {error}"
        dist.gather_object((mine, told), gathered, dst=0)
        if error is not None:
            raise error
        assert mine is not None
        if gathered is None:
            return [], None, mine
        for rank, (profile, failure) in enumerate(gathered):
            if profile is None:
                raise RankFailedError(
                    f"rank {rank} of {joined.world_size} failed: {failure}",
                    hint="its own output names the error",
                )
        return [profile for profile, _ in gathered], run, mine
    except BaseException:
        if run is not None:
            run.discard()
        raise
    finally:
        dist.destroy_process_group()


def rank_config(cfg: ProfileConfig, plan: WorldPlan, rank: int) -> ProfileConfig:
    """What rank `rank` measures: the same config on its own device (the batch stays global:
    the step splits it by the world size, as `libreyolo train` does)."""
    device = DeviceConfig(name=plan.devices[rank], nproc=plan.world_size)
    return dataclasses.replace(cfg, device=device)


def rank_env(rank: int, plan: WorldPlan, port: int) -> dict[str, str]:
    """torchrun's variables for one local rank."""
    size = str(plan.world_size)
    return {
        "RANK": str(rank),
        "LOCAL_RANK": str(rank),
        "WORLD_SIZE": size,
        "LOCAL_WORLD_SIZE": size,
        "MASTER_ADDR": HOST,
        "MASTER_PORT": str(port),
    }


def measure_world(
    cfg: ProfileConfig,
    run: StagedRun,
    plan: WorldPlan,
    on_progress: Progress | None,
    notes: Sequence[str],
) -> list[Profile]:
    """Every rank's profile, in rank order, each measured by a process of its own into
    `rank<i>/` of `run`."""
    import torch.distributed as dist

    from libreyolo.measure.device import resolve_device

    for device in dict.fromkeys(plan.devices):  # one not there: one line now, no rank started
        resolve_device(device)
    timeout = timedelta(seconds=COLLECTIVE_TIMEOUT_S)
    # Hosted here, on a port the kernel chose: the ranks join it, nothing else can take it.
    store = dist.TCPStore(
        HOST, 0, plan.world_size, is_master=True, timeout=timeout, wait_for_workers=False
    )
    context = fresh_context()
    children, readers = [], []
    try:
        for rank in range(plan.world_size):
            folder = RANK_FOLDER.format(rank=rank)
            run.path(folder).mkdir()
            reader, writer = context.Pipe(duplex=False)
            args = (
                writer,
                rank_config(cfg, plan, rank),
                rank,
                plan.world_size,
                plan.backend,
                str(run.path(folder)),
                str(run.final(folder)),
                list(notes),
                dict(os.environ) | rank_env(rank, plan, store.port),
            )
            child = context.Process(target=_rank_main, args=args, name=f"libreyolo-rank-{rank}")
            with start_method(context.get_start_method()):
                child.start()
            writer.close()
            children.append(child)
            readers.append(reader)
        return _collect(children, readers, on_progress)
    finally:
        for child in children:  # Ctrl-C, SIGTERM, a failed rank: none is left measuring
            stop_child(child)
        for reader in readers:
            reader.close()


def _collect(
    children: Sequence[multiprocessing.process.BaseProcess],
    readers: list[Connection],
    on_progress: Progress | None,
) -> list[Profile]:
    """Relay rank 0's progress and every rank's warnings until each rank has sent its profile;
    the first rank that ends otherwise fails the run."""
    from libreyolo.measure.trials import relayed

    profiles: dict[int, Profile] = {}
    waiting = {reader: rank for rank, reader in enumerate(readers)}
    sentinels = {child.sentinel: rank for rank, child in enumerate(children)}
    while len(profiles) < len(children):
        ready = multiprocessing.connection.wait([*waiting, *sentinels])
        for reader in [item for item in ready if item in waiting]:
            rank = waiting[reader]
            try:
                kind, payload = reader.recv()
            except EOFError:
                del waiting[reader]
                continue
            if relayed(kind, payload, on_progress if rank == 0 else None):
                continue
            if kind == "profile":
                profiles[rank] = payload
                del waiting[reader]
            else:
                _died_first(children, rank, profiles)
                _failed(rank, (kind, payload), None, profiles, len(children))
        for sentinel in [item for item in ready if item in sentinels]:
            rank = sentinels[sentinel]
            if rank in profiles:
                del sentinels[sentinel]
            elif readers[rank] not in waiting:  # ended, and nothing more to read from it
                children[rank].join()
                _failed(rank, None, children[rank].exitcode, profiles, len(children))
    return [profiles[rank] for rank in range(len(children))]


def _died_first(
    children: Sequence[multiprocessing.process.BaseProcess],
    failing: int,
    profiles: dict[int, Profile],
) -> None:
    """When a rank fails because a peer died (its collective lost the connection), the peer is
    the cause: give the others DEATH_GRACE_S to be seen dead, and name the first one that
    died without a word."""
    others = {c.sentinel: r for r, c in enumerate(children) if r != failing and r not in profiles}
    multiprocessing.connection.wait(list(others), timeout=DEATH_GRACE_S)
    for rank, child in enumerate(children):
        if rank in others.values() and child.exitcode is not None and child.exitcode != 0:
            _failed(rank, None, child.exitcode, profiles, len(children))


def _failed(
    rank: int,
    last: tuple[str, Any] | None,
    exitcode: int | None,
    profiles: dict[int, Profile],
    world_size: int,
) -> NoReturn:
    """Raise what rank `rank`'s end means for the run (the caller stops the other ranks)."""
    from libreyolo.measure.trials import ended

    if last is None:
        hint = "run it again; if the kernel's OOM killer ended it (dmesg says), lower --batch"
        raise RankFailedError(
            f"rank {rank} of {world_size}: its process exited {exit_text(exitcode)} before it "
            "finished",
            hint=hint,
        )
    error = ended(*last)
    if isinstance(error, ProfileError) and not _waited_out(str(error)):
        raise error  # an expected error: the same line and exit as one process gives
    text = str(error)
    if _waited_out(text):
        pending = [r for r in range(world_size) if r != rank and r not in profiles]
        who = ", ".join(str(r) for r in pending) or "another rank"
        raise RankFailedError(
            f"rank {who} hung: rank {rank} waited {COLLECTIVE_TIMEOUT_S:.0f} s for it in a "
            f"collective ({text})",
            hint="run it with --nproc 1 to see where that rank stops",
        )
    raise RankFailedError(
        f"rank {rank} of {world_size} failed: {text}",
        hint="run it again with --debug, or with --nproc 1 to see the error alone",
    )


def _waited_out(text: str) -> bool:
    lowered = text.lower()
    return "timed out" in lowered or "timeout" in lowered


def _rank_main(
    writer: Connection,
    cfg: ProfileConfig,
    rank: int,
    world_size: int,
    backend: str,
    staging: str,
    target: str,
    notes: list[str],
    env: dict[str, str],
) -> None:
    """One rank's process: join the world through the parent's store, measure the window into
    its folder of the staged set, leave the world, and say how it went."""
    from libreyolo.measure.artifacts import BorrowedRun
    from libreyolo.measure.device_cap import capped_device_memory, checked_budget
    from libreyolo.measure.from_config import collect_trial
    from libreyolo.measure.trials import report_to_parent, start_child

    start_child(env)
    _name_process(f"libreyolo-rank{rank}")

    def measure(progress: Progress) -> Profile:
        import torch.distributed as dist

        timeout = timedelta(seconds=COLLECTIVE_TIMEOUT_S)
        port = int(env["MASTER_PORT"])
        store = dist.TCPStore(HOST, port, world_size, is_master=False, timeout=timeout)
        dist.init_process_group(
            backend, store=store, rank=rank, world_size=world_size, timeout=timeout
        )
        try:
            # a sweep point's tune.memory_budget_mb caps each rank's own GPU (device_cap.py)
            budget_mb = checked_budget(cfg.tune.memory_budget_mb)
            with capped_device_memory(budget_mb, cfg.device.name):
                return collect_trial(cfg, BorrowedRun(staging, target), progress, notes)
        finally:
            dist.destroy_process_group()

    report_to_parent(writer, measure)


def _name_process(name: str) -> None:
    """Show `name` as the process's name in ps and top (Linux; best effort, 15 bytes)."""
    with contextlib.suppress(Exception):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_NAME, name.encode()[:15], 0, 0, 0)


def world_documents(
    cfg: ProfileConfig, profiles: list[Profile], plan: WorldPlan, launcher: str
) -> dict[str, Profile]:
    """The set's documents: each rank's profile in its folder, and the world profile, whose
    recorded config is the run's own (`--device 0,1`, not rank 0's `cuda:0`)."""
    import msgspec.structs

    from libreyolo.analysis.world_profile import world_profile
    from libreyolo.config.compose import as_plain_dict
    from libreyolo.measure.artifacts import PROFILE_NAME

    documents = {rank_profile(rank): profile for rank, profile in enumerate(profiles)}
    base = profiles[0]
    ranks = [
        msgspec.structs.replace(
            base, run=msgspec.structs.replace(base.run, config=as_plain_dict(cfg))
        ),
        *profiles[1:],
    ]
    documents[PROFILE_NAME] = world_profile(
        ranks,
        backend=plan.backend,
        launcher=launcher,
        global_batch=plan.global_batch,
    )
    return documents
