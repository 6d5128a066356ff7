"""The grid a sweep is about to run, known before its first point: `sweep_plan.json`.

Role: `grid_plan` lists each job's point folder (relative to the sweep dir) and overrides in
launch order, the way Hydra's basic sweeper and its launchers derive them (the sweeper's
`params` then the command line's overrides, their Cartesian product, each job's
`hydra.sweep.subdir` resolved on its own config: `job_folder`, which the tune search uses for
the jobs it launches); `write_plan` stores it in the sweep folder,
so a sweep stopped or killed half-way still knows which points never ran (`missing`).
Other sweepers (optuna, nevergrad...) choose their points as they go: no plan, and the report
falls back to the point folders found.

Must not: run a job, or write anything but `sweep_plan.json`. Hydra's private basic sweeper is
imported only when a plan is made, so a Hydra that moved it costs the plan, not the sweep.
"""

from __future__ import annotations

from pathlib import Path

from hydra.core.config_loader import ConfigLoader
from hydra.core.global_hydra import GlobalHydra
from hydra.core.hydra_config import HydraConfig
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import DictConfig, OmegaConf, open_dict

from libreyolo.document.codec import document_bytes
from libreyolo.document.files import write_atomic
from libreyolo.document.sweep_files import PLAN_FILE
from libreyolo.document.sweep_model import PLAN_SCHEMA, SweepPlan
from libreyolo.errors import UsageError
from libreyolo.sweep.naming import SUBDIR_HINT

BASIC_SWEEPER = "hydra._internal.core_plugins.basic_sweeper.BasicSweeper"
Plan = dict[str, list[str]]  # point folder relative to the sweep dir -> its overrides


def _name(root: Path, subdir: str) -> str:
    """`subdir` as the report names the folder (normalised), or as given when it leads out."""
    folder = (root / subdir).resolve()
    return folder.relative_to(root).as_posix() if folder.is_relative_to(root) else subdir


def grid_plan(config: DictConfig) -> Plan | None:
    """The multirun `config`'s points, in launch order; None unless the basic sweeper runs it.
    UsageError when two jobs would land in one folder (a user's template that leaves out a
    swept value, or two values that are one: `conf=0.1,0.10`)."""
    if config.hydra.sweeper.get("_target_") != BASIC_SWEEPER:
        return None
    # Hydra's own (private) split of a grid into jobs: pinned with hydra-core 1.3.x
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper

    loader = GlobalHydra.instance().config_loader()
    params = [f"{key}={value}" for key, value in (config.hydra.sweeper.params or {}).items()]
    task = OmegaConf.to_container(config.hydra.overrides.task, resolve=False)
    assert isinstance(task, list)
    parsed = OverridesParser.create(config_loader=loader).parse_overrides(params + task)
    plan: Plan = {}
    for num, job in enumerate(BasicSweeper.split_arguments(parsed, None)[0]):
        name = job_folder(loader, config, list(job), num)
        if name in plan:
            raise _shared_folder(name, plan[name], list(job))
        plan[name] = list(job)
    return plan


def job_folder(loader: ConfigLoader, config: DictConfig, job: list[str], num: int) -> str:
    """The point folder (relative to the sweep dir) of job number `num` with overrides `job`
    in the multirun `config`: its `hydra.sweep.subdir`, resolved on the job's own config."""
    root = Path(str(config.hydra.sweep.dir)).resolve()
    job_config = loader.load_sweep_config(config, job)
    with open_dict(job_config):  # as the basic launcher numbers its jobs
        job_config.hydra.job.id = num
        job_config.hydra.job.num = num
    hydra_config = HydraConfig.instance()
    previous = hydra_config.cfg
    try:
        hydra_config.set_config(job_config)  # for `${hydra:...}` in the subdir template
        return _name(root, str(job_config.hydra.sweep.subdir))
    finally:
        hydra_config.cfg = previous


def _shared_folder(name: str, first: list[str], second: list[str]) -> UsageError:
    """The refusal of two jobs that would measure into one folder, naming what tells them
    apart (nothing: a value given twice)."""
    ours, theirs = [o for o in first if o not in second], [o for o in second if o not in first]
    if not ours and not theirs:
        return UsageError(
            f"two jobs of the grid are the same point {name!r} ({' '.join(first[-1:])} twice)",
            hint="give each value of a swept key once",
        )
    return UsageError(
        f"two jobs of the grid share the point folder {name!r} ({' '.join(ours)} and "
        f"{' '.join(theirs)}): the second would overwrite the first's profile",
        hint=SUBDIR_HINT,
    )


def write_plan(root: Path, plan: Plan | None) -> None:
    """Store `plan` as `root`'s `sweep_plan.json`; without one, drop a previous sweep's (the
    caller has checked that it is ours)."""
    path = root / PLAN_FILE
    if plan is None:
        path.unlink(missing_ok=True)
        return
    document = SweepPlan(schema=PLAN_SCHEMA, points=plan)
    # the points stay in launch order: the order is data (the report lists them so)
    write_atomic(path, document_bytes(document, sort_keys=False))
