"""Liveness and readiness probes."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, status
from starlette.concurrency import run_in_threadpool

from app.api.deps import ServicesDep

router = APIRouter(tags=["health"])


@router.get("/health")
async def health() -> dict[str, str]:
    """The process is up."""
    return {"status": "ok"}


@router.get("/ready", responses={503: {"description": "no complete index yet"}})
async def ready(services: ServicesDep) -> dict[str, str]:
    """200 once the index is complete enough to serve (a first sync, or a syncer's checkpoint)."""
    if not await run_in_threadpool(services.is_ready):
        mode = services.settings.sync_mode
        why = (
            "first sync has not completed"
            if mode == "embedded"
            else "no sync checkpoint in the store yet (is the syncer running?)"
        )
        raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, f"not ready: {why}")
    return {"status": "ready"}
