"""Which builds a billed Kubernetes run may use: the flux view and the operator, by digest.

A tag moves: the operator's manifest (operator.py) runs its controller as
`ghcr.io/flux-framework/flux-operator:latest`, pulled Always, and the CRD's
default view `flux-view-ubuntu:tag-noble` is rebuilt with whatever flux-core
and flux-sched are current, so two runs of one plan could time two Flux
builds and record only the tag.  kary knows no published digest of either
(none is in the operator's repository at the commit it pins), so it names none:
a billed run takes them by digest from the user, `--flux-view` (or the sweep
file's `flux_view`) and the cluster file's `kary/operator-image` annotation,
and refuses a tag with one line saying how to find the digest.

A digest pins a build, not its source.  The operator's images carry no
per-commit tag and no revision label, so a digest taken from `:latest` today
need not be a build of the commit whose manifest and CRD kary targets
(operator.OPERATOR_COMMIT): nothing in the image says which commit it is.  The
pin, and run.json's `operator_digest`, say so (`OPERATOR_SOURCE_UNKNOWN`).
"""

from __future__ import annotations

import re

from experiments.errors import UserError

__all__ = [
    "OPERATOR_PIN_KEY",
    "OPERATOR_SOURCE_UNKNOWN",
    "digest_help",
    "is_pinned",
    "require_pinned",
]

# Where a cluster file names the operator's controller image (eksctl's
# metadata.annotations; kary's GKE spec: annotations).
OPERATOR_PIN_KEY = "kary/operator-image"
# What a pinned operator digest does not say (module doc), recorded beside it.
OPERATOR_SOURCE_UNKNOWN = (
    "a digest taken from the operator's :latest; its images carry no per-commit tag or "
    "revision label, so it need not be a build of commit {commit}, whose manifest and CRD "
    "kary targets"
)
_PINNED = re.compile(r"^[^@\s]+@sha256:[0-9a-f]{64}$")


def is_pinned(ref: str | None) -> bool:
    """The reference names one build: `repo[:tag]@sha256:<64 hex>`."""
    return bool(ref) and _PINNED.match(str(ref)) is not None


def digest_help(ref: str) -> str:
    """How to find a tag's digest, as one clause."""
    return f"`crane digest {ref}` or `docker buildx imagetools inspect {ref}` prints it"


def require_pinned(ref: str, what: str, how: str) -> str:
    """`ref` when pinned by digest, else a one-line UserError: `what` it is, `how` to pin."""
    if is_pinned(ref):
        return ref
    raise UserError(
        f"{what} {ref} is not pinned by digest, so a billed run could not say which build "
        f"it ran: {how} ({digest_help(ref)})"
    )
