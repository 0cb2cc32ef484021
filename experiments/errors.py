"""The one exception type for mistakes a user can make (bad flag, file, config).

The CLI turns it into a one-line message and exit code 2, never a traceback.
"""

from __future__ import annotations


class UserError(Exception):
    """Bad input from the user: reported as one line, exit code 2."""


class Declined(Exception):
    """The user answered no when asked to start something billed: exit code 1."""
