"""A circuit breaker for the LLM endpoint: stop calling it while it keeps failing.

closed: every request may call. After `failure_threshold` failures in a row it opens:
requests get the extractive answer at once. Once per `probe_interval_seconds` one request
is let through as a probe (the state reads `half_open` until it is answered); a success
from any call closes the breaker, a failed probe leaves it open until the next probe.

Probes are spaced from the moment the previous one *started*, not from when it failed: a
probe hanging until the deadline does not push the next one back, so the breaker closes
within one probe interval (plus the answer's own latency) of the endpoint recovering.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Literal

logger = logging.getLogger(__name__)

BreakerState = Literal["closed", "open", "half_open"]
BREAKER_STATES: tuple[BreakerState, ...] = ("closed", "open", "half_open")
Permit = Literal["call", "probe", "skip"]


class CircuitBreaker:
    def __init__(
        self,
        *,
        failure_threshold: int,
        probe_interval_seconds: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """Args:
        failure_threshold: consecutive failures that open the breaker.
        probe_interval_seconds: time between probes while open.
        clock: monotonic seconds (tests pass a fake one).
        """
        self.failure_threshold = failure_threshold
        self.probe_interval_seconds = probe_interval_seconds
        self._clock = clock
        self._state: BreakerState = "closed"
        self._failures = 0
        self._next_probe_at = 0.0

    @property
    def state(self) -> BreakerState:
        return self._state

    def permit(self) -> Permit:
        """Whether this request may call: `call` (closed), `probe` (open, one due), `skip`."""
        if self._state == "closed":
            return "call"
        now = self._clock()
        if now < self._next_probe_at:
            return "skip"
        self._next_probe_at = now + self.probe_interval_seconds
        self._state = "half_open"
        return "probe"

    def record_success(self) -> None:
        if self._state != "closed":
            logger.warning("LLM circuit breaker closed: the endpoint answered again")
        self._state = "closed"
        self._failures = 0

    def record_failure(self) -> None:
        if self._state == "half_open":
            self._state = "open"  # the next probe is already scheduled by `permit`
            return
        if self._state == "open":
            return  # a call that started before the breaker opened
        self._failures += 1
        if self._failures >= self.failure_threshold:
            self._state = "open"
            self._next_probe_at = self._clock() + self.probe_interval_seconds
            logger.warning(
                "LLM circuit breaker open after %d failures in a row: answering extractively, "
                "probing every %.1fs",
                self._failures,
                self.probe_interval_seconds,
            )
