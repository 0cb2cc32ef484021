"""A cluster's lease: who made it, when, and until when, kept in its labels or tags.

The label format (names, stamps, owner) is experiments/formats/labels.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from experiments.clusters import clock
from experiments.errors import UserError
from experiments.formats.labels import MANAGED_BY, current_owner, format_stamp, parse_stamp

__all__ = [
    "DEFAULT_MAX_HOURS",
    "MANAGED_BY",
    "Lease",
    "current_owner",
    "format_stamp",
    "parse_stamp",
]

DEFAULT_MAX_HOURS = 4.0
# A week: past that a lease is not a guard any more.
_MAX_HOURS_LIMIT = 168.0


@dataclass(frozen=True)
class Lease:
    """A cluster's owner and lifetime, as written into its tags or labels."""

    owner: str
    created: datetime
    expires: datetime

    @classmethod
    def new(cls, max_hours: float, now: datetime | None = None, owner: str | None = None) -> Lease:
        if not 0 < max_hours <= _MAX_HOURS_LIMIT:
            raise UserError(
                f"invalid --max-hours {max_hours:g}: must be above 0 and at most "
                f"{_MAX_HOURS_LIMIT:g}"
            )
        created = (now or clock.utc_now()).replace(microsecond=0)
        return cls(owner or current_owner(), created, created + timedelta(hours=max_hours))

    def labels(self) -> dict[str, str]:
        return {
            MANAGED_BY[0]: MANAGED_BY[1],
            "owner": self.owner,
            "created": format_stamp(self.created),
            "expires": format_stamp(self.expires),
        }

    @classmethod
    def from_labels(cls, labels: dict[str, str] | None) -> Lease | None:
        """The lease kary wrote, or None for a cluster kary did not create."""
        labels = labels or {}
        if labels.get(MANAGED_BY[0]) != MANAGED_BY[1] or not labels.get("owner"):
            return None
        created = parse_stamp(labels.get("created"))
        expires = parse_stamp(labels.get("expires"))
        if created is None or expires is None:
            return None
        return cls(labels["owner"], created, expires)

    def expired(self, now: datetime | None = None) -> bool:
        return (now or clock.utc_now()) >= self.expires
