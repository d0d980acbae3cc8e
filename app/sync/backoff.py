"""The one retry loop of every sync runner: run a cycle, then wait the interval or longer.

Shared by the API's background loop and `python -m app.sync --loop`, which differ only in
how they wait (one sleeps, the other awaits off the event loop). Any failure (a commit
file gone mid-read, an S3 throttle, a store restart) is logged with its type and retried
after a delay that doubles per consecutive failure, up to a cap; the first success returns
to the normal interval. A terminal failure (app.core.errors: a collection built for
another model, say) goes straight to the cap: it needs a fix, not a quick retry. Another
syncer at work is not a failure, and a cycle stopped for shutdown ends the loop.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from app.core.errors import is_transient
from app.sync.engine import CycleCancelledError, CycleInProgressError
from app.sync.lease import LeaseHeldError
from app.sync.lock import SyncBusyError

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


class RetryLoop:
    """The body of a sync loop; a runner is `while (d := loop.step(cycle)) is not None: wait(d)`.

    Args:
        interval: seconds between cycles while they succeed.
        logger: where failures are reported (the runner's own logger).
    """

    def __init__(
        self, interval: float, logger: logging.Logger, cap: float = MAX_BACKOFF_SECONDS
    ) -> None:
        self.backoff = Backoff(interval, cap)
        self.logger = logger

    def step(self, cycle: Callable[[], object]) -> float | None:
        """Run one cycle; returns the seconds to wait before the next, None to stop."""
        try:
            cycle()
        except CycleCancelledError:
            return None  # shutdown asked the cycle to stop
        except CycleInProgressError as e:
            # POST /sync is running one in this process: not a failure.
            self.logger.info("%s", e)
            return self.backoff.success()
        except SyncBusyError as e:
            # The second syncer waits its turn instead of writing alongside.
            delay = self.backoff.success()
            self.logger.warning("%s; retrying in %.0fs", e, delay)
            return delay
        except LeaseHeldError as e:
            # A syncer on another host holds the lease: try again when it would expire.
            delay = max(self.backoff.success(), e.retry_in + 0.5)
            self.logger.info("%s; retrying in %.0fs", e, delay)
            return delay
        except Exception as e:
            # Whatever it is (table mid-write, S3 throttle, store restart), the next cycle
            # may well succeed: the loop must outlive every error it can meet.
            delay = self.backoff.failure(e)
            self.logger.error(
                "sync cycle failed (%s); retry %d in %.0fs",
                describe(e),
                self.backoff.failures,
                delay,
                exc_info=e,
            )
            return delay
        return self.backoff.success()
