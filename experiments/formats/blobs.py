"""What a cell's blobs held: the kinds kary makes, and what a log from elsewhere held.

- `random`: incompressible bytes (an AES-CTR keystream from openssl, else
  /dev/urandom).  Every 1 MiB chunk `flux archive create` cuts is distinct, so a
  distribution moves the whole size through the tree: what kary measures.
- `zeros`: `head -c N /dev/zero`, as flux-distribute's image made every size
  (flux-distribute's topology/cloud-experiment/docker/Dockerfile).  The archive
  addresses its chunks by hash, so every chunk is one chunk: the content store
  holds one distinct blob, a distribution moves about 1 MiB, and each rank then
  writes N bytes to its own disk.  Such a time measures each rank's writes, not
  the network or the tree; kary makes zeros only when asked (`--blob zeros`), to
  set its numbers beside published ones.

A seed-format log names no kind.  Its only producer built zero blobs, so its
rows say `zeros` (SEED_BLOB): what a seed log can be said to be, and why.

After each archive, a kary log says how many objects rank 0's content store
gained (`store_objects_added`): the archive's new distinct chunks and its own
few objects (ARCHIVE_OWN_OBJECTS; flux-core 0.88: 19 for 16 random chunks, 4 for
16 zero chunks, 3 for a second archive of zeros whose one chunk was stored
already).  `distinct_chunks` reads the largest such gain of one blob back.
"""

from __future__ import annotations

from experiments.errors import UserError

__all__ = [
    "ARCHIVE_OWN_OBJECTS",
    "BLOB_KINDS",
    "DEDUPLICATED",
    "DEFAULT_BLOB",
    "SEED_BLOB",
    "check_blob",
    "distinct_chunks",
    "kept_blob_name",
]

BLOB_KINDS = ("random", "zeros")
DEFAULT_BLOB = "random"
SEED_BLOB = "zeros"
# Kinds whose chunks collapse to a few distinct blobs: their distribution times
# measure each rank's disk writes (see the module doc).
DEDUPLICATED = frozenset({"zeros"})
# Objects an archive adds to the content store beside its chunks (its KVS
# metadata), as measured on flux-core 0.88 with `flux module stats content-sqlite`.
ARCHIVE_OWN_OBJECTS = 3


def check_blob(kind: str) -> str:
    """The kind as given, or a one-line UserError naming the kinds there are."""
    if kind not in BLOB_KINDS:
        raise UserError(
            f"unknown --blob {kind!r}: choose random (distinct bytes: what moves through "
            "the tree) or zeros (flux-distribute's blobs: one distinct chunk)"
        )
    return kind


def kept_blob_name(kind: str, size: str | int) -> str:
    """The file, under KARY_BLOB_CACHE, a nested layout keeps a blob of `kind` and `size`
    bytes in.  The entrypoint keeps and reuses it by this name and the nested driver looks
    for it before a cell to count what the cell still has to generate: one name for both
    (both templates render it from here; `size` may be a shell word such as `$2`), else
    the driver never finds a kept blob and asks for each size twice (issue 42, item 2)."""
    return f"blob-{kind}-{size}"


def distinct_chunks(store_objects_added: int, chunks: int) -> int:
    """How many distinct chunks an archive of `chunks` chunks had, from the most objects
    rank 0's content store gained for it (its first archive in the cell): at least one
    of any blob that has a chunk, never more than it has."""
    if chunks <= 0:
        return 0
    return min(chunks, max(1, store_objects_added - ARCHIVE_OWN_OBJECTS))
