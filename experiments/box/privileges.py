"""Can this machine build a box?  Asked once, before any cell starts.

A box needs new PID, mount and network namespaces, veth pairs, a bridge and
the qdiscs its links ask for.  As root that is `unshare` itself; otherwise an
unprivileged user namespace (`unshare --user --map-root-user`) makes the same
possible without root where the kernel allows it.  The probe builds a
throwaway namespace with one veth pair and the qdiscs a cell needs, so a
kernel without tbf or netem is found here, not mid-sweep; nothing it makes
outlives it.  Whatever is missing is one UserError line that says what.
"""

from __future__ import annotations

import os
import shutil
import subprocess

from experiments.box.shaping import qdisc_commands
from experiments.errors import UserError
from experiments.model.links import LinkSettings

__all__ = ["box_command_prefix", "box_prefix_for"]

_PROBE_TIMEOUT_S = 20.0
_NEEDED_TOOLS = ("unshare", "ip", "tc")
_FIFO_INSTEAD = " (--link-queue fifo shapes with tbf alone)"


def box_prefix_for(links: LinkSettings) -> list[str]:
    """`box_command_prefix` for a box whose links are `links`: the link queue's qdiscs
    where a rate is shaped (a node's, rank 0's or a group's uplink), netem where latency is."""
    return box_command_prefix(
        bandwidth=links.rate_shaped, latency=bool(links.latency), queue=links.queue
    )


def box_command_prefix(*, bandwidth: bool, latency: bool, queue: str = "fair") -> list[str]:
    """`unshare ...` that starts a box's init here; UserError saying what is missing."""
    missing = [tool for tool in _NEEDED_TOOLS if shutil.which(tool) is None]
    if missing:
        raise UserError(
            f"the box needs {', '.join(missing)} on PATH (util-linux's unshare, iproute2's ip "
            "and tc): install them, or run without --place box"
        )
    prefix = ["unshare", "--pid", "--fork", "--kill-child", "--mount-proc", "--net"]
    rootless = os.geteuid() != 0
    if rootless:
        prefix += ["--user", "--map-root-user"]
    probe = [
        "ip link add kary-probe0 type veth peer name kary-probe1",
        "ip link add kary-probe-br type bridge",
    ]
    # What box/shaping.py builds on a link, one peer's worth: a switch port's tbf (every
    # shaped rate has one), then the node's side in the cell's queue.
    rate = 125e3 if bandwidth else None
    delay = 1e-3 if latency else None
    probe += [
        f"tc {line}"
        for line in (
            *qdisc_commands("kary-probe1", rate, delay, "fifo"),
            *(qdisc_commands("kary-probe0", rate, None, queue, ("198.18.0.2",)) if rate else ()),
        )
    ]
    # Each step names itself when it fails (exit 3), so the message can say which.
    script = "; ".join(f"{step} || {{ echo 'FAILED: {step}' >&2; exit 3; }}" for step in probe)
    try:
        done = subprocess.run(
            [*prefix, "sh", "-c", script],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=_PROBE_TIMEOUT_S,
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        raise UserError(f"cannot build a box here: `unshare` failed: {err}") from None
    lines = [line.strip() for line in done.stderr.splitlines() if line.strip()]
    failed = [line.removeprefix("FAILED: ") for line in lines if line.startswith("FAILED: ")]
    if done.returncode == 3 and failed:
        what = failed[-1]
        kind = "veth pairs and bridges"
        if " netem " in what:
            kind = "netem, which --link-latency needs (CONFIG_NET_SCH_NETEM)"
        elif " tbf " in what:
            kind = "tbf, which --link-bandwidth needs (CONFIG_NET_SCH_TBF)"
        elif " bfifo " in what:
            kind = "bfifo, which --link-queue fair needs (CONFIG_NET_SCH_FIFO)"
        elif " u32 " in what:
            kind = f"u32, which --link-queue fair needs (CONFIG_NET_CLS_U32){_FIFO_INSTEAD}"
        elif " htb " in what:
            kind = f"htb, which --link-queue fair needs (CONFIG_NET_SCH_HTB){_FIFO_INSTEAD}"
        raise UserError(
            f"cannot build a box here: this kernel has no {kind}: `{what}` failed in a probe "
            "namespace"
        )
    if done.returncode != 0:
        why = lines[-1] if lines else f"exit status {done.returncode}"
        if rootless:
            raise UserError(
                "the box needs root or unprivileged user namespaces, and this machine allows "
                f"neither to uid {os.geteuid()} (`unshare --user --map-root-user --net`: {why})"
            )
        raise UserError(f"cannot build a box here: `unshare --pid --mount --net` failed: {why}")
    return prefix
