"""The fake `libreyolo train key=value ...` (1.x's syntax; `fake=` picks a behaviour)."""

from __future__ import annotations

import dataclasses
import sys


def entrypoint() -> None:
    from libreyolo.training.config import TrainConfig
    from libreyolo.training.trainer import FakeTrainer

    words = sys.argv[1:]
    if words[:1] != ["train"]:
        sys.stderr.write("Error [usage]: only train\n")
        raise SystemExit(2)
    fields = {f.name: f for f in dataclasses.fields(TrainConfig)}
    values: dict[str, object] = {}
    for word in words[1:]:
        key, _, value = word.partition("=")
        if key not in fields and key not in ("model", "amp", "cache", "pretrained"):
            sys.stderr.write(f"Error [config_unknown_key]: Unknown key '{key}'\n")
            raise SystemExit(2)
        if key in fields:
            kind = type(fields[key].default)
            values[key] = kind(value) if kind is not bool else value.lower() == "true"
    config = TrainConfig(**values)
    if config.fake == "exit":
        sys.stderr.write("Error [data_not_found]: no such dataset\n")
        raise SystemExit(3)
    FakeTrainer(config).train()
    sys.stdout.write("Training complete\n")
    raise SystemExit(0)
