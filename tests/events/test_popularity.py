"""Shoppers' signals in the ranking: a bounded prior, and "best sellers" in the words."""

from __future__ import annotations

import pytest

from app.query.offline import OfflineQueryParser
from app.query.ordering import by_popularity, with_popularity_prior
from app.query.plan import plan_filters
from app.retrieval.popularity import HALF, popularity
from app.retrieval.types import RetrievedProduct


def p(pid: int, score: float, pop: float = 0.0) -> RetrievedProduct:
    return RetrievedProduct(pid, f"p{pid}", None, None, None, score, popularity=pop)


def test_popularity_is_bounded_and_zero_without_signals() -> None:
    assert popularity({}) == 0.0
    assert popularity({"purchases": None, "clicks": 0.0}) == 0.0
    assert popularity({"purchases": HALF}) == pytest.approx(0.5)
    assert 0.99 < popularity({"purchases": 1e6}) < 1.0
    assert popularity({"clicks": 10.0}) < popularity({"purchases": 10.0})


def test_prior_lifts_a_popular_product_only_within_its_weight() -> None:
    ranked = [p(1, 0.80), p(2, 0.79, pop=0.9), p(3, 0.60, pop=0.99)]
    assert [x.id for x in with_popularity_prior(ranked, 0.05)] == [2, 1, 3]
    # 3 is 0.20 below the best: no popularity passes that at weight 0.05.
    assert [x.id for x in with_popularity_prior(ranked, 0.0)] == [1, 2, 3]


def test_without_signals_the_order_is_the_texts() -> None:
    ranked = [p(i, 1.0 - i / 100) for i in range(10)]
    assert with_popularity_prior(ranked, 0.2) == ranked


def test_best_sellers_rank_the_close_matches_by_popularity() -> None:
    ranked = [p(1, 0.80, 0.1), p(2, 0.70, 0.6), p(3, 0.62, 0.9), p(4, 0.40, 1.0)]
    # 4 is further than the competition margin below the best: it keeps its place.
    assert [x.id for x in by_popularity(ranked)] == [3, 2, 1, 4]


@pytest.mark.parametrize(
    ("query", "search_text"),
    [
        ("best sellers in running shoes", "running shoes"),
        ("most popular kettle under $50", "kettle"),
        ("best-selling headphones", "headphones"),
        ("trending yoga mats", "yoga mats"),
        # No ratings in the catalog: "top rated" is what shoppers buy, and "best" in a
        # product's blurb ("best saved for race day") is no match for it.
        ("top rated headphones", "headphones"),
        ("best rated coffee maker", "coffee maker"),
        ("a highly rated tent under 200", "a tent"),
    ],
)
def test_best_sellers_in_words_mean_popularity(query: str, search_text: str) -> None:
    parsed = OfflineQueryParser().parse(query)
    assert parsed.search_text == search_text
    plan = plan_filters(parsed, None)
    assert plan.prefer_popular
    chip = next(f for f in plan.applied if f.field == "popularity_preference")
    assert (chip.label, chip.hard, chip.source) == ("best sellers first", False, "query")


def test_a_plain_query_does_not_sort_by_popularity() -> None:
    assert not plan_filters(OfflineQueryParser().parse("running shoes"), None).prefer_popular
