"""Forked workers: the parent's objects are frozen out of the collector only while they run,
and workers told not to collect do not."""

from __future__ import annotations

import json
import subprocess
import sys

# A fresh interpreter has one thread, so it may fork (pytest's may not).
_CHECK = """
import gc, json
from analysis.read.workers import Forked, can_fork

def state():
    return (gc.isenabled(), gc.get_freeze_count() > 0)

assert can_fork()
collecting = Forked([state, state], 2).results()
quiet = Forked([state, state], 2, collect=False).results()
print(json.dumps({"collecting": collecting, "quiet": quiet,
                  "parent": [gc.isenabled(), gc.get_freeze_count()]}))
"""


def test_workers_see_the_parent_frozen_and_the_parent_is_thawed_after() -> None:
    out = subprocess.run(
        [sys.executable, "-c", _CHECK], capture_output=True, text=True, check=True
    ).stdout
    seen = json.loads(out.strip().splitlines()[-1])
    # In each worker the parent's objects are frozen; parse workers do not collect.
    assert seen["collecting"] == [[True, True], [True, True]]
    assert seen["quiet"] == [[False, True], [False, True]]
    # Back in the parent: collecting, nothing frozen any more.
    assert seen["parent"] == [True, 0]
