"""Hydra plug-ins that cannot work with this Python: refused with the reason before Hydra starts.

Role: `check_plugins(argv)` raises a one-line `UsageError` (exit 2) when the sweep's command line
chooses a plug-in listed in `UNUSABLE`, or when such a plug-in is installed at all: Hydra
imports every installed plug-in when it starts, and one that raises anything but ImportError
there stops every Hydra app with a traceback. hydra-nevergrad-sweeper 1.2.0, the only release,
is one: its `NevergradSweeperConf` has a dataclass instance as a field default, which Python
3.11's dataclasses refuse (`ValueError: mutable default ... for field optim`); it also pins
numpy<1.20, which does not build on 3.11. The fix is on Hydra's main branch, unreleased.

`check_direction` refuses a sweeper told to minimise: every job returns its img/s, so Optuna's
own default (`minimize`) would search for the slowest settings.

Must not: import Hydra or a plug-in (it runs before them), or read anything but package metadata.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Sequence
from dataclasses import dataclass

from libreyolo.errors import UsageError


@dataclass(frozen=True)
class Unusable:
    """A plug-in option that cannot work: its distribution, its releases (all broken), why,
    and what to use instead."""

    distribution: str
    releases: frozenset[str]
    why: str
    instead: str


UNUSABLE = {
    "hydra/sweeper=nevergrad": Unusable(
        distribution="hydra-nevergrad-sweeper",
        releases=frozenset({"1.2.0"}),
        why="does not import on Python 3.11+ and pins numpy<1.20",
        instead="use hydra/sweeper=optuna_max or hydra/sweeper=tune",
    )
}


def _installed(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def check_plugins(argv: Sequence[str]) -> None:
    """UsageError when a broken release of an `UNUSABLE` plug-in is installed (Hydra would stop
    with its traceback), or when `argv` chooses one that is not installed."""
    for option, plugin in UNUSABLE.items():
        version = _installed(plugin.distribution)
        if version in plugin.releases:
            raise UsageError(
                f"{plugin.distribution} {version} is installed and {plugin.why}: "
                "every sweep stops when Hydra imports it",
                hint=f"pip uninstall {plugin.distribution}; {plugin.instead}",
            )
        if option in argv and version is None:
            releases = ", ".join(sorted(plugin.releases))
            raise UsageError(
                f"{option}: every {plugin.distribution} release ({releases}) {plugin.why}",
                hint=plugin.instead,
            )


def check_direction(direction: object) -> None:
    """UsageError when the sweeper's `hydra.sweeper.direction` is anything but one `maximize`:
    the value each job returns is its img/s, higher is better, and there is one of it."""
    if direction is None:
        return
    names = direction if isinstance(direction, list | tuple) else [direction]
    spelled = [str(getattr(d, "name", d)).lower() for d in names]
    if spelled == ["maximize"]:
        return
    raise UsageError(
        f"hydra.sweeper.direction={','.join(spelled)}: each point returns one value, its img/s, "
        "and higher is better",
        hint="use hydra/sweeper=optuna_max, or hydra.sweeper.direction=maximize",
    )
