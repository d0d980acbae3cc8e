"""Retrieval under a filter plan: hard bounds exclude, the soft price preference reorders,
and a hard price bound that leaves nothing gives the nearest matches, labelled as such.

Sits in front of the Retriever (search text + SearchFilter in); it never changes how the
Retriever ranks.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from app.query.plan import FilterPlan
from app.retrieval import Query, Retriever
from app.retrieval.types import RetrievedProduct
from app.store import SearchFilter

logger = logging.getLogger(__name__)

# Candidates per wanted product when re-ordering (soft price preference, nearest matches).
CANDIDATE_FACTOR = 3
# Similarity given up per e-fold of price under "cheap": a product at a third of the price
# may be ~0.11 less similar and still rank first.
PRICE_WEIGHT = 0.1
# Only products this close to the best match compete on price; the rest keep their
# places after them, so a cheap unrelated product is never lifted over relevant ones.
RELEVANCE_MARGIN = 0.15


@dataclass(frozen=True, slots=True)
class SearchOutcome:
    products: list[RetrievedProduct]
    # True: nothing met the hard price bounds; `products` are the nearest matches outside.
    nearest: bool = False


def nudge_by_cost(
    products: Sequence[RetrievedProduct], cost: Callable[[RetrievedProduct], float | None]
) -> list[RetrievedProduct]:
    """Re-order the products near the best match by similarity minus PRICE_WEIGHT × cost
    (unknown cost: the highest seen); the others follow in their order."""
    if not products:
        return []
    best = max(p.score for p in products)
    near = [p for p in products if p.score >= best - RELEVANCE_MARGIN]
    rest = [p for p in products if p.score < best - RELEVANCE_MARGIN]
    known = [c for c in map(cost, near) if c is not None]
    worst = max(known, default=0.0)

    def adjusted(p: RetrievedProduct) -> float:
        c = cost(p)
        return p.score - PRICE_WEIGHT * (worst if c is None else c)

    return sorted(near, key=adjusted, reverse=True) + rest


def log_price(p: RetrievedProduct) -> float | None:
    # Log: what matters is "a third of the price", not "$40 less".
    return math.log(max(p.price, 0.01)) if p.price is not None else None


def log_outside(flt: SearchFilter) -> Callable[[RetrievedProduct], float | None]:
    """How far outside the price bounds a product is, relative to the bound."""

    def cost(p: RetrievedProduct) -> float | None:
        if p.price is None:
            return None
        if flt.max_price is not None and p.price > flt.max_price:
            return math.log1p((p.price - flt.max_price) / max(flt.max_price, 1.0))
        if flt.min_price is not None and p.price < flt.min_price:
            return math.log1p((flt.min_price - p.price) / max(p.price, 1.0))
        return 0.0

    return cost


def constrained_retrieve(
    retriever: Retriever, text: str, top_k: int, plan: FilterPlan
) -> SearchOutcome:
    """Up to `top_k` products for `text` under `plan` (blocking: call off the event loop).

    Raises:
        StoreError: the vector store failed.
    """
    query = Query(text)  # embedded once, whichever searches below run
    # Re-ordering by price trades similarity for price, which needs scores on one scale:
    # cosine (dense). A hybrid (RRF) score is rank-based, and a headlamp that mentions
    # "tent-mates" scores within 10% of the tents, so "cheap tent" would rank it first.
    if plan.prefer_low_price:
        products = retriever.retrieve(
            query, top_k * CANDIDATE_FACTOR, plan.search_filter, mode="dense"
        )
    else:
        products = retriever.retrieve(query, top_k, plan.search_filter)
    if plan.prefer_low_price:
        products = nudge_by_cost(products, log_price)[:top_k]
    if products or not plan.has_price_bounds:
        return SearchOutcome(products)
    # Nothing inside the bounds: relevant products, the ones closest to the bounds first,
    # never presented as if they fitted (the caller labels them).
    flt = plan.search_filter
    relaxed = SearchFilter(category=flt.category)
    candidates = retriever.retrieve(query, top_k * CANDIDATE_FACTOR, relaxed, mode="dense")
    nearest = nudge_by_cost(candidates, log_outside(flt))[:top_k]
    logger.info("no product within %s for %r; %d nearest matches", flt, text, len(nearest))
    return SearchOutcome(nearest, nearest=bool(nearest))
