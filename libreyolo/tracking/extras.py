"""The optional extras the sinks need, imported only when a sink runs.

Must not: import MLflow or TensorBoard at module level (a reader imports this).
"""

from __future__ import annotations

import importlib
from types import ModuleType

from libreyolo.errors import MissingExtraError


def require(module: str, extra: str, what: str) -> ModuleType:
    """`module`, imported; MissingExtraError (exit 3, one line) when the extra is absent."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingExtraError(
            f"{what} needs the {extra} extra: pip install 'libreyolo[{extra}]'"
        ) from None
