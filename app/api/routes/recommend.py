"""POST /recommend (retrieval + written answer) and POST /search (retrieval only)."""

from __future__ import annotations

import logging

from fastapi import APIRouter, HTTPException, status
from starlette.concurrency import run_in_threadpool

from app.api.admission import Overloaded, RetrievalGate
from app.api.deps import GeneratorDep, RetrievalGateDep, RetrieverDep, SettingsDep
from app.api.schemas import (
    ErrorResponse,
    ProductOut,
    RecommendRequest,
    RecommendResponse,
    SearchResponse,
)
from app.core.config import Settings
from app.llm.types import RetrievedProduct
from app.retrieval import Retriever
from app.store import StoreError

logger = logging.getLogger(__name__)

router = APIRouter(tags=["recommend"])

_ERRORS: dict[int | str, dict[str, object]] = {
    code: {"model": ErrorResponse} for code in (400, 413, 422, 503)
}


async def _retrieve(
    body: RecommendRequest, retriever: Retriever, settings: Settings, gate: RetrievalGate
) -> list[RetrievedProduct]:
    # Limits that come from settings cannot live in the static request model.
    if len(body.query) > settings.max_query_chars:
        raise HTTPException(
            status.HTTP_422_UNPROCESSABLE_CONTENT,
            f"query: longer than {settings.max_query_chars} characters",
        )
    top_k = body.top_k or settings.vector_search_top_k
    if top_k > settings.max_top_k:
        raise HTTPException(
            status.HTTP_422_UNPROCESSABLE_CONTENT,
            f"top_k: must be between 1 and {settings.max_top_k}",
        )
    flt = body.filters.to_search_filter() if body.filters else None
    try:
        # Embedding and search are blocking CPU work: off the event loop, a few at a time.
        async with gate.slot():
            return await run_in_threadpool(retriever.retrieve, body.query, top_k, flt)
    except Overloaded as e:
        raise HTTPException(
            status.HTTP_503_SERVICE_UNAVAILABLE,
            f"busy: {e}; retry shortly",
            headers={"Retry-After": "1"},
        ) from e
    except StoreError as e:
        logger.error("retrieval failed: %s", e)
        raise HTTPException(
            status.HTTP_503_SERVICE_UNAVAILABLE, f"vector store unavailable: {e}"
        ) from e


@router.post("/recommend", response_model=RecommendResponse, responses=_ERRORS)
async def recommend(
    body: RecommendRequest,
    retriever: RetrieverDep,
    generator: GeneratorDep,
    settings: SettingsDep,
    gate: RetrievalGateDep,
) -> RecommendResponse:
    """Recommend products for a plain-language request, with a short written answer."""
    products = await _retrieve(body, retriever, settings, gate)
    answer = await generator.generate(body.query, products)
    return RecommendResponse(
        query=body.query,
        message=answer.message,
        products=[ProductOut.of(p) for p in products],
        generator=answer.generator,
        degraded=answer.degraded,
        degraded_reason=answer.reason,
    )


@router.post("/search", response_model=SearchResponse, responses=_ERRORS)
async def search(
    body: RecommendRequest, retriever: RetrieverDep, settings: SettingsDep, gate: RetrievalGateDep
) -> SearchResponse:
    """Retrieval only: the products /recommend would use, without the written answer."""
    products = await _retrieve(body, retriever, settings, gate)
    return SearchResponse(query=body.query, products=[ProductOut.of(p) for p in products])
