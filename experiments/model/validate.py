"""Names, images, paths and node counts, checked before anything reaches a template, a
shell or a cluster (sizes and the other units: units.py).

Each returns the clean value or raises UserError with one line saying what was
wrong and what would be right.
"""

from __future__ import annotations

import re
from pathlib import Path

from experiments.errors import UserError

__all__ = [
    "MAX_NODES",
    "dns1123_name",
    "image_ref",
    "label_value",
    "node_count",
    "pinned_digest",
    "safe_path",
]

# Flux itself scales further, but a node count beyond this is a typo, not a plan.
MAX_NODES = 100_000

_IMAGE = re.compile(
    r"^[a-z0-9][a-z0-9._/-]*(:[A-Za-z0-9_][A-Za-z0-9._-]{0,127})?(@sha256:[a-f0-9]{64})?$"
)
_LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")
_DNS1123 = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
# Characters a shell or YAML would read as syntax; never allowed in a path we render.
_UNSAFE_PATH = re.compile(r"[\x00-\x1f\x7f;&|`$<>\"'\\*?!{}()\[\]#~\s]")


def node_count(value: int, flag: str = "--nodes") -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_NODES:
        raise UserError(f"invalid {flag} {value!r}: must be a whole number from 1 to {MAX_NODES}")
    return value


def dns1123_name(text: str, what: str = "--name") -> str:
    """A Kubernetes object name: lower-case letters, digits and '-', at most 63 characters."""
    if not isinstance(text, str) or len(text) > 63 or not _DNS1123.match(text):
        raise UserError(
            f"invalid {what} {text!r}: use lower-case letters, digits and '-', "
            "start and end with a letter or digit, at most 63 characters"
        )
    return text


def safe_path(text: str, what: str = "path") -> Path:
    """A path that can be rendered into a shell script or YAML without quoting tricks."""
    if not isinstance(text, str) or not text or _UNSAFE_PATH.search(text):
        raise UserError(f"invalid {what} {text!r}: use letters, digits and . _ - / only, no spaces")
    return Path(text)


def image_ref(text: str, what: str = "--image") -> str:
    """A container image reference such as `ghcr.io/org/image:tag`, maybe `@sha256:` pinned."""
    if not isinstance(text, str) or len(text) > 255 or not _IMAGE.match(text):
        raise UserError(f"invalid {what} {text!r}: expected e.g. ghcr.io/org/image:tag")
    return text


def pinned_digest(image: str) -> str | None:
    """`sha256:...` when the reference pins a digest (`name[:tag]@sha256:...`), else None."""
    _, at, digest = image.partition("@")
    return digest if at and digest.startswith("sha256:") else None


def label_value(text: str, what: str = "label") -> str:
    """A Kubernetes label value: at most 63 letters, digits, '-', '_' or '.'."""
    if not isinstance(text, str) or not _LABEL_VALUE.match(text):
        raise UserError(f"invalid {what} {text!r}: at most 63 letters, digits, '-', '_' or '.'")
    return text
