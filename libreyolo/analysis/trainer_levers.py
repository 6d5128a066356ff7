"""A verdict's levers in libreyolo 1.x's own spelling, for a profile of its trainer.

A profile made with `--trainer` tells the user what to change in `libreyolo train`, whose
settings are `key=value` words (`batch=`, `workers=`, `cache=ram`) and whose CPU thread cap is
the `OMP_NUM_THREADS` variable; a lever that names one of this package's flags would send them
to a flag their trainer does not have. Pure.
"""

from __future__ import annotations

import re

import msgspec.structs

from libreyolo.document.model import Verdict

_FLAGS = re.compile(r"--(batch|workers|imgsz)\b")
_WHOLE = {
    "cache images in RAM": "cache=ram (images in RAM)",
    "CUDA graphs": "cuda_graph=true",
    "op fusion (torch.compile)": "compile=true (op fusion)",
    "AMP / bf16": "amp=true, amp_dtype=bfloat16",
    "more CPU threads": "more CPU threads (OMP_NUM_THREADS)",
    "--threads N below the usable CPUs": "OMP_NUM_THREADS=N below the usable CPUs",
}


def in_trainer_words(lever: str) -> str:
    """One lever as libreyolo 1.x's `libreyolo train` spells it."""
    if lever in _WHOLE:
        return _WHOLE[lever]
    return _FLAGS.sub(lambda match: f"{match.group(1)}=", lever)


def for_trainer(verdict: Verdict) -> Verdict:
    """`verdict` with every lever in 1.x's spelling."""
    return msgspec.structs.replace(verdict, levers=[in_trainer_words(v) for v in verdict.levers])
