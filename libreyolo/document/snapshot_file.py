"""A CUDA memory snapshot file (`torch.cuda.memory._snapshot()` pickled, as a CUDA run that
ran out of memory leaves it and https://pytorch.org/memory_viz opens it), read as data.

Role: `is_snapshot` tells one from a profile by its first bytes (pickle's PROTO opcode);
`load_snapshot` unpickles it with an unpickler that refuses every global and persistent id, so
a file can build only dicts, lists, numbers and text: a pickle that names a callable (what
makes unpickling an untrusted file run code) is refused, never run. The read is bounded by the
input limit like every reader's.

Must not: import torch, or unpickle with the standard `pickle.load`.
"""

from __future__ import annotations

import io
import pickle

from libreyolo.document.limits import MAX_INPUT_BYTES, open_regular
from libreyolo.errors import AnalysisError

PROTO = 0x80  # pickle's first opcode from protocol 2 on; torch writes protocol 2 and later


class _DataOnly(pickle.Unpickler):
    """Builds plain data; a global or a persistent id ends the load."""

    def find_class(self, module: str, name: str) -> object:
        raise pickle.UnpicklingError(f"it names {module}.{name}, and only plain data is read")

    def persistent_load(self, pid: object) -> object:
        raise pickle.UnpicklingError("it refers to outside objects, and only plain data is read")


def is_snapshot(path: str, *, max_input_bytes: int = MAX_INPUT_BYTES) -> bool:
    """Whether `path` starts as a pickle of protocol 2 to 5 does (a profile starts with `{`)."""
    if path == "-":
        return False
    with open_regular(path, max_input_bytes) as stream:
        head = stream.read(2)
    return len(head) == 2 and head[0] == PROTO and 2 <= head[1] <= 5


def load_snapshot(path: str, *, max_input_bytes: int = MAX_INPUT_BYTES) -> object:
    """The snapshot's data; AnalysisError (exit 1) for a file that is not plain pickled data."""
    with open_regular(path, max_input_bytes) as stream:
        data = stream.read(max_input_bytes)
    try:
        return _DataOnly(io.BytesIO(data)).load()
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, IndexError) as err:
        raise AnalysisError(
            f"failed to analyse {path}: not a readable memory snapshot ({err})",
            hint="pass the oom_snapshot.pickle a CUDA run left, or a training profile.json",
        ) from None
