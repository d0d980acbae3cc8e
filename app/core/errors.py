"""One root for the service's own failures, marked transient or terminal.

Every loop (the API's background sync, `python -m app.sync --loop`) retries on the same
rule: a transient failure (a store restart, a table mid-write, another syncer holding the
lock, a full queue) may pass on its own, so it is retried with backoff; a terminal one (a
collection built for another model, an index from an older version, a bad input file) will
not until someone changes something, so it is reported as such and retried only at the
longest backoff, in case the fix is a restart of the other side.
"""

from __future__ import annotations

from typing import ClassVar


class RecommenderError(Exception):
    """Base of every exception the service raises on purpose."""

    transient: ClassVar[bool] = True


class TerminalError(RecommenderError):
    """A failure that repeats until configuration or data change."""

    transient: ClassVar[bool] = False


def is_transient(error: BaseException) -> bool:
    """Our own errors say; anything else (an engine bug, a network library) is retried."""
    return bool(getattr(error, "transient", True))
