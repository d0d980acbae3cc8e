"""Query understanding without a model: prices, categories, search text, merging, re-ordering.

The categories are the demo catalog's, read from its file as the store would give them.
"""

from __future__ import annotations

import pytest

from app.eval.constraints import DEFAULT_CONSTRAINTS, heard, load_constraint_cases
from app.eval.data import DEFAULT_PRODUCTS, load_products
from app.query import OfflineQueryParser, plan_filters
from app.query.ordering import log_outside, log_price, nudge_by_cost
from app.query.spelling import Speller, catalog_word_counts, name_ends
from app.retrieval.types import RetrievedProduct
from app.store import SearchFilter

CATEGORIES = frozenset(p.category for p in load_products(DEFAULT_PRODUCTS) if p.category)
parser = OfflineQueryParser()


def parse(query: str) -> dict[str, str | float]:
    return heard(parser.parse(query, CATEGORIES))


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        # The four queries.
        ("running shoes under $100", {"max_price": 100.0}),
        ("a gift for a coffee lover under 50 dollars", {"max_price": 50.0}),
        ("headphones between 50 and 100 dollars", {"min_price": 50.0, "max_price": 100.0}),
        ("cheap tent for two", {"price_preference": "low"}),
        # Ways people write a budget, in any currency or none.
        ("kettle less than 50 dollars", {"max_price": 50.0}),
        ("kettle 50–100", {"min_price": 50.0, "max_price": 100.0}),
        ("kettle $50-$100", {"min_price": 50.0, "max_price": 100.0}),
        ("kettle from 50 to 100 euros", {"min_price": 50.0, "max_price": 100.0}),
        ("kettle around $30", {"min_price": 24.0, "max_price": 36.0}),
        # A filler after the amount counts nothing.
        ("kettle under 200 then", {"max_price": 200.0}),
        # A thing named between an age word and the bound takes the bound.
        ("kids toys under 30", {"max_price": 30.0, "category": "toys"}),
        ("mugs under 15 each please", {"max_price": 15.0}),
        # A contraction of a function word counts nothing either (the budget was lost).
        ("kettle under 40 that's not plastic", {"max_price": 40.0, "exclude_words": "plastic"}),
        ("kettle about 30", {"min_price": 24.0, "max_price": 36.0}),
        ("yoga mat below €40", {"max_price": 40.0}),
        ("yoga mat no more than £90", {"max_price": 90.0}),
        ("yoga mat up to ₹2,500", {"max_price": 2500.0}),
        ("yoga mat, max 500 rupees", {"max_price": 500.0}),
        ("yoga mat rs. 500 or less", {"max_price": 500.0}),
        ("yoga mat 60 bucks max", {"max_price": 60.0}),
        ("yoga mat at least 40", {"min_price": 40.0}),
        ("yoga mat over $40", {"min_price": 40.0}),
        ("yoga mat $40 and up", {"min_price": 40.0}),
        ("yoga mat under fifty dollars", {"max_price": 50.0}),
        ("yoga mat for $30", {"max_price": 30.0}),
        ("yoga mat over 20 but under 60", {"min_price": 20.0, "max_price": 60.0}),
        ("affordable yoga mat", {"price_preference": "low"}),
        ("yoga mat, good value", {"price_preference": "low"}),
        ("budget-friendly yoga mat under $30", {"price_preference": "low", "max_price": 30.0}),
        # A budget word a few words from its amount, either side (app/query/budget.py).
        ("headphones $50 budget", {"max_price": 50.0}),
        ("budget 50 headphones", {"max_price": 50.0}),
        ("budget is fifty dollars", {"max_price": 50.0}),
        ("my limit is 40 bucks for a kettle", {"max_price": 40.0}),
        ("shoes, 70 is the max", {"max_price": 70.0}),
        ("shoes, 70 dollars maximum", {"max_price": 70.0}),
        ("lamp, price cap 70", {"max_price": 70.0}),
        ("I can afford 40", {"max_price": 40.0}),
        ("a gift for my son, budget 30", {"max_price": 30.0}),
        ("my budget for a tent is $200", {"max_price": 200.0}),
        # "around" with a budget word is the budget's top.
        ("tent with a budget around 200", {"max_price": 200.0}),
        ("yoga mat under about 50", {"max_price": 50.0}),
        # "max" between a count and a price is the price's.
        ("tent for 4 max $200", {"max_price": 200.0}),
        ("budget tent for 2", {"price_preference": "low"}),
        # A price and nothing else is what the shopper can spend ("50 dollars" was a kind
        # the shop lacked); beside other words it says no bound ("famed sliding door $289").
        ("$50", {"max_price": 50.0}),
        ("50 dollars", {"max_price": 50.0}),
        ("£20!", {"max_price": 20.0}),
        ("kettle $50", {}),
        # Either way round ("between 200 and 100" was searched as words).
        ("tents between 200 and 100 dollars", {"min_price": 100.0, "max_price": 200.0}),
    ],
)
def test_budgets_written_in_words(query: str, expected: dict[str, str | float]) -> None:
    assert parse(query) == expected


@pytest.mark.parametrize(
    "query",
    [
        "a 100 mm lens",
        "a present for a 50th birthday",
        "tent for 4 people",
        "a 2-person tent",
        "power bank over 20000 mAh",
        "backpack under 2 kg",
        "headphones with at least 30 hours of battery",
        "a kettle that boils in under 3 minutes",
        "a sleeping bag for nights around freezing",
        "gift for a kid under 10",
        "training for my first 10k",
        "a board game for 2 to 4 players",
        "a gift from 2 kids",
        "a cabin tent for over 2 nights",
        "a $50 gift card",
        "over 20 but under 10 dollars",  # contradictory: nothing rather than a guess
        "router for up to 10 devices",
        "spend 30 minutes outdoors",
        "a $20 cap",
        "backpack, 30 litres max",
    ],
)
def test_look_alikes_are_not_budgets(query: str) -> None:
    assert {k: v for k, v in parse(query).items() if k != "category"} == {}


@pytest.mark.parametrize(
    ("query", "category"),
    [
        ("toys under $40", "toys"),
        ("a toy for my nephew", "toys"),
        ("books for a long flight", "books"),
        ("kitchen gadgets for a new flat", "kitchen"),
        ("outdoor gear for camping", "outdoor"),
        ("pet supplies", "pet"),
        # The name describes another noun, is a place or use, or two categories are named.
        ("office chair with lumbar support", None),
        ("outdoor speaker for parties", None),
        ("robot vacuum that picks up pet hair", None),
        ("headphones for travel", None),
        ("desk for working from home", None),
        ("a lamp, home or office", None),
        ("home office supplies", "office"),
        # Not a category of this catalog.
        ("spaceships under $10", None),
    ],
)
def test_category_only_when_the_words_clearly_name_one(query: str, category: str | None) -> None:
    assert parse(query).get("category") == category


NAMES = [p.name for p in load_products(DEFAULT_PRODUCTS)]
SPELLER = Speller(catalog_word_counts(NAMES), (), name_ends(NAMES))


@pytest.mark.parametrize(
    ("query", "category"),
    [
        # The names use "cat" ("… Cat Tree", filed under pet): it says which toys.
        ("cat toys", None),
        ("dog toys under $20", None),
        ("science fiction books", None),
        # No name uses the word, or it is a quality or a price word: the category stands.
        ("bath toys", "toys"),
        ("wooden toys", "toys"),
        ("cheap toys", "toys"),
        ("toys under $40", "toys"),
        ("pet supplies", "pet"),
    ],
)
def test_a_word_the_names_use_before_a_category_says_which_of_it(
    query: str, category: str | None
) -> None:
    """A filter on toys showed RC cars and board games for "cat toys"."""
    assert heard(parser.parse(query, CATEGORIES, SPELLER)).get("category") == category


@pytest.mark.parametrize(
    ("query", "request_category", "browses"),
    [
        ("toys", None, True),
        ("show me books", None, True),
        ("outdoor gear", None, True),
        ("a toy under $30", None, True),
        ("any toys?", None, True),
        ("garden", "Home & Garden", True),  # a word of a longer name chosen on the page
        # Anything else named is searched for.
        ("toys for a 5 year old", None, False),
        ("outdoor gear for camping", None, False),
        ("headphones", "audio", False),
        # Nothing named, the category chosen on the page: browsed.
        ("show me", "toys", True),
        ("best sellers", "toys", True),
    ],
)
def test_a_query_naming_only_its_category_browses_it(
    query: str, request_category: str | None, browses: bool
) -> None:
    """ "outdoor gear" is the category, not products whose brand says "Gear"."""
    explicit = SearchFilter(category=request_category) if request_category else None
    assert plan_filters(parser.parse(query, CATEGORIES), explicit).browse is browses
    # Without a category (none heard, none chosen) there is nothing to browse.
    assert not plan_filters(parser.parse(query), None).browse


def test_search_text_drops_the_constraint_words_only() -> None:
    assert parser.parse("running shoes under $100", CATEGORIES).search_text == "running shoes"
    assert (
        parser.parse("a gift for a coffee lover under 50 dollars", CATEGORIES).search_text
        == "a gift for a coffee lover"
    )
    assert parser.parse("cheap tent for two", CATEGORIES).search_text == "tent for two"
    assert parser.parse("under $50", CATEGORIES).search_text == "under $50"  # nothing left
    c = parser.parse("headphones between 50 and 100 dollars", CATEGORIES).get("max_price")
    assert c is not None and c.text == "between 50 and 100 dollars"
    # Budget words go with their amount; product nouns that look like them stay.
    assert parser.parse("headphones $50 budget", CATEGORIES).search_text == "headphones"
    assert parser.parse("tank tops under $20", CATEGORIES).search_text == "tank tops"
    assert parser.parse("baseball cap, max budget 20", CATEGORIES).search_text == "baseball cap"
    parsed = parser.parse("my budget for a tent is $200", CATEGORIES)
    assert parsed.search_text == "a tent"
    c = parsed.get("max_price")
    assert c is not None and c.text == "my budget for a tent is $200"


def test_explicit_filters_win_and_removed_chips_stay_removed() -> None:
    parsed = parser.parse("kitchen gadgets between 20 and 100 dollars, cheap", CATEGORIES)
    plan = plan_filters(parsed, SearchFilter(max_price=40.0))
    assert plan.search_filter == SearchFilter(category="kitchen", min_price=20.0, max_price=40.0)
    by_field = {f.field: (f.value, f.source, f.label) for f in plan.applied}
    assert by_field == {
        "max_price": (40.0, "request", "≤ $40"),
        "min_price": (20.0, "query", "≥ $20"),
        "category": ("kitchen", "query", "kitchen"),
        "price_preference": ("low", "query", "lower prices first"),
    }
    assert plan.prefer_low_price
    # A parsed bound that contradicts an explicit one is dropped, not merged.
    plan = plan_filters(parsed, SearchFilter(max_price=10.0))
    assert plan.search_filter == SearchFilter(category="kitchen", max_price=10.0)
    # ignore_parsed: the shopper took those chips off.
    plan = plan_filters(parsed, None, ["max_price", "category", "price_preference"], "€")
    assert plan.search_filter == SearchFilter(min_price=20.0)
    assert [f.label for f in plan.applied] == ["≥ €20"]
    assert not plan.prefer_low_price


def _product(pid: int, score: float, price: float | None) -> RetrievedProduct:
    return RetrievedProduct(pid, f"p{pid}", None, None, price, score)


def test_cheap_reorders_near_ties_and_never_drops_or_lifts_the_unrelated() -> None:
    products = [_product(1, 0.60, 329.0), _product(2, 0.51, 108.0), _product(3, 0.30, 9.0)]
    assert [p.id for p in nudge_by_cost(products, log_price)] == [2, 1, 3]
    unpriced = [_product(1, 0.60, None), _product(2, 0.59, 300.0)]
    assert [p.id for p in nudge_by_cost(unpriced, log_price)] == [1, 2]


def test_nearest_matches_prefer_the_ones_closest_to_the_bound() -> None:
    products = [_product(1, 0.62, 184.0), _product(2, 0.60, 107.0), _product(3, 0.3, 400.0)]
    cost = log_outside(SearchFilter(max_price=100.0))
    assert [p.id for p in nudge_by_cost(products, cost)] == [2, 1, 3]


def test_parse_accuracy_on_the_labelled_set() -> None:
    cases = load_constraint_cases(DEFAULT_CONSTRAINTS)
    assert len(cases) >= 40
    assert sum(1 for c in cases if not c.expect) >= 10  # look-alikes
    misses = [(c.qid, c.query, parse(c.query)) for c in cases if parse(c.query) != c.expect]
    # Measured: 73/74; the miss is "something for the garden under 25" (a place, not
    # read as the garden category on purpose).
    assert len(misses) <= 1, misses


@pytest.mark.parametrize(
    "query",
    [
        "double hung window 30-52",
        "1-1/4 deck screws",
        "whirlpool dryer part 000-123-456",
        "3-5/16 eye bolt",
        "3/8 in. x 2-1/2 in. lag bolt",
        "hinge model 120-340",
    ],
)
def test_numbers_joined_by_a_hyphen_on_a_hardware_catalog_are_no_price(query: str) -> None:
    # Sizes, fractions and part numbers: a wrong price filter would hide the right product.
    assert parse(query) == {}
