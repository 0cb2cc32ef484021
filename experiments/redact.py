"""Remove secrets from collected logs before they are written anywhere.

Flux Operator logs print the broker's CURVE certificate, secret key included;
a careless script can echo AWS credentials.  `redact(text)` replaces the secret
part and keeps the rest of the line, so a log stays readable and parseable.
"""

from __future__ import annotations

import re

__all__ = ["REDACTED", "redact"]

REDACTED = "<redacted>"

_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # ZeroMQ CURVE certificates: `    secret-key = "..."` (any quoting, any spacing).
    (re.compile(r"(?im)^(\s*secret[-_]key\s*=\s*)(\"[^\"\n]*\"|'[^'\n]*'|\S+)"), r"\1" + REDACTED),
    # aws_secret_access_key = ..., AWS_SECRET_ACCESS_KEY=..., "SecretAccessKey": "..."
    (
        re.compile(r"(?i)((?:aws_?)?secret_?access_?key\"?\s*[:=]\s*\"?)([A-Za-z0-9/+=]{16,})"),
        r"\1" + REDACTED,
    ),
    (
        re.compile(r"(?i)((?:aws_?)?session_?token\"?\s*[:=]\s*\"?)([A-Za-z0-9/+=]{16,})"),
        r"\1" + REDACTED,
    ),
    # Access key ids: AKIA/ASIA + 16 upper-case letters or digits.
    (re.compile(r"\b(?:AKIA|ASIA|AIDA|AROA)[A-Z0-9]{16}\b"), REDACTED),
)


def redact(text: str) -> str:
    """`text` with CURVE secret keys and AWS credentials replaced by <redacted>."""
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text
