"""The issue's four queries on the whole demo catalog, through the path the API takes:
understanding → filter plan → retrieval (real model, in-memory Qdrant filled as the sync
fills it)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from app.core.config import Settings
from app.eval.data import DEFAULT_PRODUCTS, load_products
from app.eval.index import build_chunk_index
from app.query import (
    FilterPlan,
    QueryUnderstanding,
    SearchOutcome,
    build_query_understanding,
    constrained_retrieve,
    plan_filters,
)
from app.query.ordering import lexical_text, search_query
from app.retrieval import Retriever
from app.store import SearchFilter

pytestmark = pytest.mark.slow
CATEGORIES = frozenset(p.category for p in load_products(DEFAULT_PRODUCTS) if p.category)


class Pipeline:
    def __init__(self, understanding: QueryUnderstanding, retriever: Retriever) -> None:
        self.understanding = understanding
        self.retriever = retriever

    def __call__(
        self, query: str, top_k: int = 5, explicit: SearchFilter | None = None
    ) -> tuple[FilterPlan, SearchOutcome]:
        parsed = asyncio.run(self.understanding.parse(query))
        plan = plan_filters(parsed, explicit)
        return plan, constrained_retrieve(self.retriever, parsed.search_text, top_k, plan)


@pytest.fixture(scope="module")
def search(embedder: Any) -> Iterator[Pipeline]:
    settings = Settings(qdrant_path=":memory:")
    store = build_chunk_index(load_products(DEFAULT_PRODUCTS), settings, embedder)
    yield Pipeline(build_query_understanding(settings, store), Retriever(embedder, store, settings))
    store.close()


@pytest.mark.parametrize(
    ("query", "low", "high"),
    [
        ("running shoes under $100", 0.0, 100.0),
        ("a gift for a coffee lover under 50 dollars", 0.0, 50.0),
        ("headphones between 50 and 100 dollars", 50.0, 100.0),
    ],
)
def test_the_issues_budget_queries_return_only_products_inside_the_budget(
    search: Pipeline, query: str, low: float, high: float
) -> None:
    _, outcome = search(query)
    assert not outcome.nearest and outcome.products
    prices = [p.price for p in outcome.products]
    assert all(p is not None and low <= p <= high for p in prices), prices
    # The closest ones outside the budget, if offered, are apart and flagged.
    for p in outcome.closest_outside:
        assert p.outside_filters and p.price is not None and not low <= p.price <= high, p
    # Without understanding, the same words break the budget (the issue's table).
    plain = search.retriever.retrieve(query, 5)
    assert any(p.price is not None and not low <= p.price <= high for p in plain)


def test_running_shoes_under_100_shows_the_shoe_that_fits_then_the_closest_shoes_above(
    search: Pipeline,
) -> None:
    # The demo page's complaint: one running shoe fits, and the other slots went to a yoga
    # mat, a headlamp and dog harnesses whose descriptions say "runs".
    _, outcome = search("running shoes under $100")
    assert outcome.products and not outcome.nearest
    assert all("Running Shoes" in p.name for p in outcome.offered), outcome.offered
    assert all(p.price is not None and p.price <= 100 for p in outcome.products)
    above = outcome.closest_outside
    assert above and all(p.outside_filters and p.price and p.price > 100 for p in above)


def test_the_headphones_range_finds_headphones(search: Pipeline) -> None:
    _, outcome = search("headphones between 50 and 100 dollars")
    # Three headphones fit; two more just outside the range fill the five offered.
    assert len(outcome.products) == 3 and len(outcome.offered) == 5
    assert all("Headphones" in p.name for p in outcome.offered)


def test_cheap_tent_ranks_the_cheaper_tent_first_and_excludes_nothing(search: Pipeline) -> None:
    plan, cheap = search("cheap tent for two")
    assert [(f.field, f.hard) for f in plan.applied] == [("price_preference", False)]
    assert plan.search_filter.is_empty
    _, plain = search("tent for two")
    first, plain_first = cheap.products[0], plain.products[0]
    assert "Tent" in first.name and "Tent" in plain_first.name
    assert first.price is not None and plain_first.price is not None
    assert first.price < plain_first.price  # measured: $107.99 vs $329.00
    # Nothing is filtered out: every tent the plain search shows is still shown.
    tents = {p.id for p in plain.products if "Tent" in p.name}
    assert tents <= {p.id for p in cheap.products}


def test_explicit_max_price_overrides_the_parsed_one(search: Pipeline) -> None:
    plan, outcome = search("headphones under $300", explicit=SearchFilter(max_price=60.0))
    assert plan.search_filter.max_price == 60.0
    assert [(f.field, f.source) for f in plan.applied] == [("max_price", "request")]
    # Nothing at most $60 is close to the headphones (only earbuds): the headphones nearest
    # above $60 are offered, flagged; none is presented as fitting the parsed $300 bound.
    assert outcome.offered
    for p in outcome.offered:
        assert p.price is not None and (p.price <= 60.0) != p.outside_filters, p


def test_an_impossible_budget_gives_labelled_nearest_matches(search: Pipeline) -> None:
    _, outcome = search("running shoes under $10")
    assert outcome.nearest
    assert len(outcome.products) == 5
    # Relevant, and really outside the budget: the caller must label them.
    assert all("Shoes" in p.name for p in outcome.products)
    assert all(p.price is not None and p.price > 10.0 for p in outcome.products)


@pytest.mark.parametrize(
    ("query", "kind"),
    [
        # Shown before as the matches: travel pillows whose covers are "machine washable",
        # resistance bands and a blanket (each lifted by a share of the best word match
        # under $100, not of the catalog's).
        ("espresso machine under 100", "Espresso Machine"),
        # The night-sky field guides, a travel pillow and building blocks: five fitted, so
        # the best tent, above $50, never set the bar.
        ("a tent under 50", "Tent"),
    ],
)
def test_a_budget_no_product_of_the_kind_fits_offers_that_kind_outside_it(
    search: Pipeline, query: str, kind: str
) -> None:
    """The best match outside the bounds sets the bar, however many products fit them."""
    plan, outcome = search(query)
    assert outcome.nearest, [p.name for p in outcome.products]
    assert outcome.products and all(kind in p.name for p in outcome.products)
    # Products fit the bound: the bar, not the filter, leaves them out.
    parsed = asyncio.run(search.understanding.parse(query))
    fitting = search.retriever.retrieve(parsed.search_text, 5, plan.search_filter)
    assert fitting and not any(kind in p.name for p in fitting)


def test_a_filter_does_not_lift_what_it_leaves_in(search: Pipeline) -> None:
    """A product's score is the same under any filter that keeps it: a share of the best
    word match in the whole catalog, not of the best the filter left."""
    query = "waterproof hiking backpack"
    cheap = SearchFilter(max_price=80.0)
    under = {p.id: p.score for p in search.retriever.retrieve(query, 5, cheap)}
    anywhere = {p.id: p.score for p in search.retriever.retrieve(query, 100)}
    assert under and all(anywhere[i] == pytest.approx(s) for i, s in under.items())
    # Measured before: a waterproof headlamp, the best word match under $80, scored 0.87
    # against the best backpack's 1.01 (0.66 now).
    assert max(under.values()) < max(anywhere.values()) - 0.2


@pytest.mark.parametrize(("query", "category"), [("books under 15", "books"), ("toys", "toys")])
def test_a_category_asked_for_by_its_name_alone_is_no_far_match(
    search: Pipeline, query: str, category: str
) -> None:
    """With the name left out of the BM25 query too, every score fell to the bare cosine of
    one word, and the answer said nothing in the catalog matched closely."""
    plan, outcome = search(query)
    assert plan.search_filter.category == category
    assert len(outcome.products) == 5 and all(p.category == category for p in outcome.products)
    assert not outcome.no_close_match


def test_browsing_a_category_under_a_budget_shows_every_product_that_fits(
    search: Pipeline,
) -> None:
    """By words, only the toy whose text says "toys" matched: one of the five under $40."""
    _, outcome = search("toys under $40")
    under = {
        p.id
        for p in load_products(DEFAULT_PRODUCTS)
        if p.category == "toys" and (p.price or 0) <= 40
    }
    assert len(under) == 5 and {p.id for p in outcome.products} == under


def test_browsing_ranks_the_category_not_a_brand_that_shares_its_kind_word(
    search: Pipeline,
) -> None:
    """By the words "outdoor gear", Ridgeback Gear's tent, sleeping bag, backpack and
    headlamp were the first four."""
    plan, outcome = search("outdoor gear")
    assert plan.browse and len(outcome.products) == 5
    assert all(p.category == "outdoor" for p in outcome.products)
    assert sum(p.brand == "Ridgeback Gear" for p in outcome.products) <= 2


@pytest.mark.parametrize("query", ["tent for 4 people under 200", "a tent for four people"])
def test_a_tent_named_for_fewer_people_is_no_match(search: Pipeline, query: str) -> None:
    """Every word but the count matches the 2-person tent, and it was shown second; the
    backpacking tent's name states no room, its text says "a two-person backpacking tent"."""
    plan, outcome = search(query)
    assert plan.room is not None
    names = [p.name for p in outcome.offered]
    assert names and all("4-Person" in n for n in names), names


def test_when_nothing_has_the_room_asked_for_the_roomiest_come_first(search: Pipeline) -> None:
    plan, outcome = search("a tent for 8 people")
    assert outcome.no_room == plan.room and plan.room is not None and plan.room.count == 8
    names = [p.name for p in outcome.products]
    assert names and all("4-Person" in n for n in names[:2]), names
    assert all("4-Person" not in n for n in names[2:]), names


@pytest.mark.parametrize("query", ["gift for a runner", "gift ideas for a runner under 300"])
def test_a_gift_is_matched_by_meaning_not_by_blurbs_that_say_gift(
    search: Pipeline, query: str
) -> None:
    """The fountain pens "arrive in a gift box": by that word they came second to fifth."""
    _, outcome = search(query)
    names = [p.name for p in outcome.offered]
    assert names and not any("Fountain Pen" in n for n in names), names
    assert "Running" in names[0], names


def test_the_word_match_leaves_out_why_and_for_whom() -> None:
    assert lexical_text("a gift for a runner").split() == ["a", "for", "a", "runner"]
    assert lexical_text("Gift ideas under 30").split() == ["under", "30"]
    assert lexical_text("a gifted child's presentation") == "a gifted child's presentation"


@pytest.mark.parametrize(
    ("text", "meaning", "words"),
    [
        ("a gift for a 10 year old", "a gift for a child", "a for a child"),
        ("something for a 3-year-old", "something for a child", "something for a child"),
        ("toys for two-year-olds", "toys for baby", "toys for baby"),
        ("a gift for my 40 year old wife", "a gift for my wife", "a for my wife"),
        ("10 year battery smoke detector", None, None),  # no age: as typed
        ("a 12 year old whisky", None, None),  # the whisky's age: a word of its name
        ("a gift for a 30 year old runner", "a gift for a runner", "a for a runner"),  # "for"
        ("a present for a ten-year-old girl", "a present for a child girl", "a for a child girl"),
    ],
)
def test_an_age_is_searched_as_who_is_that_old(
    text: str, meaning: str | None, words: str | None
) -> None:
    query = search_query(text)
    assert " ".join(query.text.split()) == (meaning or text)
    assert " ".join(query.words.split()) == (words or text)


@pytest.mark.parametrize("query", ["something for a 3-year-old", "a gift for a 10 year old"])
def test_an_age_finds_what_is_made_for_that_age_not_its_number(
    search: Pipeline, query: str
) -> None:
    """By its numbers "for a 3-year-old" found the dog bed and cat tree named "Quill 3" and
    "Halo 3" first; "a gift for a 10 year old", two stand mixers, their spare parts
    available "for ten years"."""
    parsed = asyncio.run(search.understanding.parse(query))
    plan = plan_filters(parsed, None, categories=CATEGORIES)  # a gift: the shelves if far
    outcome = constrained_retrieve(search.retriever, parsed.search_text, 5, plan)
    categories = [p.category for p in outcome.products]
    assert categories and "kitchen" not in categories[:3] and "pet" not in categories[:3]
    assert "toys" in categories[:4], categories


@pytest.mark.parametrize("query", ["show me books", "toys for a 5 year old"])
def test_products_of_the_category_named_are_never_called_far(search: Pipeline, query: str) -> None:
    """The close-match bar was set on scores where the category's name counted as a word
    match; with the name out of the BM25 query these were said to match nothing closely."""
    plan, outcome = search(query)
    category = plan.search_filter.category
    assert category and outcome.products and not outcome.no_close_match
    assert all(p.category == category for p in outcome.products)


class CountingEncoder:
    """The real encoder, counting its calls."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: list[list[str]] = []

    def embed(self, texts: list[str]) -> Any:
        self.calls.append(list(texts))
        return self.inner.embed(texts)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@pytest.mark.parametrize("query", ["best sellers", "under $5", "a gift for her"])
def test_the_shelves_embed_in_one_encoder_call(search: Pipeline, query: str) -> None:
    """Each shelf's name was embedded alone, once per search: 14 encoder calls for "best
    sellers" on the demo, 28 for "under $5" (the shelves, then the nearest outside), and a
    gift's words twice (searched, then each shelf searched by them)."""
    encoder = CountingEncoder(search.retriever.embedder)
    retriever = Retriever(encoder, search.retriever.store, Settings(qdrant_path=":memory:"))
    parsed = asyncio.run(search.understanding.parse(query))
    plan = plan_filters(parsed, None, categories=CATEGORIES)
    outcome = constrained_retrieve(retriever, parsed.search_text, 5, plan)
    assert outcome.shelves and outcome.products, outcome
    one_call = list(plan.shelves) if plan.shelves_first else [parsed.search_text]
    assert len(one_call) > 1 or not plan.shelves_first
    assert encoder.calls == [one_call], encoder.calls


@pytest.mark.parametrize("query", ["best sellers", "under $5", "a gift for her"])
def test_the_shelves_are_searched_together(
    search: Pipeline, query: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each shelf was a search of its own: 14 engine calls for "best sellers" on the demo,
    each a round trip on a server. Now one call for every shelf's best chunks and at most
    one to complete the products whose further chunks lay past them, per pass over the
    shelves ("under $5" finds nothing that cheap, then the nearest outside)."""
    store: Any = search.retriever.store
    passes: list[list[int]] = []  # per pass over the shelves, the requests of each call
    engine, browse = store._query_batch, store.search_dense_each
    browsing = False

    def counted(requests: list[Any]) -> Any:
        if browsing:
            passes[-1].append(len(requests))
        return engine(requests)

    def browsed(searches: Any, **kwargs: Any) -> Any:
        nonlocal browsing
        passes.append([])
        browsing = True
        try:
            return browse(searches, **kwargs)
        finally:
            browsing = False

    monkeypatch.setattr(store, "_query_batch", counted)
    monkeypatch.setattr(store, "search_dense_each", browsed)
    parsed = asyncio.run(search.understanding.parse(query))
    plan = plan_filters(parsed, None, categories=CATEGORIES)
    outcome = constrained_retrieve(search.retriever, parsed.search_text, 5, plan)
    assert outcome.shelves and outcome.products, outcome
    assert len(passes) == (2 if outcome.nearest else 1), passes
    for calls in passes:
        assert calls[0] == len(plan.shelves) and len(calls) <= 2, passes


@pytest.mark.parametrize(
    "query", ["only 2 person tents", "2 person tents only", "a tent 2 person only"]
)
def test_a_room_asked_exactly_shows_no_roomier_product(search: Pipeline, query: str) -> None:
    """A tent for two holds more than two only as room to spare: "only 2 person tents" (or
    "just the 2 person ones" after "a tent", as the follow-up words it) showed the two
    4-person tents after the 2-person ones, as "a 2 person tent" does."""
    plan, outcome = search(query)
    names = [p.name for p in outcome.products]
    assert plan.room is not None and plan.room.exact
    assert any("2-Person" in n for n in names) and not any("4-Person" in n for n in names), names
    _, roomier = search("a 2 person tent")
    assert any("4-Person" in p.name for p in roomier.products)  # not asked exactly: they fit


def test_only_shows_the_products_whose_names_say_it(search: Pipeline) -> None:
    """ "over ear headphones only" showed the open-ear swimming headphones fifth: every
    word but "over" matched."""
    _, outcome = search("over ear headphones only")
    names = [p.name for p in outcome.products]
    assert names and all("Over-Ear Headphones" in n for n in names), names
    _, plain = search("over ear headphones")
    assert any("Over-Ear" not in p.name for p in plain.products)  # the words alone
    # No name says "running": nothing is restricted, the page is not emptied.
    _, running = search("headphones for running only")
    assert len(running.products) == len(search("headphones for running")[1].products)


@pytest.mark.parametrize(
    ("query", "plain"),
    [("only cheap kettles", "cheap kettles"), ("a tent 2 person only", "a tent 2 person")],
)
def test_only_and_exactly_are_read_not_searched(search: Pipeline, query: str, plain: str) -> None:
    """Searched, "only" ranked the kettles whose descriptions say it above the cheaper ones
    ($90.49 and $91 before $79 for "only cheap kettles")."""
    assert search_query(query).text == plain
    _, outcome = search(query)
    prices = [p.price for p in outcome.products]
    if "cheap" in query:
        assert prices == sorted(prices), prices  # type: ignore[type-var]
