"""`libreyolo-sweep`: a Hydra multirun over the packaged `profile` config (its own console
script running `@hydra.main`, so it gets launchers, callbacks and `.hydra/` records).

Role: the package of the sweep entry point. `app` holds the thin `@hydra.main` task, `point`
measures one grid point (in a fresh child process by default) and records its status, `report`
collects the point folders into `sweep.json` and a table.

Must not: be imported by the single-run CLI (`libreyolo profile ...`), which stays Hydra-free
at parse time.
"""

from __future__ import annotations
