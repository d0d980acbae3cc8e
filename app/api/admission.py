"""Admission for retrieval: a bound on the searches running at once and on those waiting.

Query embedding and search are CPU work in the threadpool. Unbounded, an offered load past
capacity queues without limit: measured on a loaded 2-core box, 100 req/s offered left
3,500 connections open and the service finished ~2 req/s, every request waiting minutes,
since dozens of ONNX runs at once mostly spin against each other. With a few slots the CPU
does work, not contention, and past a short queue a request is refused at once (503 with
Retry-After) instead of joining a queue it would time out in.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from app.core.errors import RecommenderError


class Overloaded(RecommenderError):
    """Every retrieval slot is busy and the queue is full."""


class RetrievalGate:
    def __init__(self, concurrency: int, max_waiting: int) -> None:
        """Args:
        concurrency: retrievals running at once.
        max_waiting: requests allowed to wait for a slot; one more is refused.
        """
        self.concurrency = concurrency
        self.max_waiting = max_waiting
        self._slots = asyncio.Semaphore(concurrency)
        self._waiting = 0

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold a slot for the block.

        Raises:
            Overloaded: the queue is full; the caller answers 503 at once.
        """
        if self._slots.locked() and self._waiting >= self.max_waiting:
            raise Overloaded(f"{self.concurrency} searches running, {self._waiting} waiting")
        self._waiting += 1
        try:
            await self._slots.acquire()
        finally:
            self._waiting -= 1
        try:
            yield
        finally:
            self._slots.release()
