"""POST /events: what shoppers did with what they were shown (docs/events.md)."""

from __future__ import annotations

import logging

from fastapi import APIRouter, HTTPException, status

from app.api.deps import ShopEventsDep
from app.api.schemas import ErrorResponse, EventsAccepted, EventsRequest
from app.events.log import EventLogError
from app.events.shop import BadEventsError

logger = logging.getLogger(__name__)

router = APIRouter(tags=["events"])


@router.post(
    "/events",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=EventsAccepted,
    responses={code: {"model": ErrorResponse} for code in (400, 413, 422, 503)},
)
async def post_events(body: EventsRequest, events: ShopEventsDep) -> EventsAccepted:
    """Record clicks, add-to-carts and purchases; 202 once they are on disk (all or none)."""
    try:
        records = events.accept([e.to_event() for e in body.events])
    except BadEventsError as e:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, str(e)) from e
    if events.log is None:
        raise HTTPException(
            status.HTTP_503_SERVICE_UNAVAILABLE, "events cannot be stored here (EVENTS_DIR)"
        )
    try:
        await events.log.record_durable(records)
    except EventLogError as e:
        logger.error("POST /events: %s", e)
        raise HTTPException(
            status.HTTP_503_SERVICE_UNAVAILABLE, str(e), headers={"Retry-After": "1"}
        ) from e
    return EventsAccepted(accepted=len(records), event_ids=[r.event_id for r in records])
