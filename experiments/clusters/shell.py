"""Run the cloud CLIs (eksctl, gcloud, kubectl) with a timeout on every call.

Each call runs in its own process group, so a timeout or Ctrl-C stops the tool
and anything it started.  Output is redacted before it is shown or kept.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from experiments.errors import UserError
from experiments.redact import redact

__all__ = ["Command", "CommandFailed", "CommandTimedOut", "Shell"]

# Where to get each tool when it is missing.
INSTALL_HINTS = {
    "eksctl": "https://eksctl.io/installation/",
    "aws": "https://docs.aws.amazon.com/cli/latest/userguide/getting-started-install.html",
    "gcloud": "https://cloud.google.com/sdk/docs/install",
    "gke-gcloud-auth-plugin": "`gcloud components install gke-gcloud-auth-plugin`",
    "kubectl": "https://kubernetes.io/docs/tasks/tools/",
}
_TAIL_LINES = 20
_KILL_GRACE_S = 5.0


@dataclass(frozen=True)
class Command:
    """One CLI call: argv, its time limit in seconds, and what it is for."""

    argv: tuple[str, ...]
    timeout: float
    what: str

    def __str__(self) -> str:
        return shlex.join(self.argv)


class CommandFailed(Exception):
    """A command exited non-zero; `tail` holds its last lines of output (redacted)."""

    def __init__(self, command: Command, returncode: int | None, tail: str) -> None:
        self.command = command
        self.returncode = returncode
        self.tail = tail
        last = tail.strip().splitlines()[-1] if tail.strip() else "no output"
        super().__init__(f"`{command}` failed (exit {returncode}): {last}")


class CommandTimedOut(CommandFailed):
    """A command ran past its timeout and was stopped."""

    def __init__(self, command: Command, tail: str) -> None:
        super().__init__(command, None, tail)
        self.args = (f"`{command}` did not finish within {command.timeout:.0f} s and was stopped",)


class Shell:
    """Runs Commands. `echo` receives each line of a streamed command's output."""

    def __init__(self, echo: Callable[[str], None] | None = None) -> None:
        self.echo = echo or (lambda line: None)

    def require(self, program: str, why: str = "") -> str:
        """The program's path, or a UserError saying where to get it (and `why` it is needed)."""
        path = shutil.which(program)
        if path is None:
            hint = INSTALL_HINTS.get(program)
            raise UserError(
                f"{program} is not on PATH"
                + (f" ({why})" if why else "")
                + (f": install it ({hint})" if hint else "")
            )
        return path

    def run(self, command: Command, capture: bool = False) -> str:
        """Run to completion and return stdout; stream it through `echo` unless `capture`.

        Raises CommandFailed / CommandTimedOut; on KeyboardInterrupt the command
        is stopped before the interrupt goes on.
        """
        self.require(command.argv[0])
        process = subprocess.Popen(
            list(command.argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            start_new_session=True,
        )
        captured: list[str] = []
        out_tail: deque[str] = deque(maxlen=_TAIL_LINES)
        err_tail: deque[str] = deque(maxlen=_TAIL_LINES)

        def pump(stream: object, keep: bool, show: bool, tail: deque[str]) -> None:
            for raw in stream:  # type: ignore[attr-defined]
                line = redact(raw.rstrip("\n"))
                if keep:
                    captured.append(line)
                    continue
                if line.strip():
                    tail.append(line)
                    if show:
                        self.echo(line)

        # A captured command is a query: its stderr is kept for the error, not shown.
        readers = [
            threading.Thread(
                target=pump, args=(process.stdout, capture, True, out_tail), daemon=True
            ),
            threading.Thread(
                target=pump, args=(process.stderr, False, not capture, err_tail), daemon=True
            ),
        ]

        def tail() -> str:
            # stderr last: a failing tool's last stderr line is the one that says why.
            return "\n".join([*captured[-_TAIL_LINES:], *out_tail, *err_tail])

        for reader in readers:
            reader.start()
        try:
            returncode = process.wait(timeout=command.timeout)
        except subprocess.TimeoutExpired:
            _stop(process)
            _close(process, readers)
            raise CommandTimedOut(command, tail()) from None
        except BaseException:
            _stop(process)
            _close(process, readers)
            raise
        _close(process, readers)
        if returncode != 0:
            raise CommandFailed(command, returncode, tail())
        return "\n".join(captured)


def _close(process: subprocess.Popen[str], readers: list[threading.Thread]) -> None:
    for reader in readers:
        reader.join(timeout=_KILL_GRACE_S)
    for stream in (process.stdout, process.stderr):
        if stream is not None:
            stream.close()


def _stop(process: subprocess.Popen[str]) -> None:
    """SIGTERM the command's process group, then SIGKILL what is left."""
    for sig, wait in ((signal.SIGTERM, _KILL_GRACE_S), (signal.SIGKILL, _KILL_GRACE_S)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue
