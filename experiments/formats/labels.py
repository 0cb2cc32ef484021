"""The labels kary puts on what it creates (clusters, MiniClusters): who and when.

`managed-by=kary`, `owner=<user>`, and for clusters `created=<stamp>`,
`expires=<stamp>`; what one `kary run` creates also carries its sweep id
(`new_sweep_id`: the start stamp and 4 random hex digits).  Stamps are UTC,
`20260627t153000z`: valid as a GKE label value (lower-case letters, digits,
`_` and `-` only) and as an AWS tag, so one format serves both.  Cluster
leases (clusters/lease.py) and the Kubernetes backend's MiniCluster labels
both use it.
"""

from __future__ import annotations

import getpass
import os
import re
import secrets
from datetime import datetime, timezone

from experiments.errors import UserError

__all__ = ["MANAGED_BY", "current_owner", "format_stamp", "new_sweep_id", "parse_stamp"]

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


def new_sweep_id(now: datetime | None = None) -> str:
    """One `kary run`'s id, `20260627t153000z-3f9a`: a label value; two runs in a second differ."""
    return f"{format_stamp(now or datetime.now(timezone.utc))}-{secrets.token_hex(2)}"


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
