"""The sync as a background task of the API process (SYNC_MODE=embedded)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import asdict
from typing import Any

from app.sync.engine import SyncEngine
from app.sync.lock import SyncBusyError
from app.sync.state import CycleReport, instant_seconds_between

logger = logging.getLogger(__name__)


class SyncRunner:
    """Runs `engine.run_cycle` every `interval` seconds off the event loop.

    Cycles run in a worker thread (embedding is CPU-bound and would stall every request);
    the engine's own lock keeps a `POST /sync` and the timer from overlapping.
    """

    def __init__(self, engine: SyncEngine, interval: float) -> None:
        self.engine = engine
        self.interval = interval
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()

    @property
    def ready(self) -> bool:
        return self.engine.totals.last_success_at is not None

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop(), name="sync-loop")

    async def stop(self, timeout: float = 60.0) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        # Cancelling the task does not stop a cycle already running in its worker thread;
        # the caller closes the store next, so let that cycle finish first.
        if not await asyncio.to_thread(self.engine.wait_idle, timeout):
            logger.warning("a sync cycle is still running after %.0fs; closing anyway", timeout)

    async def run_now(self, *, full: bool = False) -> CycleReport:
        return await asyncio.to_thread(self.engine.run_cycle, full=full)

    async def _loop(self) -> None:
        while True:
            try:
                await self.run_now()
            except asyncio.CancelledError:
                raise
            except SyncBusyError as e:
                logger.warning("%s", e)
            except Exception:
                # Recorded in engine.totals.last_error and retried next tick: a table being
                # written or a store blip must not kill the loop.
                logger.exception("sync cycle failed")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=self.interval)
            self._wake.clear()


def sync_status(engine: SyncEngine, *, running_in_process: bool) -> dict[str, Any]:
    """The body of GET /sync/status."""
    t = engine.totals
    return {
        "mode": "embedded" if running_in_process else "off",
        "ready": t.last_success_at is not None,
        "checkpoint": t.checkpoint,
        "table_latest_commit": t.table_latest,
        "lag_seconds": instant_seconds_between(t.checkpoint, t.table_latest),
        "last_success_at": t.last_success_at,
        "seconds_since_success": (time.time() - t.last_success_at) if t.last_success_at else None,
        "last_error": t.last_error,
        "counts": {
            "chunks": engine.store.count(),
            "cycles": t.cycles,
            "failures": t.failures,
            "embedded": t.embedded,
            "skipped_unchanged": t.skipped,
            "deleted": t.deleted,
            "payload_updates": t.payload_updates,
            "full_reconciliations": t.full_reconciliations,
            "key_reconciliations": t.key_reconciliations,
        },
        "last_cycle": asdict(t.last_report) if t.last_report else None,
    }
