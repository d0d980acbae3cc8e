"""GET /products/{id}/similar: products like this one, the recommender's second question."""

from __future__ import annotations

import logging
from typing import Annotated

from fastapi import APIRouter, HTTPException, Path, Query, status
from pydantic import ValidationError

from app.api.deps import RetrievalGateDep, RetrieverDep, SettingsDep, run_retrieval
from app.api.schemas import ErrorResponse, ProductOut, RecommendFilters, SimilarResponse

logger = logging.getLogger(__name__)

router = APIRouter(prefix="/products", tags=["products"])

_ERRORS: dict[int | str, dict[str, object]] = {
    code: {"model": ErrorResponse} for code in (404, 422, 503)
}


@router.get("/{product_id}/similar", response_model=SimilarResponse, responses=_ERRORS)
async def similar(
    # The table key is a BIGINT: a larger id cannot exist, and the engines cannot take it.
    product_id: Annotated[int, Path(ge=0, le=2**63 - 1)],
    retriever: RetrieverDep,
    settings: SettingsDep,
    gate: RetrievalGateDep,
    top_k: Annotated[int | None, Query(ge=1)] = None,
    category: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
    min_price: Annotated[float | None, Query(ge=0)] = None,
    max_price: Annotated[float | None, Query(ge=0)] = None,
) -> SimilarResponse:
    """Products closest to this one (its own chunks as the example), itself excluded."""
    if top_k is not None and top_k > settings.max_top_k:
        raise HTTPException(
            status.HTTP_422_UNPROCESSABLE_CONTENT,
            f"top_k: must be between 1 and {settings.max_top_k}",
        )
    try:
        filters = RecommendFilters(category=category, min_price=min_price, max_price=max_price)
    except ValidationError as e:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, e.errors()[0]["msg"]) from e
    products = await run_retrieval(
        gate, "similar products", retriever.similar, product_id, top_k, filters.to_search_filter()
    )
    if products is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"product {product_id} is not in the index")
    return SimilarResponse(product_id=product_id, products=[ProductOut.of(p) for p in products])
