"""What a profile measured, in the one word the code uses for it: `Mode.TRAIN` or `Mode.INFER`.

The document stores the concept twice, in two spellings that stay as they are so that every
file written so far reads the same: `kind` holds the verb (`"train"`, `"infer"`, the enum's
values) and `run.mode` the noun (`"training"`, `"inference"`), which `--json` output prints too.
`Mode.noun` and `Mode.of_noun` are the one place the two spellings meet. (The CLI's subcommands
and the config's `mode` option say `run` and `infer`; `config/schema.py` maps them here.)

Must not: import anything beyond the standard library (readers import it at start-up).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

RunMode = Literal["training", "inference"]  # `run.mode` as stored and printed


class Mode(StrEnum):
    """A training step or an inference call."""

    TRAIN = "train"
    INFER = "infer"

    @property
    def noun(self) -> RunMode:
        """The spelling `run.mode` stores and `--json` prints."""
        return "training" if self is Mode.TRAIN else "inference"

    @classmethod
    def of_noun(cls, noun: str) -> Mode:
        """The mode whose `noun` is `noun`; ValueError for any other word."""
        for mode in cls:
            if mode.noun == noun:
                return mode
        raise ValueError(f"not a run mode: {noun!r}")
