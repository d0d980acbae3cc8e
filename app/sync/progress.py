"""Progress lines with rate and ETA for long syncs (a 100k bootstrap takes most of an hour)."""

from __future__ import annotations

import logging
import time


class Progress:
    def __init__(self, logger: logging.Logger, label: str, total: int, every_s: float = 5.0):
        self._logger = logger
        self._label = label
        self.total = total
        self.done = 0
        self._every = every_s
        self._start = time.monotonic()
        self._last = self._start

    def advance(self, n: int) -> None:
        self.done += n
        now = time.monotonic()
        if now - self._last >= self._every or self.done >= self.total:
            self._last = now
            elapsed = max(now - self._start, 1e-9)
            rate = self.done / elapsed
            left = (self.total - self.done) / rate if rate > 0 else float("inf")
            self._logger.info(
                "%s: %d/%d (%.0f%%), %.1f/s, ETA %.0fs",
                self._label,
                self.done,
                self.total,
                100.0 * self.done / max(self.total, 1),
                rate,
                left,
            )
