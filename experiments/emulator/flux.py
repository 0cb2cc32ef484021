"""`flux` for the emulated instance: the subset of flux(1) that kary's templates call.

    flux archive create|extract|remove ...   flux exec -r IDSET [-x IDSET] CMD...
    flux overlay status                      flux module reload|stats content ...
    flux getattr NAME                        flux version

Messages and exit codes follow flux-core: errors go to stderr as
`flux-<cmd>: ...` with exit 1; `flux exec` prints `[ranks]: Exit N` for ranks
that failed and exits with the largest status (68 when a broker is
unreachable).  It talks to the broker named by FLUX_URI.  Standard library
only, and little of it: every rank starts one of these per step.
"""

from __future__ import annotations

import os
import sys

from experiments.emulator.wire import (
    WireError,
    connect,
    read_frame,
    set_send_buffer,
    socket_dir_from_uri,
    write_frame,
)

# Only what a client start needs: json, typing and friends are imported lazily or
# not at all (see wire.py), since every rank starts one of these per step.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["VERSION", "main"]

VERSION = "0.66.0-kary-emulator"
EX_NOHOST = 68
BLOB_SIZE = 1 << 20


class FluxError(Exception):
    """A failed command: printed as `flux-<cmd>: message`, exit `code`."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


class Handle:
    """A connection to one broker, for request/reply calls."""

    def __init__(self, path: str) -> None:
        try:
            self.sock = connect(path)
        except OSError as err:
            raise FluxError(f"cannot connect to broker at {path}: {err.strerror}") from None
        self.buffer = bytearray(BLOB_SIZE)

    def rpc(
        self, header: dict[str, Any], payload: bytes = b""
    ) -> tuple[dict[str, Any], bytes | memoryview]:
        """One request and its reply; a payload is valid until the next call."""
        try:
            write_frame(self.sock, header, payload)
            reply, data = read_frame(self.sock, self.buffer)
        except WireError as err:
            raise FluxError(str(err)) from None
        if not reply.get("ok"):
            raise FluxError(reply.get("error", "error"))
        return reply, data

    def close(self) -> None:
        self.sock.close()


def _uri() -> str:
    uri = os.environ.get("FLUX_URI")
    if not uri:
        raise FluxError("FLUX_URI is not set: run this under the kary emulator")
    return uri


def _socket_dir() -> str:
    try:
        return socket_dir_from_uri(_uri())
    except WireError as err:
        raise FluxError(str(err)) from None


def _handle() -> Handle:
    return Handle(_uri()[len("local://") :])


def parse_options(
    argv: list[str], with_value: dict[str, str], flags: dict[str, str], stop_at_operand: bool
) -> tuple[dict[str, str | bool], list[str]]:
    """getopt without its import cost: `-n X`, `-nX`, `--name X`, `--name=X`, `-lq`, `--`.

    `with_value` and `flags` map every spelling ("-n", "--name") to a key.
    With `stop_at_operand` the first operand ends the options (flux exec's
    COMMAND...); otherwise options and operands mix (GNU style).
    """
    opts: dict[str, str | bool] = {}
    rest: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            rest.extend(argv[i + 1 :])
            break
        if not arg.startswith("-") or arg == "-":
            if stop_at_operand:
                rest.extend(argv[i:])
                break
            rest.append(arg)
            i += 1
            continue
        if arg.startswith("--"):
            name, eq, value = arg.partition("=")
            if name in with_value:
                if not eq:
                    i += 1
                    if i >= len(argv):
                        raise FluxError(f"option {name} requires an argument")
                    value = argv[i]
                opts[with_value[name]] = value
            elif name in flags and not eq:
                opts[flags[name]] = True
            else:
                raise FluxError(f"unrecognized option {arg!r}")
        else:
            j = 1
            while j < len(arg):
                name = "-" + arg[j]
                if name in with_value:
                    value = arg[j + 1 :]
                    if not value:
                        i += 1
                        if i >= len(argv):
                            raise FluxError(f"option {name} requires an argument")
                        value = argv[i]
                    opts[with_value[name]] = value
                    break
                if name not in flags:
                    raise FluxError(f"unrecognized option {name!r}")
                opts[flags[name]] = True
                j += 1
        i += 1
    return opts, rest


def _str(opts: dict[str, str | bool], key: str, default: str) -> str:
    value = opts.get(key, default)
    return value if isinstance(value, str) else default


# ---- archive --------------------------------------------------------------


def _archive_files(directory: str, names: list[str]) -> list[tuple[str, str]]:
    """(path in the archive, path on disk) for each FILE, directories recursively."""
    out: list[tuple[str, str]] = []
    for name in names:
        full = os.path.join(directory, name)
        if os.path.isdir(full):
            for dirpath, dirnames, filenames in os.walk(full):
                dirnames.sort()
                for filename in sorted(filenames):
                    disk = os.path.join(dirpath, filename)
                    out.append((os.path.relpath(disk, directory), disk))
        elif os.path.exists(full):
            out.append((os.path.normpath(name), full))
        else:
            raise FluxError(f"{name}: No such file or directory")
    return out


def archive_create(argv: list[str]) -> int:
    import hashlib

    opts, files = parse_options(
        argv,
        {"-n": "name", "--name": "name", "-C": "dir", "--directory": "dir"},
        {"--overwrite": "overwrite", "-v": "verbose", "--verbose": "verbose", "--mmap": "mmap"},
        stop_at_operand=False,
    )
    name, directory = _str(opts, "name", "main"), _str(opts, "dir", os.getcwd())
    overwrite = bool(opts.get("overwrite"))
    if not files:
        raise FluxError("no input files")
    handle = _handle()
    set_send_buffer(handle.sock)
    entries = []
    stored: set[str] = set()
    for arcname, disk in _archive_files(directory, files):
        refs: list[str] = []
        with open(disk, "rb") as src:
            while blob := src.read(BLOB_SIZE):
                key = hashlib.sha256(blob).hexdigest()
                if key not in stored:
                    handle.rpc({"op": "store", "hash": key}, blob)
                    stored.add(key)
                refs.append(key)
        st = os.stat(disk)
        entries.append(
            {"path": arcname, "size": st.st_size, "mode": st.st_mode & 0o7777, "blobrefs": refs}
        )
    try:
        handle.rpc(
            {
                "op": "kvs.put",
                "key": f"archive.{name}",
                "value": {"files": entries},
                "excl": not overwrite,
            }
        )
    except FluxError as err:
        raise FluxError(f"{err}: use --overwrite to replace the archive") from None
    return 0


def archive_extract(argv: list[str]) -> int:
    opts, _ = parse_options(
        argv,
        {"-n": "name", "--name": "name", "-C": "dir", "--directory": "dir"},
        {"--overwrite": "overwrite", "--waitcreate": "wait"}
        | {"-v": "verbose", "--verbose": "verbose"},
        stop_at_operand=False,
    )
    name, directory = _str(opts, "name", "main"), _str(opts, "dir", os.getcwd())
    overwrite, wait = bool(opts.get("overwrite")), bool(opts.get("wait"))
    handle = _handle()
    reply, _ = handle.rpc({"op": "kvs.get", "key": f"archive.{name}", "wait": wait})
    for entry in reply["value"]["files"]:
        path = os.path.join(directory, entry["path"])
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if overwrite else os.O_EXCL)
        try:
            fd = os.open(path, flags, entry.get("mode", 0o644))
        except FileExistsError:
            raise FluxError(f"{path}: File exists (use --overwrite)") from None
        try:
            # One blob at a time, as flux-core's extract loads them.
            for key in entry["blobrefs"]:
                _, blob = handle.rpc({"op": "load", "hash": key})
                view = memoryview(blob)
                while len(view):
                    view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
    return 0


def archive_remove(argv: list[str]) -> int:
    opts, _ = parse_options(
        argv, {"-n": "name", "--name": "name"}, {"-f": "force", "--force": "force"}, False
    )
    name, force = _str(opts, "name", "main"), bool(opts.get("force"))
    try:
        _handle().rpc({"op": "kvs.unlink", "key": f"archive.{name}"})
    except FluxError:
        if not force:
            raise
    return 0


# ---- exec -----------------------------------------------------------------


def flux_exec(argv: list[str]) -> int:
    import threading

    from experiments.emulator.idset import encode_idset, parse_idset

    opts, command = parse_options(
        argv,
        {"-r": "rank", "--rank": "rank", "-x": "exclude", "--exclude": "exclude"}
        | {"-d": "dir", "--dir": "dir"},
        {"-l": "label", "--label-io": "label", "-n": "noinput", "--noinput": "noinput"}
        | {"-q": "quiet", "--quiet": "quiet", "-v": "verbose", "--verbose": "verbose"},
        stop_at_operand=True,
    )
    ranks, exclude = _str(opts, "rank", "all"), _str(opts, "exclude", "")
    cwd = _str(opts, "dir", os.getcwd())
    label, quiet = bool(opts.get("label")), bool(opts.get("quiet"))
    if not command:
        raise FluxError("COMMANDS are required")
    sock_dir = _socket_dir()
    size = int(_handle().rpc({"op": "getattr", "name": "size"})[0]["value"])
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
            print(f"flux-exec: Error: rank {rank}: {command[0]}: {failure}", file=sys.stderr)
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


# ---- the rest -------------------------------------------------------------


def overlay(argv: list[str]) -> int:
    if argv[:1] != ["status"]:
        raise FluxError("only `flux overlay status` is emulated")
    reply, _ = _handle().rpc({"op": "overlay"})
    sys.stdout.write(reply["text"])
    return 0


def module(argv: list[str]) -> int:
    if len(argv) < 2 or argv[1] != "content" or argv[0] not in ("reload", "stats", "load"):
        raise FluxError("only `flux module reload|stats content` is emulated")
    if argv[0] == "stats":
        import json

        reply, _ = _handle().rpc({"op": "stats"})
        print(json.dumps(reply["stats"]))
        return 0
    request: dict[str, Any] = {"op": "reload"}
    for arg in argv[2:]:
        key, _, value = arg.partition("=")
        if key == "purge-target-size":
            if not value.isdigit():
                raise FluxError(f"content: invalid purge-target-size {value!r}")
            request["purge_target_size"] = int(value)
    _handle().rpc(request)
    return 0


def getattr_(argv: list[str]) -> int:
    if len(argv) != 1:
        raise FluxError("usage: flux getattr NAME")
    reply, _ = _handle().rpc({"op": "getattr", "name": argv[0]})
    print(reply["value"])
    return 0


def version(argv: list[str]) -> int:
    print(f"commands:    \t\t{VERSION}")
    print(f"libflux-core:\t\t{VERSION}")
    print("build-options:\t\t+kary-emulator")
    return 0


def _archive(argv: list[str]) -> int:
    sub = {"create": archive_create, "extract": archive_extract, "remove": archive_remove}
    if not argv or argv[0] not in sub:
        raise FluxError("usage: flux archive create|extract|remove ...")
    return sub[argv[0]](argv[1:])


_COMMANDS = {
    "archive": _archive,
    "exec": flux_exec,
    "overlay": overlay,
    "module": module,
    "getattr": getattr_,
    "version": version,
}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in _COMMANDS:
        what = argv[0] if argv else ""
        print(f"flux: unknown command {what!r} (kary emulator)", file=sys.stderr)
        return 1
    try:
        return _COMMANDS[argv[0]](argv[1:])
    except FluxError as err:
        print(f"flux-{argv[0]}: {err}", file=sys.stderr)
        return err.code
    except OSError as err:
        print(f"flux-{argv[0]}: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
