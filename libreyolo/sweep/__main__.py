"""`python -m libreyolo.sweep`: the same entry as the `libreyolo-sweep` console script.

Must not: parse arguments itself (Hydra owns `sys.argv`, hydra-notes §4.4).
"""

from __future__ import annotations

from libreyolo.sweep.app import main

if __name__ == "__main__":
    main()
