"""What `profile run --trainer` asks of libreyolo 1.x's `libreyolo train`.

Role: from the config, the interpreter to run (the environment's own Python, found from the
folder or file given), the `key=value` words its `libreyolo train` gets (the flags' values
in 1.x's spelling, then `--train-arg`s), the environment (`--threads` is `OMP_NUM_THREADS`,
which 1.x's thread cap obeys) and the one command line that runs the same training by hand.
Refuses (TrainerError, exit 2) what has no meaning for 1.x's trainer or what the probe owns,
before anything starts. Must not: start a process, import torch, or read a dataset.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from pathlib import Path

from libreyolo.config.schema import ExecMode, ModeOption, ProfileConfig
from libreyolo.errors import MissingFileError, TrainerError
from libreyolo.workload.train_keys import ALIASES, TRAINER_FLAG_KEYS, words_of

# 1.x keys the probe owns: where the run writes, its profiler and how it stops.
PROBE_KEYS = frozenset(
    {
        "project",
        "name",
        "exist_ok",
        "profile",
        "profile_then_stop",
        "profile_warmup",
        "profile_steps",
        "profile_trace",
        "profile_open",
        "resume",
        "dry_run",
        "json",
        "quiet",
        "help_json",
    }
)
INTERPRETER_NAMES = ("bin/python", "bin/python3", "Scripts/python.exe")
THREADS_VARIABLE = "OMP_NUM_THREADS"


@dataclass(frozen=True, slots=True)
class TrainerCommand:
    """One `libreyolo train` of a 1.x environment: `python` runs it with `words`."""

    python: str  # absolute, as given: a virtual environment's python is a link to keep
    words: tuple[str, ...]
    threads: int | None = None

    def environment(self) -> dict[str, str]:
        """What the trainer's process gets on top of ours."""
        return {THREADS_VARIABLE: str(self.threads)} if self.threads else {}

    def executable(self) -> list[str]:
        """1.x's `libreyolo` command of that environment: the script beside its python, else
        that python running 1.x's entry point (never a `libreyolo` found on PATH: ours)."""
        script = Path(self.python).parent / "libreyolo"
        if script.is_file() and os.access(script, os.X_OK):
            return [str(script)]
        return [self.python, "-c", "from libreyolo.cli import entrypoint; entrypoint()"]

    def command_line(
        self, words: tuple[str, ...] | None = None, *, subcommand: str = "train"
    ) -> str:
        """The training as one shell line, pasted as is: `OMP_NUM_THREADS=2 <env>/bin/libreyolo
        train data=... model=...`; `words` replace this command's own."""
        env = [f"{name}={shlex.quote(value)}" for name, value in self.environment().items()]
        argv = [*self.executable(), subcommand, *(self.words if words is None else words)]
        return " ".join([*env, *(shlex.quote(part) for part in argv)])


def find_interpreter(path: str) -> str:
    """The Python interpreter `--trainer PATH` names: PATH itself when it is an executable
    file, else the environment folder's own `bin/python`. Absolute, links kept (a virtual
    environment's python is a link to the base interpreter, whose packages are not its own)."""
    given = Path(path).expanduser()
    if not given.exists():
        raise MissingFileError(
            f"--trainer {path}: no such file or folder",
            hint="give the Python of the environment where libreyolo 1.x is installed, or its "
            "folder (e.g. --trainer ~/venvs/yolo)",
        )
    candidates = [given] if given.is_file() else [given / name for name in INTERPRETER_NAMES]
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return os.path.abspath(candidate)
    if given.is_file():
        raise TrainerError(f"--trainer {path}: not an executable file")
    raise TrainerError(
        f"--trainer {path}: no Python interpreter in this folder (looked for "
        f"{', '.join(INTERPRETER_NAMES)})",
        hint="give the environment's folder or its Python interpreter",
    )


def check_trainer_config(cfg: ProfileConfig) -> None:
    """TrainerError for a config the trainer cannot be measured with (before anything runs)."""
    if cfg.mode is not ModeOption.run:
        raise TrainerError(
            "--trainer measures libreyolo 1.x's training; `profile infer` measures this "
            "package's inference",
            hint="drop trainer= for infer",
        )
    refused = {
        "--size": cfg.model.size is not None,
        "--exec": cfg.exec.name is not ExecMode.eager,
        "--channels-last": cfg.exec.channels_last is not None,
        "--variant": bool(cfg.variants),
    }
    for flag, given in refused.items():
        if given:
            raise TrainerError(
                f"{flag} has no meaning for libreyolo 1.x's trainer",
                hint="give 1.x's own setting with --train-arg KEY=VALUE (e.g. compile=true), "
                "or name the size in --weights",
            )
    if cfg.train.no_aug_phase:
        raise TrainerError(
            "--no-aug-phase picks the phase of the built-in step; 1.x's trainer starts at epoch 1",
            hint="give 1.x's own keys instead, e.g. --train-arg epochs=1 --train-arg "
            "no_aug_epochs=1",
        )
    device_word(cfg.device.name)
    seen: set[str] = set(cfg.train.given())  # 1.x's field names, as ALIASES maps words
    for word in cfg.train_args:
        key = word.split("=", 1)[0]
        if "=" not in word or not key.isidentifier():
            raise TrainerError(f"--train-arg {word!r}: must be KEY=VALUE, e.g. mosaic=0.0")
        if key in TRAINER_FLAG_KEYS:  # given as --train-arg they would fight the flag
            raise TrainerError(
                f"--train-arg {word}: {key}= is set by {TRAINER_FLAG_KEYS[key]}",
                hint=f"use {TRAINER_FLAG_KEYS[key]}",
            )
        if key in PROBE_KEYS:
            raise TrainerError(f"--train-arg {word}: the profiler sets {key}= itself")
        name = ALIASES.get(key, key)
        if name in seen:
            raise TrainerError(f"--train-arg {key}= is given twice (or also by a flag)")
        seen.add(name)


def device_word(device: str) -> str:
    """Our `--device` in 1.x's spelling: `0`, `cuda:1` -> `1`, `cpu`, `mps`."""
    name = device.strip().lower()
    if name in ("cpu", "mps"):
        return name
    if name == "cuda":
        return "0"
    index = name.removeprefix("cuda:")
    if index.isdigit():
        return str(int(index))
    raise TrainerError(
        f"--device {device}: the trainer is measured on one device (cpu, mps, or a CUDA index)",
        hint="profiling several GPUs at once is not supported yet",
    )


def train_words(cfg: ProfileConfig, data: str) -> tuple[str, ...]:
    """The `key=value` words of `libreyolo train` for `cfg`, `data` the dataset as 1.x will
    read it (a YAML path, or a name 1.x resolves itself)."""
    weights = cfg.model.weights
    if Path(weights).expanduser().is_file():
        weights = os.path.abspath(Path(weights).expanduser())
    words = [
        f"data={data}",
        f"model={weights}",
        f"batch={cfg.batch}",
        f"imgsz={cfg.imgsz}",
        f"device={device_word(cfg.device.name)}",
        f"workers={cfg.dataset.workers}",
        f"amp={cfg.amp}",
    ]
    if cfg.dataset.cache:
        words.append("cache=ram")
    if cfg.max_labels is not None:
        words.append(f"max_labels={cfg.max_labels}")
    words += words_of(cfg.train.given())  # `--mosaic`, `--optimizer`, ... in 1.x's names
    return (*words, *cfg.train_args)


def trainer_command(cfg: ProfileConfig, data: str) -> TrainerCommand:
    """The command `cfg` measures (`cfg.trainer` set): interpreter, words, thread cap."""
    if cfg.trainer is None:  # a caller's slip
        raise ValueError("trainer_command needs cfg.trainer")
    return TrainerCommand(
        python=find_interpreter(cfg.trainer),
        words=train_words(cfg, data),
        threads=cfg.threads,
    )
