"""What a table's zero blobs mean, in the words the report and the plots say beside them.

A zero blob is one distinct 1 MiB chunk however large (experiments.formats.blobs):
an archive of it moves about one chunk through the tree, and each rank then
writes the whole size to its own disk, so an archive distribution's time
measures those writes, not the network or the tree.  Wherever such times are
shown, the report says so, with what the log tells of the archive (its chunks
and how many objects rank 0's content store gained: `archive_chunks`,
`store_objects_added` in the events table), or where it tells nothing, why the
blobs were zeros all the same (flux-distribute's image made them).

`direct` is no archive: its HTTP download moves every byte of a zero blob too,
so none of this is said of it.
"""

from __future__ import annotations

import pandas as pd

from experiments.formats.blobs import DEDUPLICATED, distinct_chunks
from experiments.formats.cell_layout import size_text
from experiments.formats.events import STRATEGY_EVENTS

__all__ = [
    "WRITES",
    "archive_facts",
    "deduplicated_rows",
    "distributes_archive",
    "writes_warning",
]

WRITES = "these times measure each rank's disk writes"
# The strategies whose distribution extracts an archive (every one but `direct`).
_ARCHIVE_STRATEGIES = frozenset(s.strategy for s in STRATEGY_EVENTS if s.strategy != "direct")
_SEED_REASON = (
    "flux-distribute's image made every size with head -c N /dev/zero, so each archive held "
    "one distinct 1 MiB chunk (its logs do not count them)"
)
_KARY_REASON = (
    "kary made them with head -c N /dev/zero (--blob zeros), so each archive held one "
    "distinct chunk (the log does not count them)"
)


def distributes_archive(event: str) -> bool:
    """The event extracts an archive on the ranks (a distribution of a tree strategy)."""
    return any(
        s.strategy in _ARCHIVE_STRATEGIES and s.distribute_wave(event) is not None
        for s in STRATEGY_EVENTS
    )


def deduplicated_rows(frame: pd.DataFrame) -> pd.Series:
    """Per row, whether its blob kind is deduplicated (zeros); False without a `blob` column."""
    if "blob" not in frame.columns:
        return pd.Series(False, index=frame.index)
    return frame["blob"].astype(str).isin(DEDUPLICATED)


def archive_facts(events: pd.DataFrame) -> str:
    """What the logs tell of these rows' archives, by size: `the archive had 1 distinct
    chunk of 16 at 16M, of 64 at 64M`; where they tell nothing, why each archive held one
    distinct chunk all the same (flux-distribute's image, or --blob zeros)."""
    counted = events
    for column in ("archive_chunks", "store_objects_added"):
        if column not in counted.columns:
            counted = counted.iloc[0:0]
            break
        counted = counted[counted[column].notna()]
    if counted.empty:
        seed = "backend" not in events.columns or (events["backend"].astype(str) == "").all()
        return _SEED_REASON if seed else _KARY_REASON
    parts = []
    last = None
    by_size = counted.groupby("size_bytes", sort=True)
    for _, rows in by_size:
        chunks = int(rows["archive_chunks"].max())
        # The most a cell's store gained for this blob: its first archive of it (a later
        # strategy's archive finds the chunks stored already).
        distinct = distinct_chunks(int(rows["store_objects_added"].max()), chunks)
        size = size_text(str(rows["size_label"].iloc[0]))
        if distinct == last:
            parts.append(f"of {chunks:,} at {size}")
        else:
            noun = "distinct chunk" if distinct == 1 else "distinct chunks"
            parts.append(f"{distinct:,} {noun} of {chunks:,} at {size}")
        last = distinct
    return "the archive had " + ", ".join(parts)


def writes_warning(events: pd.DataFrame) -> str:
    """`these times measure each rank's disk writes: the archive had 1 distinct chunk of 16
    at 16M`, for the zero-blob rows of an archive strategy."""
    return f"{WRITES}: {archive_facts(events)}"
