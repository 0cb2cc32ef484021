"""The race's one backend, held across its blocks (run.py).

Each block is a `run_plan` of its own, which brings its backend up and down;
a race's blocks should share one allocation instead (on Kubernetes the nested
layout's one MiniCluster, fed each next block; here the nested layout's outer
instance), so the race hands every block this wrapper: up() reaches the backend
(made, and told to `stay_up`, at the first block), down() is put off, and
`release()` at the race's end brings the backend down.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from experiments.backends.base import Backend, QueuedCell, RunResult
from experiments.model.plan import Cell
from experiments.model.render import Rendered

__all__ = ["HeldBackend"]


class HeldBackend(Backend):
    """The race's one backend, made at its first block: each block's run_plan calls its
    up() (the kubernetes backend's returns at once once connected; the flux backend's
    checks its flux and place again, cheaply) and its down() is put off to `release()`,
    at the race's end, so what serves a block stays up for the next (Backend.stay_up)."""

    def __init__(
        self, backend: str, settings: Any, make_backend: Callable[[str, Any], Any] | None
    ) -> None:
        from experiments.backends import make_backend as backend_named

        # The factory as given (None: the named backend's own), for the smoke cell too.
        self.make_backend = make_backend
        self._make = lambda: (make_backend or backend_named)(backend, settings)
        self._inner: Backend | None = None
        self.name = backend

    @property
    def inner(self) -> Backend:
        if self._inner is None:
            self._inner = self._make()
            self._inner.stay_up()
            self.name, self.uses_image = self._inner.name, self._inner.uses_image
        return self._inner

    def up(self) -> None:
        self.inner.up()

    def check_cells(self, cells: Sequence[Cell]) -> None:
        self.inner.check_cells(cells)

    def run_order(self, cells: Sequence[Cell]) -> list[Cell]:
        return self.inner.run_order(cells)

    def queue(self, cells: Sequence[QueuedCell]) -> None:
        self.inner.queue(cells)

    def run(self, cell: Cell, rendered: Rendered, timeout: float | None) -> RunResult:
        return self.inner.run(cell, rendered, timeout)

    def await_replacements(self, limit_s: float) -> str | None:
        return self.inner.await_replacements(limit_s)

    def down(self) -> None:
        """A block ended: the backend stays up for the next (release() brings it down)."""

    def release(self) -> None:
        """The race ended (or stopped): bring the backend down, if one was made."""
        inner, self._inner = self._inner, None
        if inner is not None:
            inner.down()
