"""`flux exec -r IDSET [-x IDSET] COMMAND...`: run a command as each target rank, in parallel.

Output is copied through as it comes; failures are reported like flux-core's
flux-exec: `[1-2]: Exit 3` per exit status, `flux-exec: Error: rank N: ...`
when a broker cannot run it, and the exit code is the largest status (68 when
a broker is unreachable).
"""

from __future__ import annotations

import os
import sys
import threading

from experiments.emulator.client import (
    EX_NOHOST,
    FluxError,
    broker_handle,
    option,
    parse_options,
    socket_dir,
)
from experiments.emulator.idset import encode_idset, parse_idset
from experiments.emulator.wire import WireError, connect, read_frame, write_frame

__all__ = ["flux_exec"]


def flux_exec(argv: list[str]) -> int:
    opts, command = parse_options(
        argv,
        {"-r": "rank", "--rank": "rank", "-x": "exclude", "--exclude": "exclude"}
        | {"-d": "dir", "--dir": "dir"},
        {"-l": "label", "--label-io": "label", "-n": "noinput", "--noinput": "noinput"}
        | {"-q": "quiet", "--quiet": "quiet", "-v": "verbose", "--verbose": "verbose"},
        stop_at_operand=True,
    )
    ranks, exclude = option(opts, "rank", "all"), option(opts, "exclude", "")
    cwd = option(opts, "dir", os.getcwd())
    label, quiet = bool(opts.get("label")), bool(opts.get("quiet"))
    if not command:
        raise FluxError("COMMANDS are required")
    sock_dir = socket_dir()
    size = int(broker_handle().rpc({"op": "getattr", "name": "size"})[0]["value"])
    try:
        targets = parse_idset(ranks, size) - (parse_idset(exclude, size) if exclude else set())
    except ValueError as err:
        raise FluxError(str(err)) from None
    if not targets:
        raise FluxError("No targets specified")
    outside = sorted(r for r in targets if r >= size)
    if outside:
        raise FluxError(f"rank {outside[0]} is not in this instance of size {size}", EX_NOHOST)

    lock = threading.Lock()
    results: dict[int, tuple[int, str | None]] = {}
    env = dict(os.environ)

    def out(stream: str, rank: int, data: bytes | memoryview) -> None:
        sink = sys.stderr.buffer if stream == "stderr" else sys.stdout.buffer
        with lock:
            if label:
                data = b"".join(
                    f"{rank}: ".encode() + line for line in bytes(data).splitlines(True)
                )
            sink.write(data)
            sink.flush()

    def run(rank: int) -> None:
        """One rank: returns via results[rank] = (exit code, failure text or None)."""
        try:
            sock = connect(os.path.join(sock_dir, str(rank)))
        except OSError:
            results[rank] = (EX_NOHOST, "No route to host")
            return
        try:
            write_frame(sock, {"op": "exec", "id": rank, "argv": command, "env": env, "cwd": cwd})
            while True:
                header, data = read_frame(sock)  # output chunks are small: no buffer
                event = header.get("event")
                if event == "output":
                    out(header["stream"], rank, data)
                elif event == "exit":
                    status = int(header["status"])
                    results[rank] = (128 - status if status < 0 else status, None)
                    return
                elif event == "failed":
                    code = {1: 126, 13: 126, 2: 127}.get(int(header.get("errno", 0)), 1)
                    results[rank] = (code, header.get("error", "failed"))
                    return
        except WireError:
            results[rank] = (EX_NOHOST, "lost contact with broker")
        finally:
            sock.close()

    threads = [threading.Thread(target=run, args=(r,)) for r in sorted(targets)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    exit_code = 0
    exitsets: dict[str, list[int]] = {}
    for rank in sorted(results):
        code, failure = results[rank]
        exit_code = max(exit_code, code)
        if failure is not None:
            print(
                f"flux-exec: Error: rank {rank}: {command[0]}: error launching process: {failure}",
                file=sys.stderr,
            )
        elif code > 128:
            import signal

            name = signal.strsignal(code - 128) or f"Signal {code - 128}"
            exitsets.setdefault(name, []).append(rank)
        elif code > 0:
            exitsets.setdefault(f"Exit {code}", []).append(rank)
    if not quiet:
        for key, failed in exitsets.items():
            print(f"{encode_idset(failed, brackets=True)}: {key}", file=sys.stderr)
    return exit_code
