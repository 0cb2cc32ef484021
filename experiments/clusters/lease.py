"""The labels every cluster kary creates carries: who made it, when, and until when.

`managed-by=kary`, `owner=<user>`, `created=<stamp>`, `expires=<stamp>`.
Stamps are UTC, `20260627t153000z`: valid as a GKE label value (lower-case
letters, digits, `_` and `-` only) and as an AWS tag, so one format serves both.
"""

from __future__ import annotations

import getpass
import os
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from experiments.clusters import clock
from experiments.errors import UserError

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
MANAGED_BY = ("managed-by", "kary")
_STAMP = "%Y%m%dt%H%M%Sz"
_NOT_LABEL = re.compile(r"[^a-z0-9_-]+")


def format_stamp(when: datetime) -> str:
    return when.astimezone(timezone.utc).strftime(_STAMP)


def parse_stamp(text: str | None) -> datetime | None:
    """A stamp back into a UTC datetime; None when absent or not a kary stamp."""
    if not text:
        return None
    try:
        return datetime.strptime(text, _STAMP).replace(tzinfo=timezone.utc)
    except ValueError:
        return None


def current_owner() -> str:
    """Who owns what this kary creates: $KARY_OWNER, else the login name, as a label value."""
    raw = os.environ.get("KARY_OWNER") or _login()
    owner = _NOT_LABEL.sub("-", raw.lower()).strip("-_")[:63]
    if not owner:
        raise UserError("cannot tell who you are for the owner label: set KARY_OWNER")
    return owner


def _login() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return ""


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
