"""Planted CPU contention: busy child processes beside a measurement, bounded and always killed.

Each hog is a Python process that spins until its own deadline (so a test killed with -9 leaves
nothing behind for longer than `MAX_SECONDS`) and is killed when the block ends. One hog per
usable CPU keeps every CPU's run queue non-empty, so the measured threads wait for a CPU about
half the time they are runnable (a third where one thread runs alone), well past the 20 % that
makes a window `contended`: the answer is known before anything is measured. A second hog per
CPU would only slow the measurement threefold instead of twofold.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

from libreyolo.measure.host import usable_cpus

MAX_SECONDS = 300  # a hog's own deadline, past any test that uses it
HOGS_PER_CPU = 1
SPIN = (
    "import sys, time\n"
    "end = time.monotonic() + float(sys.argv[1])\n"
    "while time.monotonic() < end: pass\n"
)


@contextmanager
def busy_host(num_hogs: int | None = None, seconds: float = MAX_SECONDS) -> Iterator[list[int]]:
    """`num_hogs` spinning processes (default: one per usable CPU) for the block; their pids."""
    count = num_hogs if num_hogs is not None else HOGS_PER_CPU * usable_cpus()
    hogs = [
        subprocess.Popen([sys.executable, "-c", SPIN, str(seconds)], stdin=subprocess.DEVNULL)
        for _ in range(count)
    ]
    try:
        time.sleep(0.5)  # every hog is past its interpreter start and spinning
        yield [hog.pid for hog in hogs]
    finally:
        for hog in hogs:
            hog.kill()
        for hog in hogs:
            hog.wait()
