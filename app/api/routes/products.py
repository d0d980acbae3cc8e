"""GET /products/{id}/similar: products like this one, the recommender's second question.

The nearest products by their own chunks mix kinds (a tent's nearest are tents, headlamps
and sleeping bags, in turns); a shopper on a tent's page asking for similar products
wants tents first. So the products of the same kind (its name's last word, when the
catalog's names make that a kind: app/query/kind.py) come first among SIMILAR_CANDIDATES
times as many nearest, then the others, each in order of nearness.
"""

from __future__ import annotations

import logging
from typing import Annotated

from fastapi import APIRouter, HTTPException, Path, Query, status
from pydantic import ValidationError

from app.api.deps import (
    RetrievalGateDep,
    RetrieverDep,
    SettingsDep,
    UnderstandingDep,
    run_retrieval,
)
from app.api.schemas import ErrorResponse, ProductOut, RecommendFilters, SimilarResponse
from app.query import QueryUnderstanding
from app.query.kind import same_kind_first
from app.retrieval import Retriever
from app.retrieval.types import RetrievedProduct
from app.store import SearchFilter

logger = logging.getLogger(__name__)

router = APIRouter(prefix="/products", tags=["products"])

_ERRORS: dict[int | str, dict[str, object]] = {
    code: {"model": ErrorResponse} for code in (404, 422, 503)
}
# Nearest products read per product answered, so the same kind can come first.
SIMILAR_CANDIDATES = 3


@router.get("/{product_id}/similar", response_model=SimilarResponse, responses=_ERRORS)
async def similar(
    # The table key is a BIGINT: a larger id cannot exist, and the engines cannot take it.
    product_id: Annotated[int, Path(ge=0, le=2**63 - 1)],
    retriever: RetrieverDep,
    settings: SettingsDep,
    gate: RetrievalGateDep,
    understanding: UnderstandingDep,
    top_k: Annotated[int | None, Query(ge=1)] = None,
    category: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
    min_price: Annotated[float | None, Query(ge=0)] = None,
    max_price: Annotated[float | None, Query(ge=0)] = None,
) -> SimilarResponse:
    """Products closest to this one (its own chunks as the example), itself excluded, those
    of its kind first."""
    if top_k is not None and top_k > settings.max_top_k:
        raise HTTPException(
            status.HTTP_422_UNPROCESSABLE_CONTENT,
            f"top_k: must be between 1 and {settings.max_top_k}",
        )
    try:
        filters = RecommendFilters(category=category, min_price=min_price, max_price=max_price)
    except ValidationError as e:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, e.errors()[0]["msg"]) from e
    wanted = top_k or settings.vector_search_top_k
    found = await run_retrieval(
        gate,
        "similar products",
        _nearest,
        retriever,
        understanding,
        product_id,
        wanted,
        filters.to_search_filter(),
    )
    if found is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"product {product_id} is not in the index")
    return SimilarResponse(product_id=product_id, products=[ProductOut.of(p) for p in found])


def _nearest(
    retriever: Retriever,
    understanding: QueryUnderstanding,
    product_id: int,
    top_k: int,
    flt: SearchFilter | None,
) -> list[RetrievedProduct] | None:
    """Its `top_k` nearest products, its kind first; None when it is not in the index
    (blocking). Without a kind (a name ending "… in White"), no more than `top_k` are read."""
    name = retriever.product_name(product_id)
    kind = understanding.kind_of(name) if name is not None else None
    wanted = top_k * SIMILAR_CANDIDATES if kind is not None else top_k
    products = retriever.similar(product_id, wanted, flt)
    return None if products is None else same_kind_first(products, kind)[:top_k]
