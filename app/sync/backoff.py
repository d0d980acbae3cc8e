"""How long a sync loop waits before its next cycle: the interval, or longer after failures.

Shared by the API's background loop and `python -m app.sync --loop`, so both retry the
same way: any failure (a commit file gone mid-read, an S3 throttle, a store restart) is
logged with its type and retried after a delay that doubles per consecutive failure, up
to a cap; the first success returns to the normal interval. A terminal failure
(app.core.errors: a collection built for another model, say) goes straight to the cap: it
needs a fix, not a quick retry.
"""

from __future__ import annotations

from app.core.errors import is_transient

MAX_BACKOFF_SECONDS = 300.0


class Backoff:
    def __init__(self, interval: float, cap: float = MAX_BACKOFF_SECONDS) -> None:
        self.interval = interval
        self.cap = max(cap, interval)
        self.failures = 0

    def success(self) -> float:
        self.failures = 0
        return self.interval

    def failure(self, error: BaseException | None = None) -> float:
        self.failures += 1
        if error is not None and not is_transient(error):
            return self.cap
        return float(min(self.interval * 2 ** (self.failures - 1), self.cap))


def describe(error: BaseException) -> str:
    kind = "" if is_transient(error) else " (terminal: needs a fix)"
    return f"{type(error).__name__}: {error}{kind}"
