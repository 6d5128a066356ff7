"""Point folder names that tell every point of a sweep apart.

Role: the packaged folder template (`hydra.sweep.subdir`, `b4_s640_amp1`) names batch, imgsz,
amp and threads. When a multirun sweeps any other key (`model=yolo9t,yolox_n`, `conf=...`,
`window.warmup=...`, `+experiment=a,b`), `name_swept_keys` extends the packaged template with
one `_<key>-<value>` part per such key (`b4_s640_amp1_model-yolox_n`), by appending the
extended template to the multirun's Hydra overrides, from which Hydra builds every job's config
in whichever launcher runs it (the parent's `on_multirun_start` sees the same config object the
sweeper is then set up with). A template the user set is left as it is, but
must name every swept key (or the job number), else the sweep is refused before any point runs:
two jobs in one folder would overwrite each other's profile. The values are written by the
`slug` resolver: safe in a file name, distinct for distinct values.

Must not: run a job, write a file, or change a template the user chose.
"""

from __future__ import annotations

import re

from omegaconf import DictConfig, OmegaConf, open_dict, read_write

from libreyolo.errors import UsageError

# libreyolo/conf/profile.yaml's hydra.sweep.subdir (a test holds the two equal).
PACKAGED_SUBDIR = "b${batch}_s${imgsz}_amp${flag:${amp}}${tag:_t,${threads}}"
NAMED_KEYS = ("batch", "imgsz", "amp", "threads")  # what the packaged template names
# A template naming one of these tells every job apart whatever was swept.
PER_JOB = ("hydra.job.num", "hydra.job.id", "hydra:job.num", "hydra:job.id", "override_dirname")
SUBDIR_HINT = "name every swept key in hydra.sweep.subdir (e.g. _${conf}), or leave it unset"


def swept_keys(config: DictConfig) -> list[str]:
    """The keys the multirun `config` sweeps, in order: its sweeper's `params`, then the
    command line's sweep overrides (`a=1,2`, `choice(...)`, `range(...)`), `+`/`~` dropped."""
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    params = OmegaConf.select(config, "hydra.sweeper.params") or {}
    keys = [str(key).lstrip("+~") for key in params]
    node = OmegaConf.select(config, "hydra.overrides.task")
    task = [] if node is None else OmegaConf.to_container(node, resolve=False)
    assert isinstance(task, list)
    loader = (
        GlobalHydra.instance().config_loader() if GlobalHydra.instance().is_initialized() else None
    )
    parser = OverridesParser.create(config_loader=loader)
    for text in task:
        try:
            override = parser.parse_override(str(text))
        except HydraException:
            continue  # Hydra refuses it itself, with its own message
        if override.is_sweep_override():
            keys.append(override.key_or_group)
    return list(dict.fromkeys(keys))


def _is_group(config: DictConfig, key: str) -> bool:
    choices = OmegaConf.select(config, "hydra.runtime.choices") or {}
    return key in choices


def _part(config: DictConfig, key: str) -> str:
    """`_<key>-<value>` for one swept key: the group's choice, else the config value."""
    label = re.sub(r"[^A-Za-z0-9_]", "_", key.rsplit(".", 1)[-1].rsplit("/", 1)[-1])
    value = f"hydra:runtime.choices.{key}" if _is_group(config, key) else key
    return f"_{label}-${{slug:${{{value}}}}}"


def names_key(template: str, key: str) -> bool:
    """Whether `template` writes `key`'s value (or something unique to each job)."""
    return (
        any(marker in template for marker in PER_JOB)
        or f"${{{key}}}" in template
        or f"choices.{key}}}" in template
    )


def name_swept_keys(config: DictConfig) -> str:
    """Make the multirun `config`'s point folders name every swept key and return the
    template they use: the packaged one extended, or the user's own, checked (UsageError when
    it leaves a swept key out)."""
    sweep = OmegaConf.to_container(config.hydra.sweep, resolve=False)
    assert isinstance(sweep, dict)
    template = str(sweep.get("subdir"))
    keys = swept_keys(config)
    if template != PACKAGED_SUBDIR:
        missing = [key for key in keys if not names_key(template, key)]
        if missing:
            raise UsageError(
                f"hydra.sweep.subdir {template!r} does not name the swept key "
                f"{', '.join(repr(k) for k in missing)}: points would share a folder and "
                "overwrite each other's profile",
                hint=SUBDIR_HINT,
            )
        return template
    extra = [key for key in keys if key not in NAMED_KEYS]
    if not extra:
        return template
    extended = template + "".join(_part(config, key) for key in extra)
    with read_write(config.hydra), open_dict(config.hydra):
        config.hydra.overrides.hydra.append(f"hydra.sweep.subdir='{extended}'")
        config.hydra.sweep.subdir = extended
    return extended
