"""A value read from the store and kept: re-read in the background every `refresh_seconds`.

Query understanding needs facts about the catalog on every request (its categories, its
brands, its words) that change only as fast as the sync writes. Each is the store's own
answer, so API replicas and a restarted process agree and no count has to be kept in step
with the sync's writes. Every answer is kept for `refresh_seconds`, an empty one too: a
catalog without categories has none, and reading it again on every call made every request
read the store (issue 26). Only `get`'s first read blocks a caller; refreshes run in a
background thread while callers keep the last answer. A failed read keeps the last answer
(none yet: the empty one) and is tried again after RETRY_FAILED_READ_SECONDS.
"""

from __future__ import annotations

import threading
import time
from typing import Generic, TypeVar

from app.store import VectorStore

T = TypeVar("T")

# A failed read is no answer: tried again this soon, not a whole refresh interval later.
RETRY_FAILED_READ_SECONDS = 10.0


class StoreView(Generic[T]):
    """Subclasses say what to read (`_read`, None when it failed) and what "nothing" is
    (`_empty`). `store` may be replaced (a model switch serves another index): the next read
    uses the new one."""

    def __init__(self, store: VectorStore, refresh_seconds: float) -> None:
        self.store = store
        self.refresh_seconds = refresh_seconds
        self._lock = threading.Lock()
        self._value: T | None = None  # None until the first read
        self._due = 0.0  # monotonic time of the next read
        self._refreshing = False

    def get(self) -> T:
        """The value (the first call blocks on a store read: call off the event loop)."""
        with self._lock:
            if self._value is None:
                return self._keep(self._read())
            self._schedule_refresh_if_due()
            return self._value

    def peek(self) -> T | None:
        """The value without blocking (safe on the event loop): None until the first read is
        done; schedules a due refresh."""
        return self._peek(start_first=False)

    def warm(self) -> T | None:
        """`peek`, and with nothing read yet, the first read started in the background: for
        a value no request should wait for (the catalog's words take a scroll to read)."""
        return self._peek(start_first=True)

    def _peek(self, *, start_first: bool) -> T | None:
        if not self._lock.acquire(blocking=False):
            # Another thread stores a read or schedules one: the last answer still holds
            # (None here had a request parse without the catalog's words, now and then).
            return self._value
        try:
            if self._value is not None or start_first:
                self._schedule_refresh_if_due()
            return self._value
        finally:
            self._lock.release()

    def _schedule_refresh_if_due(self) -> None:
        if time.monotonic() >= self._due and not self._refreshing:
            self._refreshing = True
            name = f"{type(self).__name__}-refresh"
            threading.Thread(target=self._refresh, name=name, daemon=True).start()

    def _refresh(self) -> None:
        found: T | None = None
        try:
            found = self._read()  # outside the lock: callers keep the last answer meanwhile
        finally:
            with self._lock:
                self._keep(found)
                self._refreshing = False

    def _keep(self, found: T | None) -> T:
        """Store a read's answer (None: the read failed) and when to read next."""
        if found is None:
            self._value = self._value if self._value is not None else self._empty()
            self._due = time.monotonic() + min(self.refresh_seconds, RETRY_FAILED_READ_SECONDS)
        else:
            self._value = found
            self._due = time.monotonic() + self.refresh_seconds
        return self._value

    def _read(self) -> T | None:
        raise NotImplementedError

    def _empty(self) -> T:
        raise NotImplementedError
