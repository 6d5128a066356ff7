"""`python -m libreyolo.sweep`: the same entry as the `libreyolo-sweep` console script.

Must not: parse arguments itself (`@hydra.main` parses `sys.argv`: a
`parse_args` that ran first, even at import, would consume or reject Hydra's arguments).
"""

from __future__ import annotations

from libreyolo.sweep.app import main

if __name__ == "__main__":
    main()
