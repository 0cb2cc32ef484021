"""Run independent tasks in forked worker processes (Linux), results back in order.

A forked worker starts with everything the parent has already imported and
built (matplotlib, the parsed tables), so a task is any callable: nothing is
pickled on the way out, only each task's result on the way back. The caller
checks that forking is safe (`can_fork`).
"""

from __future__ import annotations

import gc
import os
import sys
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from typing import Generic, TypeVar

__all__ = ["Forked", "can_fork", "usable_cores"]

T = TypeVar("T")


def usable_cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def can_fork() -> bool:
    """Fork only where it is safe: Linux, and no other thread that could hold a lock."""
    return sys.platform == "linux" and threading.active_count() == 1


# The tasks of the pool being started: set before the workers fork, so each
# worker finds them in its copy of this module.
_tasks: Sequence[Callable[[], object]] = ()


_collect = True


def _run(index: int) -> object:
    if not _collect:
        gc.disable()  # a worker process, and its tasks make no garbage cycles
    return _tasks[index]()


class Forked(Generic[T]):
    """Tasks running in `workers` forked processes; `results()` waits for them, in order.

    Workers take the next task as they finish one, so the first tasks start
    first. A task's exception is raised by `results()`.
    """

    def __init__(
        self, tasks: Sequence[Callable[[], T]], workers: int, collect: bool = True
    ) -> None:
        """`collect=False`: the workers run without the cyclic garbage collector, for
        tasks that make many objects and no cycles (parsing logs)."""
        global _tasks, _collect
        # Output buffered now would be written again by each worker as it exits.
        sys.stdout.flush()
        sys.stderr.flush()
        _tasks, _collect = tasks, collect
        # Everything alive now is frozen out of the garbage collector until the
        # results are back (gc.freeze's own use case): the workers' collections
        # no longer walk, and so copy, every object the parent had; and the
        # parent's skip them while it unpickles the results.
        gc.freeze()
        try:
            # With fork, every worker starts here, before the pool's own threads.
            self._pool = ProcessPoolExecutor(workers, mp_context=get_context("fork"))
            self._futures = [self._pool.submit(_run, i) for i in range(len(tasks))]
        except BaseException:
            gc.unfreeze()
            raise
        finally:
            _tasks, _collect = (), True

    def results(self) -> list[T]:
        try:
            return [future.result() for future in self._futures]  # type: ignore[misc]
        finally:
            self._pool.shutdown(cancel_futures=True)
            gc.unfreeze()
