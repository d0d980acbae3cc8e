"""GET /analytics: what shoppers asked, saw, clicked and bought (admin: API_KEY when set)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, status
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool

from app.api.deps import AdminDep, SettingsDep
from app.api.schemas import ErrorResponse
from app.events.analytics import AnalyticsError, read_interactions, summarize

router = APIRouter(tags=["analytics"], dependencies=[AdminDep])


class QueryRow(BaseModel):
    query: str
    answers: int
    clicks: int
    purchases: int
    ctr: float


class PositionRow(BaseModel):
    position: int
    impressions: int
    clicks: int
    ctr: float


class CountRow(BaseModel):
    query: str
    count: int


class AnalyticsResponse(BaseModel):
    days: int
    answers: int
    clicks: int
    add_to_carts: int
    purchases: int
    top_queries: list[QueryRow]
    no_match_queries: list[CountRow]
    ctr_by_position: list[PositionRow]
    purchases_by_query: list[CountRow]


@router.get(
    "/analytics",
    response_model=AnalyticsResponse,
    responses={code: {"model": ErrorResponse} for code in (401, 422, 503)},
)
async def analytics(
    settings: SettingsDep,
    days: Annotated[int, Query(ge=1, le=366)] = 7,
    top: Annotated[int, Query(ge=1, le=200)] = 20,
) -> AnalyticsResponse:
    """Top queries, queries with no match, click-through by position, purchases per query."""
    try:
        rows = await run_in_threadpool(read_interactions, settings, days)
    except AnalyticsError as e:
        raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, str(e)) from e
    a = summarize(rows, days, top)
    return AnalyticsResponse(
        days=a.days,
        answers=a.answers,
        clicks=a.clicks,
        add_to_carts=a.add_to_carts,
        purchases=a.purchases,
        top_queries=[
            QueryRow(
                query=q.query,
                answers=q.answers,
                clicks=q.clicks,
                purchases=q.purchases,
                ctr=round(q.ctr, 4),
            )
            for q in a.top_queries
        ],
        no_match_queries=[CountRow(query=q, count=n) for q, n in a.no_match_queries],
        ctr_by_position=[
            PositionRow(
                position=p.position, impressions=p.impressions, clicks=p.clicks, ctr=round(p.ctr, 4)
            )
            for p in a.ctr_by_position
        ],
        purchases_by_query=[CountRow(query=q, count=n) for q, n in a.purchases_by_query],
    )
