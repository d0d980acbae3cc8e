"""Sync status and a manual cycle (admin: API_KEY when set)."""

from __future__ import annotations

import logging
import time
from dataclasses import asdict
from typing import Any

from fastapi import APIRouter, HTTPException, status
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from app.api.deps import AdminDep, ServicesDep
from app.api.services import Services
from app.store import StoreError
from app.sync.engine import CycleInProgressError, SyncEngine
from app.sync.hudi_source import TableReadError
from app.sync.lease import LeaseHeldError
from app.sync.switch import ModelSwitch

logger = logging.getLogger(__name__)

router = APIRouter(prefix="/sync", tags=["sync"], dependencies=[AdminDep])


def model_status(switch: ModelSwitch, heldout_warning: str | None = None) -> dict[str, Any]:
    """Which encoder's index serves, how far the next one's is (app/sync/switch.py), and
    why LEARNED_MODEL may not help (its manifest's held-out verdict, app.learned)."""
    build = switch.progress()
    return {
        "serving": switch.serving_model,
        "index": switch.serving_index,
        "next": asdict(build) if build is not None else None,
        "last_switch": asdict(switch.last_switch) if switch.last_switch else None,
        "heldout_warning": heldout_warning,
    }


def sync_status(
    engine: SyncEngine,
    *,
    running_in_process: bool,
    switch: ModelSwitch | None = None,
    heldout_warning: str | None = None,
) -> dict[str, Any]:
    """The body of GET /sync/status (the engine's totals as the HTTP layer shows them)."""
    t = engine.totals
    # Off, or another host's syncer holding the lease: its checkpoint is the fact to trust.
    own = running_in_process and not engine.serves_others_index
    lease = engine.lease.current() if engine.lease is not None else None
    return {
        "mode": "embedded" if running_in_process else "off",
        "ready": (t.last_success_at if own else t.checkpoint) is not None,
        # The syncer allowed to write (a Qdrant server only): holder is host:pid:random.
        "lease": {
            "holder": lease.holder,
            "until": lease.until,
            "epoch": lease.epoch,
            "held_here": engine.lease is not None and lease.holder == engine.lease.holder,
        }
        if lease is not None
        else None,
        "running": engine.running,
        "checkpoint": t.checkpoint,
        "table_latest_commit": t.table_latest,
        "oldest_unsynced_commit": t.oldest_unsynced,
        "lag_seconds": t.lag_seconds(),
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
            "targeted_removal_scans": t.targeted_removal_scans,
        },
        "last_cycle": asdict(t.last_report) if t.last_report else None,
        "model": model_status(switch or ModelSwitch.single(engine), heldout_warning),
    }


@router.get("/status")
async def status_(services: ServicesDep) -> dict[str, Any]:
    """Checkpoint, the table's latest commit, lag, counts, the last error, and which
    model serves (and how far the next one's index is)."""
    engine = services.switch.serving
    try:
        # Fresh facts from the table and the store, also while a cycle runs: commits land
        # between cycles, and a bootstrap can run for hours.
        await run_in_threadpool(engine.observe)
    except (StoreError, TableReadError) as e:
        if services.runner is None:
            raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, str(e)) from e
        # Embedded: the loop's failing cycles report this in last_error; the lag keeps
        # growing from the last commit seen waiting.
        logger.debug("sync status without a fresh table read: %s", e)
    try:
        try:
            return await run_in_threadpool(_status_of, services, engine)
        except StoreError:
            if services.switch.serving is engine:
                raise
            # A model switch closed that index meanwhile: the new one's status.
            return await run_in_threadpool(_status_of, services, services.switch.serving)
    except StoreError as e:
        raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, str(e)) from e


def _status_of(services: Services, engine: SyncEngine) -> dict[str, Any]:
    return sync_status(
        engine,
        running_in_process=services.runner is not None,
        switch=services.switch,
        heldout_warning=services.learned_warning,
    )


@router.post(
    "",
    responses={
        202: {"description": "a cycle is already running; this request started none"},
        409: {"description": "SYNC_MODE=off, or another host's syncer holds the lease"},
        503: {},
    },
)
async def run_sync(services: ServicesDep, full: bool = False) -> Any:
    """Run one sync cycle now (`?full=true`: reconcile the whole table)."""
    if services.runner is None:
        raise HTTPException(
            status.HTTP_409_CONFLICT,
            "SYNC_MODE=off: this process does not write the index; run python -m app.sync",
        )
    try:
        report = await services.runner.run_now(full=full)
    except LeaseHeldError as e:
        raise HTTPException(status.HTTP_409_CONFLICT, str(e)) from e
    except CycleInProgressError:
        # Answer at once: waiting would hold this request (and a thread) for the rest of
        # the running cycle, hours during a bootstrap.
        return JSONResponse(
            {"status": "running", "detail": "a sync cycle is already running; see /sync/status"},
            status_code=status.HTTP_202_ACCEPTED,
        )
    except Exception as e:
        # Any cause (table unreadable, store down) is reported, and kept in /sync/status.
        logger.warning("manual sync cycle failed: %s", e)
        raise HTTPException(
            status.HTTP_503_SERVICE_UNAVAILABLE, f"sync cycle failed: {type(e).__name__}: {e}"
        ) from e
    return asdict(report)
