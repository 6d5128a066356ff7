"""A fake libreyolo 1.x (see ../README.md); its version comes from FAKE_LIBREYOLO_VERSION."""

import os

__version__ = os.environ.get("FAKE_LIBREYOLO_VERSION", "1.6.0")
