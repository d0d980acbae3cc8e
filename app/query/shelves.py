"""The shop's shelves: what words that name no product are shown ("best sellers",
"anything under 50", "a gift"), a few of each category in turn (app/query/search.py
decides when; docs/retrieval.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace

from app.query.ordering import (
    CANDIDATE_FACTOR,
    SearchOutcome,
    by_price,
    log_outside,
    search_query,
)
from app.query.plan import FilterPlan
from app.retrieval import Query, Retriever
from app.retrieval.types import RetrievedProduct
from app.store import SearchFilter


def shop_shelves(
    retriever: Retriever, top_k: int, plan: FilterPlan, asked: Query | None = None
) -> SearchOutcome:
    """Words that name no product ("best sellers", "anything under 50", "a gift"): a few
    of each category (`plan.shelves`), each shelf searched as a category is browsed (by its
    name's meaning, no floor, no cut: every product on it is one of what was asked for),
    then one of each in turn: the most popular first, or the cheapest when the shopper
    asked for cheap. By the words alone, "best sellers" found novels and "under 50" one
    moisturiser. With `asked` (a gift for someone, where nothing was close), each shelf is
    searched by its meaning instead, the nearest shelves first. When nothing in the shop
    fits the price bounds, the nearest outside them the same way, labelled (`nearest`).

    Raises:
        StoreError: the vector store failed.
    """
    flt = plan.search_filter
    order: Order = _most_popular if asked is None else _best_first
    if plan.prefer_low_price:
        order = by_price
    # Each shelf by its name's meaning; the queries keep their vectors for both searches.
    query = asked if asked is not None else [search_query(name) for name in plan.shelves]
    products = _shelves(retriever, top_k, plan.shelves, flt, order, query)
    if products or not plan.has_price_bounds:
        return SearchOutcome(products, shelves=True)
    cost = log_outside(flt)

    def nearest_first(row: list[RetrievedProduct]) -> list[RetrievedProduct]:
        return sorted(row, key=lambda p: _or_inf(cost(p)))

    beyond = replace(flt, outside_price=True)
    nearest = _shelves(retriever, top_k, plan.shelves, beyond, nearest_first, query)
    outside = [replace(p, outside_filters=True) for p in nearest]
    return SearchOutcome(outside, nearest=bool(outside), shelves=True)


Order = Callable[[list[RetrievedProduct]], list[RetrievedProduct]]


def _shelves(
    retriever: Retriever,
    top_k: int,
    shelves: Sequence[str],
    flt: SearchFilter,
    order: Order,
    query: Query | list[Query],
) -> list[RetrievedProduct]:
    """Up to `top_k` products, one of each shelf in turn, each shelf and the shelves (by
    their first products) in `order`, among the shelf's products nearest its name (`query`
    a list: each shelf's name) or nearest one query (by meaning alone, so one shelf's
    scores compare with another's)."""
    depth = top_k * CANDIDATE_FACTOR  # `order` re-orders: more to choose from
    queries = query if isinstance(query, list) else [query] * len(shelves)
    searches = [(q, replace(flt, category=c), depth) for q, c in zip(queries, shelves, strict=True)]
    found = retriever.browse_each(searches)
    rows = [order(row) for row in found if row]
    firsts = [p.id for p in order([row[0] for row in rows])]
    rows.sort(key=lambda row: firsts.index(row[0].id))
    taken: list[RetrievedProduct] = []
    for at in range(max((len(row) for row in rows), default=0)):
        taken += [row[at] for row in rows if at < len(row)]
    return taken[:top_k]


def _best_first(products: list[RetrievedProduct]) -> list[RetrievedProduct]:
    return sorted(products, key=lambda p: -p.score)


def _most_popular(products: list[RetrievedProduct]) -> list[RetrievedProduct]:
    """`products` most popular first (their order breaks ties)."""
    return sorted(products, key=lambda p: -p.popularity)


def _or_inf(value: float | None) -> float:
    return math.inf if value is None else value
