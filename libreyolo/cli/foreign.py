"""`libreyolo train ...` and the other commands of libreyolo 1.x, typed at this install.

Role: this package is also the distribution `libreyolo` but provides `libreyolo profile`
only; 1.x's commands (train, predict, val, export...) live in the user's own training
environment. One line (exit 2) says so and, when a `--trainer` run has shown where that
environment is (`known_trainer`), gives the command to run there, as typed. Must not: run it.
"""

from __future__ import annotations

from libreyolo.errors import UsageError
from libreyolo.known_trainer import known_trainer

# libreyolo 1.6.0's top-level commands (its `libreyolo --help`); `profile` is ours.
V1_COMMANDS = frozenset(
    {
        "train", "predict", "val", "export", "quantize", "ui", "monitor", "label", "doctor",
        "version", "checks", "models", "formats", "cfg", "info", "metadata", "compare",
        "verify", "enroll", "detany3d", "fcos3d", "wilddet3d", "3dmood",
    }
)  # fmt: skip


def refuse_v1_command(words: list[str]) -> None:
    """UsageError when `words` start with a command of libreyolo 1.x."""
    if not words or words[0] not in V1_COMMANDS:
        return
    from libreyolo.measure.trainer.settings import TrainerCommand

    python = known_trainer()
    if python is None:
        hint = (
            "run it from the environment where libreyolo 1.x is installed; profile its "
            "training with: libreyolo profile run DATA --trainer <that environment>"
        )
    else:
        command = TrainerCommand(python=python, words=tuple(words[1:]))
        hint = f"run it with libreyolo 1.x's own: {command.command_line(subcommand=words[0])}"
    raise UsageError(
        f"'{words[0]}' is a command of libreyolo 1.x: this install provides "
        "'libreyolo profile' only",
        hint=hint,
    )
