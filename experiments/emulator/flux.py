"""`flux` for the emulated instance: the subset of flux(1) that kary's templates call.

    flux archive create|extract|remove ...   flux exec -r IDSET [-x IDSET] CMD...
    flux overlay status                      flux module reload|stats content ...
    flux getattr NAME                        flux version
    flux module stats [--parse KEY] content  flux content dropcache|flush
    flux module stats [--parse KEY] content-sqlite (rank 0's store: object_count)
    flux ping [-r RANK] [-p PAD] [-c N] TARGET   flux python ARGS...

Messages and exit codes follow flux-core: errors go to stderr as
`flux-<cmd>: ...` with exit 1; `flux exec` prints `[ranks]: Exit N` for ranks
that failed and exits with the largest status (68 when a broker is
unreachable).  It talks to the broker named by FLUX_URI.  Standard library
only, and little of it: every rank starts one of these per step.
"""

from __future__ import annotations

import os
import sys

from experiments.emulator.burn import burn, client_cost
from experiments.emulator.client import (
    BLOB_SIZE,
    FluxError,
    broker_handle,
    option,
    parse_options,
)
from experiments.emulator.content import BACKING_MODULE
from experiments.emulator.wire import set_send_buffer

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["VERSION", "main"]

VERSION = "0.88.0-kary-emulator"  # emulates (and is calibrated to) flux-core 0.88


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
        {"-n": "name", "--name": "name", "-C": "dir", "--directory": "dir"}
        | {"--chunksize": "chunksize"},
        {"--overwrite": "overwrite", "-v": "verbose", "--verbose": "verbose", "--mmap": "mmap"},
        stop_at_operand=False,
    )
    name, directory = option(opts, "name", "main"), option(opts, "dir", os.getcwd())
    overwrite = bool(opts.get("overwrite"))
    chunksize = _size_option("chunksize", option(opts, "chunksize", str(BLOB_SIZE)))
    if not files:
        raise FluxError("no input files")
    handle = broker_handle()
    # --mmap: flux-core maps the file into rank 0's content store instead of
    # copying it; the emulator stores the same blobs either way.
    if opts.get("mmap") and _rank(handle) != 0:
        raise FluxError("--mmap only works on the rank 0 broker")
    set_send_buffer(handle.sock)
    entries = []
    stored: set[str] = set()
    for arcname, disk in _archive_files(directory, files):
        refs: list[str] = []
        with open(disk, "rb") as src:
            # chunksize 0: the whole file is one blob (flux-core's "unlimited").
            while blob := src.read(chunksize or -1):
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
    except FluxError:
        raise FluxError(f"archive.{name}: key exists") from None  # flux-core's words
    return 0


_SIZE_SUFFIX = {"": 1, "k": 1 << 10, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def _size_option(name: str, text: str) -> int:
    """flux-core's optparse size: a number with an optional k/K/M/G suffix, up to INT_MAX."""
    number, suffix = (text[:-1], text[-1]) if text[-1:] in _SIZE_SUFFIX else (text, "")
    try:
        size = float(number) * _SIZE_SUFFIX[suffix]
    except ValueError:
        size = -1.0
    if not 0 <= size <= 2**31 - 1:
        raise FluxError(f"Invalid argument for option '{name}': '{text}'")
    return int(size)


def _rank(handle: Any) -> int:
    reply, _ = handle.rpc({"op": "getattr", "name": "rank"})
    return int(reply["value"])


def archive_extract(argv: list[str]) -> int:
    opts, _ = parse_options(
        argv,
        {"-n": "name", "--name": "name", "-C": "dir", "--directory": "dir"},
        {"--overwrite": "overwrite", "--waitcreate": "wait"}
        | {"-v": "verbose", "--verbose": "verbose"},
        stop_at_operand=False,
    )
    name, directory = option(opts, "name", "main"), option(opts, "dir", os.getcwd())
    overwrite, wait = bool(opts.get("overwrite")), bool(opts.get("wait"))
    handle = broker_handle()
    client_ms = client_cost()
    try:
        reply, _ = handle.rpc({"op": "kvs.get", "key": f"archive.{name}", "wait": wait})
    except FluxError as err:
        raise FluxError(f"KVS lookup {err}") from None  # as flux-core words it
    for entry in reply["value"]["files"]:
        path = os.path.join(directory, entry["path"])
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if overwrite else os.O_EXCL)
        try:
            fd = os.open(path, flags, entry.get("mode", 0o644))
        except FileExistsError:
            # flux-core names the archive's path, as libarchive words it.
            raise FluxError(f"{entry['path']}: write: Attempt to overwrite existing file") from None
        try:
            # One blob at a time, as flux-core's extract loads them.
            for key in entry["blobrefs"]:
                _, blob = handle.rpc({"op": "load", "hash": key})
                burn(client_ms, len(blob))
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
    name, force = option(opts, "name", "main"), bool(opts.get("force"))
    try:
        broker_handle().rpc({"op": "kvs.unlink", "key": f"archive.{name}"})
    except FluxError:
        if not force:
            raise FluxError(f"archive.{name} does not exist") from None
    return 0


# ---- the rest -------------------------------------------------------------


def overlay(argv: list[str]) -> int:
    if argv[:1] != ["status"]:
        raise FluxError("only `flux overlay status` is emulated")
    reply, _ = broker_handle().rpc({"op": "overlay"})
    sys.stdout.write(reply["text"])
    return 0


def module(argv: list[str]) -> int:
    parse_key = None
    if argv[:1] == ["stats"] and len(argv) >= 3 and argv[1] in ("-p", "--parse"):
        parse_key, argv = argv[2], [argv[0], *argv[3:]]
    if argv[:2] == ["reload", BACKING_MODULE]:
        # The emulator's backing store is part of rank 0's broker: nothing to re-register.
        return 0
    if argv[:2] == ["stats", BACKING_MODULE]:
        return _print_stats(broker_handle().rpc({"op": "store-stats"})[0]["stats"], parse_key)
    if len(argv) < 2 or argv[1] != "content" or argv[0] not in ("reload", "stats", "load"):
        raise FluxError("only `flux module reload|stats [--parse KEY] content` is emulated")
    if argv[0] == "stats":
        return _print_stats(broker_handle().rpc({"op": "stats"})[0]["stats"], parse_key)
    request: dict[str, Any] = {"op": "reload"}
    for arg in argv[2:]:
        key, _, value = arg.partition("=")
        if key == "purge-target-size":
            if not value.isdigit():
                raise FluxError(f"content: invalid purge-target-size {value!r}")
            request["purge_target_size"] = int(value)
    broker_handle().rpc(request)
    return 0


def _print_stats(stats: dict[str, Any], parse_key: str | None) -> int:
    """`flux module stats [--parse KEY]`'s output: the object, or one key's value."""
    import json

    if parse_key is None:
        print(json.dumps(stats, indent=1))  # flux-core's layout
    elif parse_key in stats:
        print(stats[parse_key])
    else:
        raise FluxError(f"{parse_key}: No such file or directory")
    return 0


def content(argv: list[str]) -> int:
    if argv == ["flush"]:
        # The emulator's store writes each blob before it answers: nothing is dirty.
        return 0
    if argv != ["dropcache"]:
        raise FluxError("only `flux content dropcache` and `flux content flush` are emulated")
    broker_handle().rpc({"op": "dropcache"})
    return 0


def getattr_(argv: list[str]) -> int:
    if len(argv) != 1:
        raise FluxError("usage: flux getattr NAME")
    reply, _ = broker_handle().rpc({"op": "getattr", "name": argv[0]})
    print(reply["value"])
    return 0


def version(argv: list[str]) -> int:
    print(f"commands:    \t\t{VERSION}")
    print(f"libflux-core:\t\t{VERSION}")
    print(f"broker:  \t\t{VERSION}")
    print(f"FLUX_URI:\t\t{os.environ.get('FLUX_URI', '')}")
    print("build-options:\t\t+kary-emulator")
    return 0


def _archive(argv: list[str]) -> int:
    sub = {"create": archive_create, "extract": archive_extract, "remove": archive_remove}
    if not argv or argv[0] not in sub:
        raise FluxError("usage: flux archive create|extract|remove ...")
    return sub[argv[0]](argv[1:])


def _exec(argv: list[str]) -> int:
    from experiments.emulator.flux_exec import flux_exec

    return flux_exec(argv)


def _ping(argv: list[str]) -> int:
    from experiments.emulator.flux_ping import flux_ping

    return flux_ping(argv)


def python(argv: list[str]) -> int:
    """`flux python`: the interpreter Flux was built with; here, the emulator's own."""
    sys.stdout.flush()
    os.execv(sys.executable, [sys.executable, *argv])
    return 127  # not reached: exec replaced this process


_COMMANDS = {
    "archive": _archive,
    "exec": _exec,
    "overlay": overlay,
    "module": module,
    "content": content,
    "getattr": getattr_,
    "version": version,
    "ping": _ping,
    "python": python,
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
