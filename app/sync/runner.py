"""The sync as a background task of the API process (SYNC_MODE=embedded)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from functools import partial

from app.store import StoreError
from app.sync.backoff import RetryLoop
from app.sync.engine import SyncEngine
from app.sync.state import CycleReport
from app.sync.switch import ModelSwitch

logger = logging.getLogger(__name__)


class SyncRunner:
    """Runs the sync's cycle (`ModelSwitch.run_cycle`: the serving index's, then a step of
    a new encoder's index, app/sync/switch.py) every `interval` seconds off the event loop.

    Cycles run in a worker thread (embedding is CPU-bound and would stall every request).
    Neither the timer nor `POST /sync` ever queues behind a running cycle: they skip it,
    so no request holds a thread for the length of a bootstrap.
    """

    def __init__(self, sync: SyncEngine | ModelSwitch, interval: float) -> None:
        self.switch = sync if isinstance(sync, ModelSwitch) else ModelSwitch.single(sync)
        self.interval = interval
        self._task: asyncio.Task[None] | None = None

    @property
    def engine(self) -> SyncEngine:
        """The serving index's engine (another one after a switch)."""
        return self.switch.serving

    @property
    def ready(self) -> bool:
        """A cycle completed here (or another host's syncer holds the lease) and the store
        still holds its checkpoint.

        The second half matters when the collection is dropped under the service: the
        store is empty until the next cycle bootstraps it, and that is not "ready".
        """
        engine = self.engine  # one engine for both reads: a model switch may replace it
        if engine.totals.last_success_at is None and not engine.serves_others_index:
            return False
        try:
            return engine.checkpoint() is not None
        except StoreError:
            return False

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop(), name="sync-loop")

    async def stop(self, timeout: float = 60.0) -> None:
        # A cycle in its worker thread is not stopped by cancelling the task: ask it to
        # stop at its next batch, and let the caller close the store only once it has.
        self.engine.request_stop()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if not await asyncio.to_thread(self.engine.wait_idle, timeout):
            logger.warning("a sync cycle is still running after %.0fs; closing anyway", timeout)
        elif self.engine.lease is not None:
            with contextlib.suppress(StoreError):
                await asyncio.to_thread(self.engine.lease.release)

    async def run_now(self, *, full: bool = False) -> CycleReport:
        """Run a cycle now; raises CycleInProgressError at once if one is running."""
        return await asyncio.to_thread(self.switch.run_cycle, full=full, wait=False)

    async def _loop(self) -> None:
        loop = RetryLoop(self.interval, logger)
        cycle = partial(self.switch.run_cycle, wait=False)
        # The step runs in a worker thread (the cycle is CPU-bound); only the wait is here.
        while (delay := await asyncio.to_thread(loop.step, cycle)) is not None:
            await asyncio.sleep(delay)
