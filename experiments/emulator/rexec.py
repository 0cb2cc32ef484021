"""A broker's remote execution service (flux-core's `rexec`): run one command as this rank.

The command's stdout and stderr go back to the caller as `output` events as
they come, then one `exit` event with the status (negative: killed by that
signal), or a single `failed` event when it could not start.  Cancelling the
task (the caller went away) kills the process.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["Reply", "exec_cwd", "exec_env", "run_command"]

Reply = Callable[[dict[str, Any], bytes], Awaitable[None]]


def exec_env(env: dict[str, str], uri: str, prefix: str) -> dict[str, str]:
    """The caller's environment, as seen on this rank: its broker and its share of the disk."""
    env = dict(env)
    env["FLUX_URI"] = uri
    env["KARY_RANK_PREFIX"] = prefix
    return env


def exec_cwd(cwd: str | None, root: str, prefix: str) -> str:
    """The caller's directory, seen from this rank: ranks/<r>/... -> ranks/<self>/..."""
    ranks = os.path.join(root, "ranks") + os.sep
    if cwd and cwd.startswith(ranks):
        rest = cwd[len(ranks) :].split(os.sep, 1)
        cwd = os.path.join(prefix, *rest[1:])
    return cwd if cwd and os.path.isdir(cwd) else prefix


async def run_command(
    reply: Reply, rid: Any, argv: list[str], env: dict[str, str], cwd: str
) -> None:
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            cwd=cwd,
        )
    except OSError as err:
        failure = {"errno": err.errno, "error": err.strerror or str(err)}
        await reply({"id": rid, "event": "failed", **failure}, b"")
        return
    try:
        assert proc.stdout is not None and proc.stderr is not None
        await asyncio.gather(
            _pump(reply, rid, "stdout", proc.stdout), _pump(reply, rid, "stderr", proc.stderr)
        )
        status = await proc.wait()
    except asyncio.CancelledError:
        if proc.returncode is None:
            proc.kill()
        raise
    await reply({"id": rid, "event": "exit", "status": status}, b"")


async def _pump(reply: Reply, rid: Any, stream: str, reader: asyncio.StreamReader) -> None:
    while True:
        data = await reader.read(65536)
        if not data:
            return
        await reply({"id": rid, "event": "output", "stream": stream}, data)
