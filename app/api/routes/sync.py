"""Sync status and a manual cycle (admin: API_KEY when set)."""

from __future__ import annotations

import logging
from dataclasses import asdict
from typing import Any

from fastapi import APIRouter, HTTPException, status

from app.api.deps import AdminDep, ServicesDep
from app.store import StoreError
from app.sync.runner import sync_status

logger = logging.getLogger(__name__)

router = APIRouter(prefix="/sync", tags=["sync"], dependencies=[AdminDep])


@router.get("/status")
def status_(services: ServicesDep) -> dict[str, Any]:
    """Checkpoint, the table's latest commit, lag, counts and the last error."""
    if services.runner is None:
        # Another process syncs: the checkpoint in the store is the only fresh fact here.
        cp = services.engine.checkpoint()
        services.engine.totals.checkpoint = cp.completed if cp else None
    try:
        return sync_status(services.engine, running_in_process=services.runner is not None)
    except StoreError as e:
        raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, str(e)) from e


@router.post("", responses={409: {"description": "SYNC_MODE=off"}, 503: {}})
async def run_sync(services: ServicesDep, full: bool = False) -> dict[str, Any]:
    """Run one sync cycle now (`?full=true`: reconcile the whole table)."""
    if services.runner is None:
        raise HTTPException(
            status.HTTP_409_CONFLICT,
            "SYNC_MODE=off: this process does not write the index; run python -m app.sync",
        )
    try:
        report = await services.runner.run_now(full=full)
    except Exception as e:
        # Any cause (table unreadable, store down) is reported, and kept in /sync/status.
        logger.warning("manual sync cycle failed: %s", e)
        raise HTTPException(
            status.HTTP_503_SERVICE_UNAVAILABLE, f"sync cycle failed: {type(e).__name__}: {e}"
        ) from e
    return asdict(report)
