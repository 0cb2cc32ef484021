"""The one place the cluster code reads the wall clock.

Leases, `status` and `reap` all ask `utc_now()` through this module (never
`datetime.now` directly), so a test can replace it and assert exact times
however slow the machine is.
"""

from __future__ import annotations

from datetime import datetime, timezone

__all__ = ["utc_now"]


def utc_now() -> datetime:
    return datetime.now(timezone.utc)
