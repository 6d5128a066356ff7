"""`tuned.yaml`: a training search's answer as a config file to check into a repository.

Role: for each recommendation of a `mode=run` search, `tuned_text` writes the settings to
train with (batch, imgsz, amp, threads when the series set them, the dataset's name and
workers, the model's family, size and weights, and on several ranks the device group whose
ranks share the global batch, from the recommended point's `point.json`)
as a `# @package _global_` file, composable as `+experiment=<name>` by `libreyolo-sweep` and
as `--config experiment/<name>` by `libreyolo profile`, with its evidence on a comment line.
One series writes `tuned.yaml` (`sweep_io.TUNED_CONFIG`); several write one file each, named
by the series' values (`tuned_s640_amp1.yaml`, the point folder's name without its batch).
`write_tuned` writes them beside tune.json and removes the ones of ours a previous search
left that no recommendation names any more. A file holds no `_target_`: nothing in it runs.

Must not: import Hydra or OmegaConf, or replace a file it did not write (`is_tuned_config`
tells ours; the sweep refuses a foreign one before its first point).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

import yaml

from libreyolo.config.schema import requested_ranks
from libreyolo.document.files import write_atomic
from libreyolo.document.json_value import JsonObject, JsonValue
from libreyolo.document.limits import open_regular
from libreyolo.document.sweep_io import TUNED_CONFIG
from libreyolo.errors import ProfileError

HEADER = "# @package _global_"
MARK = "# libreyolo-sweep hydra/sweeper=tune"  # our files' second line starts so
_HEAD_BYTES = 4096
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def tuned_name(point: str, batch: int, *, index: int, num_series: int) -> str:
    """The file of series number `index` whose recommended point is the folder `point`."""
    if num_series == 1:
        return TUNED_CONFIG
    prefix = f"b{batch}_"
    rest = point[len(prefix) :] if point.startswith(prefix) else ""
    rest = _UNSAFE.sub("_", rest).strip("_.")
    return f"tuned_{rest}.yaml" if rest else f"tuned_{index + 1}.yaml"


def _member(config: Mapping[str, JsonValue], key: str) -> JsonObject:
    value = config.get(key)
    return value if isinstance(value, dict) else {}


def _picked(group: JsonObject, keys: tuple[str, ...], kinds: tuple[type, ...]) -> JsonObject:
    """`keys` of `group` whose values have one of `kinds` (a value no sweep writes is left out:
    the file must compose)."""
    return {k: group[k] for k in keys if k in group and type(group[k]) in kinds}


def train_settings(
    *,
    batch: int,
    imgsz: int | None,
    amp: bool | None,
    threads: int | None,
    workers: int | None,
    world: JsonObject | None = None,
) -> str:
    """The settings as one line: `batch=32 imgsz=640 amp=true workers=8`; on several ranks
    (`world`, the point's device group) `batch` is the global batch and the line says over
    which: `device=0,1`, or CPU ranks, which 1.6.0's trainer refuses (checked: `torchrun
    --nproc-per-node 2 libreyolo train ... device=cpu` fails in its SyncBatchNorm)."""
    words = [f"batch={batch}"]
    words += [] if imgsz is None else [f"imgsz={imgsz}"]
    words += [] if amp is None else [f"amp={str(amp).lower()}"]
    words += [] if workers is None else [f"workers={workers}"]
    words += [] if threads is None else [f"threads={threads}"]
    name = None if world is None else str(world.get("name"))
    words += [] if name is None else [f"device={name}"]
    line = " ".join(words)
    if world is not None and name == "cpu":  # 1.6.0's SyncBatchNorm refuses CPU modules
        ranks = requested_ranks(world)
        line += (
            f"; the global batch over {ranks} CPU ranks, which libreyolo 1.6.0 does not train "
            f"(its SyncBatchNorm needs GPUs): on GPUs, measure --device "
            f"{','.join(map(str, range(ranks)))}"
        )
    return line


def world_of(config: Mapping[str, JsonValue]) -> JsonObject | None:
    """The point config's device group where it trains on several ranks (None for one)."""
    device = _picked(_member(config, "device"), ("name", "nproc"), (str, int))
    return device if requested_ranks(device) > 1 else None


def workers_of(config: Mapping[str, JsonValue]) -> int | None:
    """The point config's `dataset.workers`."""
    workers = _member(config, "dataset").get("workers")
    return workers if type(workers) is int else None


def tuned_text(
    config: Mapping[str, JsonValue],
    *,
    batch: int,
    imgsz: int | None,
    amp: bool | None,
    threads: int | None,
    why: str,
    command: str | None = None,
) -> str:
    """The config file of one recommendation; `config` is its point's resolved config and
    `why` the goal and evidence for the comment line; `command`, libreyolo 1.x's training
    command (a trainer search), a comment line of its own."""
    settings: dict[str, object] = {"batch": batch}
    settings |= {} if imgsz is None else {"imgsz": imgsz}
    settings |= {} if amp is None else {"amp": amp}
    settings |= {} if threads is None else {"threads": threads}
    dataset = _picked(_member(config, "dataset"), ("name_or_path", "workers"), (str, int))
    model = _picked(_member(config, "model"), ("family", "size", "weights"), (str, type(None)))
    settings |= {"dataset": dataset} if dataset else {}
    settings |= {"model": model} if model else {}
    world = world_of(config)  # the global batch means nothing without its ranks
    settings |= {} if world is None else {"device": world}
    settings |= _trainer_settings(config)
    comment = _CONTROL.sub(" ", why)
    body = yaml.safe_dump(settings, sort_keys=False, allow_unicode=True, default_flow_style=False)
    train = "" if command is None else f"# train: {_CONTROL.sub(' ', command)}\n"
    return f"{HEADER}\n{MARK}: {comment}\n{train}{body}"


def _trainer_settings(config: Mapping[str, JsonValue]) -> JsonObject:
    """`trainer` and `train_args` of a search of libreyolo 1.x's own trainer ({} else)."""
    trainer, args = config.get("trainer"), config.get("train_args")
    if not isinstance(trainer, str):
        return {}
    words = [a for a in args if isinstance(a, str)] if isinstance(args, list) else []
    return {"trainer": trainer, "train_args": list(words)}


def is_tuned_config(path: Path) -> bool:
    """Whether `path` is a regular file whose head is ours."""
    try:
        with open_regular(str(path), 1 << 20) as handle:
            head = handle.read(_HEAD_BYTES).decode("utf-8", errors="replace")
    except (OSError, ProfileError):
        return False
    lines = head.splitlines()
    return len(lines) >= 2 and lines[0] == HEADER and lines[1].startswith(MARK)


def tuned_files(root: Path) -> list[Path]:
    """The files at `root` a search may write: `tuned.yaml` and `tuned_*.yaml`."""
    return sorted(
        p for p in root.glob("tuned*.yaml") if p.name == TUNED_CONFIG or p.name.startswith("tuned_")
    )


def write_tuned(root: Path, texts: Mapping[str, str]) -> None:
    """Write each named file of `texts` at `root` (atomically), then remove the files of
    ours there that `texts` does not name."""
    for name, text in texts.items():
        write_atomic(root / name, text.encode("utf-8"))
    for path in tuned_files(root):
        if path.name not in texts and is_tuned_config(path):
            path.unlink()
