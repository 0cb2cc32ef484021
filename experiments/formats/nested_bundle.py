"""Files packed for the nested driver: the bundle, and the feed of later cells.

**The bundle** is files as a tar.gz in base64, 76 characters a line, the same
bytes for the same files.  The nested MiniCluster's `commands.pre` unpacks one
(the driver and every cell's entrypoint: near-identical scripts pack about 45
to 1), and so does the driver for each batch of the feed.

**The feed** is how kary hands a running driver more cells (a race's next
block) without exec: the text of one ConfigMap key, which the kubelet projects
into rank 0's pod as a file and replaces whole when kary updates it:

    kary-feed 3
    H4sIAAAAAAAC/+2YW2/aMBSAn/...   (the bundle: cells.sh and each cell's script)

The number counts batches from 1 over the group's life (0: nothing yet); the
driver runs a batch once, when its number is above the last it ran, by sourcing
`cells.sh` (a `kary_nested_cell` line per cell, as in the driver itself).  Each
update replaces the last: the driver has run every earlier batch by then,
because kary feeds the next only once it has read the last cell's end frame.
"""

from __future__ import annotations

import base64
import gzip
import io
import tarfile
import textwrap
from collections.abc import Mapping

__all__ = ["FEED_CELLS", "FEED_KEY", "bundle", "feed_text", "read_feed", "unbundle"]

# The ConfigMap key the feed is in (and so the file's name in the pod).
FEED_KEY = "cells"
# The script in a batch's bundle that runs its cells.
FEED_CELLS = "cells.sh"
_HEAD = "kary-feed"


def bundle(files: Mapping[str, str]) -> str:
    """The files as a tar.gz in base64, 76 characters a line; the same bytes every time."""
    raw = io.BytesIO()
    with (
        gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as zipped,
        tarfile.open(fileobj=zipped, mode="w", format=tarfile.PAX_FORMAT) as tar,
    ):
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o755, 0
            tar.addfile(info, io.BytesIO(data))
    return "\n".join(textwrap.wrap(base64.b64encode(raw.getvalue()).decode(), 76))


def unbundle(text: str) -> dict[str, str]:
    """The files of a bundle (as `bundle` wrote it), by name."""
    packed = base64.b64decode("".join(line.strip() for line in text.splitlines()))
    files = {}
    with tarfile.open(fileobj=io.BytesIO(packed), mode="r:gz") as tar:
        for member in tar.getmembers():
            read = tar.extractfile(member)
            if read is not None:
                files[member.name] = read.read().decode()
    return files


def feed_text(number: int, files: Mapping[str, str] | None = None) -> str:
    """The feed's text for batch `number` of `files` (none: an empty feed, batch 0)."""
    head = f"{_HEAD} {int(number)}\n"
    return head + (bundle(files) + "\n" if files else "")


def read_feed(text: str) -> tuple[int, dict[str, str]]:
    """A feed's batch number and files; ValueError for text that is not a feed."""
    head, _, rest = text.partition("\n")
    words = head.split()
    if len(words) != 2 or words[0] != _HEAD or not words[1].isdigit():
        raise ValueError(f"not a kary feed: {head[:60]!r}")
    return int(words[1]), unbundle(rest) if rest.strip() else {}
