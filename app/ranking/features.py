"""Per-candidate features for the learned ranker: the one function training and serving share.

A candidate is a `ProductHit` from relevance fusion (its `BranchSignals`: cosine of the
best chunk, BM25, its share of the query's best, each branch's rank, the fused score) and
its payload (name, category, brand, price, and the product signals the events pipeline
mirrors: impressions, clicks, add_to_carts, purchases, ctr). Query-term matches per field
use the BM25 side's own tokens (app.store.hybrid), so "6 ft." in a title matches "6 foot".
A missing value is NaN: LightGBM learns where missing goes.

`FEATURES` is the order of the columns; a saved ranker lists the names it was trained on
(features.json) and loading one that disagrees fails (app.ranking.model).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from app.store.base import ProductHit, SearchFilter
from app.store.hybrid import document_terms, query_sparse

# Product signals as the events pipeline mirrors them into the payload (nullable floats).
PRODUCT_SIGNALS = ("impressions", "clicks", "add_to_carts", "purchases", "ctr")

FEATURES: tuple[str, ...] = (
    "cosine",
    "cosine_gap",  # the query's best cosine minus this one: relevance relative to the query
    "bm25",
    "bm25_share",
    "dense_rank",
    "lexical_rank",
    "fused",
    "fused_gap",
    "query_terms",
    "name_match",  # share of the query's terms in the product name
    "name_terms",
    "category_match",
    "brand_match",
    "log_price",
    "price_outside",  # how far outside the query's price bounds, relative (0 inside)
    *PRODUCT_SIGNALS,
)
# The fused score's column: the learned order's starting point (app.ranking.model).
FUSED = FEATURES.index("fused")

NAN = float("nan")


def _share(query: frozenset[int], text: object) -> float:
    if not isinstance(text, str) or not text:
        return NAN
    if not query:
        return 0.0
    return len(query & document_terms(text)) / len(query)


def _number(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return NAN
    return float(value)


def price_outside(price: float, flt: SearchFilter | None) -> float:
    """0 inside the filter's price bounds, else the relative distance outside them (log);
    NaN when the query states no price bound or the product has no price."""
    if flt is None or (flt.min_price is None and flt.max_price is None) or math.isnan(price):
        return NAN
    if flt.max_price is not None and price > flt.max_price:
        return math.log1p((price - flt.max_price) / max(flt.max_price, 1.0))
    if flt.min_price is not None and price < flt.min_price:
        return math.log1p((flt.min_price - price) / max(price, 1.0))
    return 0.0


def feature_matrix(
    text: str, flt: SearchFilter | None, hits: Sequence[ProductHit]
) -> npt.NDArray[np.float64]:
    """One row of `FEATURES` per candidate, in the candidates' order.

    Args:
        text: the searched text (after query understanding).
        flt: the filter the search ran under (its price bounds feed `price_outside`).
        hits: the retriever's candidates for that search.
    """
    query = frozenset(query_sparse(text).indices)
    rows = np.full((len(hits), len(FEATURES)), NAN, dtype=np.float64)
    cosines = [h.signals.cosine for h in hits if h.signals is not None]
    best_cosine = max(cosines, default=NAN)
    best_fused = max((h.score for h in hits), default=NAN)
    for i, hit in enumerate(hits):
        payload = hit.chunks[0].payload if hit.chunks else {}
        s = hit.signals
        price = _number(payload.get("price"))
        name = payload.get("name")
        row = [
            s.cosine if s else NAN,
            best_cosine - s.cosine if s else NAN,
            s.bm25 if s else NAN,
            s.bm25_share if s else NAN,
            float(s.dense_rank) if s and s.dense_rank is not None else NAN,
            float(s.lexical_rank) if s and s.lexical_rank is not None else NAN,
            hit.score,
            best_fused - hit.score,
            float(len(query)),
            _share(query, name),
            float(len(document_terms(name))) if isinstance(name, str) else NAN,
            _share(query, payload.get("category")),
            _share(query, payload.get("brand")),
            math.log(max(price, 0.01)) if not math.isnan(price) else NAN,
            price_outside(price, flt),
            *(_number(payload.get(f)) for f in PRODUCT_SIGNALS),
        ]
        rows[i] = row
    return rows
