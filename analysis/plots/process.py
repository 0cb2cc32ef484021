"""Draw a parse's plots from a process forked when the parse starts.

Importing pandas and matplotlib took about 0.7 s, one core's work while the
other waited. The plot process does it while this one reads the tree; it then
gets the tables and draws them with its own forked workers
(analysis.plots.figures.start_plots) while this process writes the tables and prepares
the report.

The tables go through a temporary pickle file, and only its name through the
pipe: a pipe would hold this process until the other had finished importing.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import tempfile
from multiprocessing import get_context
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from analysis.tables.parsed_dir import Parsed

__all__ = ["PlotProcess"]


class PlotProcess:
    """A forked process that imports the plotting code now and draws on `draw(parsed)`.

    `wait()` returns the PNGs written (a plot's error is raised here); `stop()`
    ends the process whatever state it is in.  Use only where forking is safe
    (analysis.read.workers.can_fork).
    """

    def __init__(self, plot_dir: Path, jobs: int | None = None) -> None:
        context = get_context("fork")
        requests_in, self._requests = context.Pipe(duplex=False)  # (read end, write end)
        self._replies, replies_out = context.Pipe(duplex=False)
        self._process = context.Process(
            target=_serve, args=(requests_in, replies_out, Path(plot_dir), jobs)
        )
        self._process.start()
        assert self._process.pid is not None
        self._pid = self._process.pid
        # Its own process group, so that stop() ends it and its workers together
        # (set here too, as the child may not have run yet).
        with contextlib.suppress(OSError):
            os.setpgid(self._pid, self._pid)
        # The child's ends: closed here, so a child that dies is an EOF, not a hang.
        requests_in.close()
        replies_out.close()
        self._input: str | None = None
        self._answer: tuple[str, object] | None = None
        self._plot_dir = Path(plot_dir)

    def draw(self, parsed: Parsed) -> None:
        """Hand the tables over; drawing starts as soon as the process has its imports."""
        fd, self._input = tempfile.mkstemp(prefix="kary-plots-", suffix=".pickle")
        with os.fdopen(fd, "wb") as handle:
            pickle.dump(parsed, handle, protocol=pickle.HIGHEST_PROTOCOL)
        self._requests.send(self._input)

    def wait(self) -> list[Path]:
        """The PNGs written, in plan order, once all are drawn (a plot's error is raised,
        on every call)."""
        if self._answer is None:
            try:
                self._answer = self._replies.recv()
            except EOFError:
                self._answer = ("error", RuntimeError("the plot process ended without an answer"))
        kind, value = self._answer
        if kind == "error":
            raise value  # type: ignore[misc]
        return [Path(p) for p in value]  # type: ignore[union-attr]

    def stop(self) -> None:
        """End the process and its workers (it has finished, or its work is no longer
        wanted: an error or Ctrl-C in the parse)."""
        if self._process.is_alive() and self._answer is None:
            with contextlib.suppress(OSError):
                os.killpg(self._pid, signal.SIGTERM)
        self._process.join()
        self._requests.close()
        self._replies.close()
        if self._input is not None:
            Path(self._input).unlink(missing_ok=True)
        # A worker ended mid-write leaves its hidden temporary file behind.
        for partial in self._plot_dir.glob(".*.tmp"):
            partial.unlink(missing_ok=True)


def _serve(requests: Connection, replies: Connection, plot_dir: Path, jobs: int | None) -> None:
    os.setpgid(0, 0)  # see PlotProcess.__init__
    try:
        from analysis.plots.figures import start_plots  # the slow import, while the parse runs

        path = Path(requests.recv())
        parsed = pickle.loads(path.read_bytes())
        path.unlink()  # read: not left behind even if the parse is killed
        reply: tuple[str, object] = (
            "ok",
            [str(p) for p in start_plots(parsed, plot_dir, jobs).wait()],
        )
    except (EOFError, KeyboardInterrupt):
        return  # the parse gave up (an error, Ctrl-C): nothing to draw
    except BaseException as err:  # a bug in a plot: raised again in the parse
        reply = ("error", err)
    try:
        replies.send(reply)
    except OSError:
        return  # the parse is gone (killed): nobody to answer
    except Exception:  # an error that does not pickle: its text then
        with contextlib.suppress(OSError):
            replies.send(("error", RuntimeError(f"plotting failed: {reply[1]!r}")))
