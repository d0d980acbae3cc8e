"""Budgets in the shopper's words, generated: product words + a budget word + an amount in
any currency form, in either order, must give exactly that amount as max_price; numbers that
measure, count or give an age must give no price bound at all.

The one form left out on purpose: a bare number between a bound word and a noun ("under 10
devices") counts that noun; "budget 50 headphones" and "under $50 headphones" are money.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.eval.constraints import heard
from app.query import OfflineQueryParser
from app.query.phrasebook import load_phrasebook

parser = OfflineQueryParser()
BOOK = load_phrasebook()

PRODUCTS = [
    "wireless headphones",
    "yoga mat",
    "running shoes",
    "an electric kettle",
    "a desk lamp",
    "hiking backpack",
    "a gift for my dad",
    "coffee grinder",
    "rain jacket",
    "tank tops",
    "baseball cap",
]
PREFIXES = ["", "I need ", "looking for ", "show me "]
SUFFIXES = ["", " for travel", " please", " for running", " though"]

# "{}" is the amount. Budget words stand on either side, bound words on their own side.
BUDGET_BEFORE = [
    "budget {}",
    "budget: {}",
    "budget of {}",
    "my budget is {}",
    "budget is {}",
    "with a budget of {}",
    "with a budget around {}",
    "a budget of about {}",
    "total budget {}",
    "spend {}",
    "want to spend about {}",
    "I can afford {}",
    "my limit is {}",
    "limit {}",
    "price limit {}",
    "cap of {}",
    "capped at {}",
]
BOUND_BEFORE = [
    "max {}",
    "maximum {}",
    "max of {}",
    "up to {}",
    "at most {}",
    "under {}",
    "below {}",
    "less than {}",
    "cheaper than {}",
    "within {}",
    "no more than {}",
    "not exceeding {}",
    "spend no more than {}",
    "I can spend up to {}",
    "keep it under {}",
    "keep it below {}",
    "not over {}",
    "not above {}",
    "nothing over {}",
    "nothing above {}",
    "nothing more than {}",
    "not higher than {}",
]
AFTER = [
    "{} budget",
    "{} max",
    "{} maximum",
    "{} tops",
    "{} or less",
    "{} or under",
    "{} or below",
    "{} or cheaper",
    "{} at most",
    "{} is my budget",
    "{} is my limit",
    "{} is the max",
    "{} limit",
    "{} max budget",
]
# Currency forms around the number text; "{}" is the number.
SYMBOL_FORMS = ["${}", "US${}", "€{}", "£{}", "₹{}", "rs. {}", "Rs {}", "USD {}", "{}$", "{}€"]
WORD_FORMS = ["{} dollars", "{} bucks", "{} euros", "{} usd", "{} EUR", "{} quid", "{} rupees"]


@dataclass(frozen=True)
class Budget:
    query: str
    value: float
    product: str


def number_text(value: int, separated: bool) -> str:
    return f"{value:,}" if separated else str(value)


@st.composite
def amounts(draw: st.DrawFn) -> tuple[str, float, bool]:
    """(text, value, has a currency)."""
    kind = draw(st.sampled_from(["int", "decimal", "spelled"]))
    if kind == "spelled":
        word, value = draw(st.sampled_from(sorted(BOOK.number_words.items())))
        form = draw(st.sampled_from(["{}", *WORD_FORMS]))
        return form.format(word), float(value), form != "{}"
    if kind == "int":
        whole = draw(st.integers(1, 20_000))
        num = number_text(whole, draw(st.booleans()))
        value = float(whole)
    else:
        cents = draw(st.integers(100, 99_999))
        num, value = f"{cents // 100}.{cents % 100:02d}", cents / 100
    form = draw(st.sampled_from(["{}", "{}", *SYMBOL_FORMS, *WORD_FORMS]))
    return form.format(num), value, form != "{}"


@st.composite
def budgets(draw: st.DrawFn) -> Budget:
    amount, value, has_currency = draw(amounts())
    template = draw(st.sampled_from(BUDGET_BEFORE + BOUND_BEFORE + AFTER))
    phrase = template.format(amount)
    product = draw(st.sampled_from(PRODUCTS))
    prefix, suffix = draw(st.sampled_from(PREFIXES)), draw(st.sampled_from(SUFFIXES))
    if draw(st.booleans()):
        joiner = draw(st.sampled_from([" ", ", ", " — "]))
        body = f"{product}{joiner}{phrase}{suffix}"
    else:
        # A bare number right before a noun counts it ("under 10 devices"), unless the
        # number has a currency, a budget word before it, or its bound word after it.
        plain = has_currency or template not in BOUND_BEFORE
        joiners = [", ", " for ", " on ", *([" "] if plain else [])]
        body = f"{phrase}{draw(st.sampled_from(joiners))}{product}"
    return Budget(prefix + body, value, product)


@settings(max_examples=600, deadline=None)
@given(budgets())
def test_a_budget_word_next_to_an_amount_is_the_upper_bound(budget: Budget) -> None:
    parsed = parser.parse(budget.query)
    got = heard(parsed)
    assert got.get("max_price") == budget.value, (budget.query, got)
    assert "min_price" not in got and "price_preference" not in got, (budget.query, got)
    # Only the budget's words are cut: what the shopper wants stays in the search text.
    assert budget.product in parsed.search_text, (budget.query, parsed.search_text)


UNITS = ["kg", "lbs", "minutes", "hours", "watts", "litres", "inches", "people", "players", "mAh"]
KIDS = ["kid", "kids", "toddler", "boy", "girl", "nephew", "daughter"]
COUNTED = ["devices", "guests", "cups of coffee", "nights", "rooms"]


@st.composite
def not_prices(draw: st.DrawFn) -> str:
    n = draw(st.integers(1, 500))
    product = draw(st.sampled_from(PRODUCTS))
    cue = draw(st.sampled_from(["under", "up to", "max", "at most", "below", "within", "budget"]))
    kind = draw(st.sampled_from(["unit", "unit after", "age", "count", "ordinal"]))
    if kind == "unit":
        return f"{product} {cue} {n} {draw(st.sampled_from(UNITS))}"
    if kind == "unit after":
        after = draw(st.sampled_from(["max", "tops", "or less", "at most", "maximum"]))
        return f"{product} {n} {draw(st.sampled_from(UNITS))} {after}"
    if kind == "age":
        cue = draw(st.sampled_from(["under", "up to", "below", "at most"]))
        return f"{product} for a {draw(st.sampled_from(KIDS))} {cue} {n}"
    if kind == "count":
        cue = draw(st.sampled_from(["under", "up to", "max", "at most", "no more than"]))
        return f"{product} for {cue} {n} {draw(st.sampled_from(COUNTED))}"
    ordinal = f"{n}{draw(st.sampled_from(['st', 'nd', 'rd', 'th']))}"
    return f"{product} {cue} for a {ordinal} birthday"


@settings(max_examples=400, deadline=None)
@given(not_prices())
def test_numbers_that_measure_count_or_give_an_age_are_no_budget(query: str) -> None:
    got = heard(parser.parse(query))
    assert "max_price" not in got and "min_price" not in got, (query, got)


# Issue 34: "budget 3 burner stove" was a $3 budget. A count or a unit named in a product
# ("3 burner", "2 person", "4 slice", "6 quart") is never an amount, after a budget word
# or a bound word, spaced or hyphenated, alone or beside a real budget.
COUNT_WORDS = [
    "burner", "slice", "person", "people", "season", "quart", "cup", "piece", "seater",
    "drawer", "shelf", "tier", "speed", "outlet", "port", "bedroom", "blade", "serving",
    "player", "pack", "gallon", "inch", "foot", "watt", "volt", "litre", "pound", "ply",
    "step", "burners", "slices", "quarts", "drawers", "shelves", "tiers", "outlets", "ports",
    "blades", "servings", "persons",
]  # fmt: skip
COUNTED_PRODUCTS = [
    "stove", "gas stove", "toaster", "tent", "camping tent", "pot", "coffee maker", "set",
    "sofa", "dresser", "bookcase", "cake stand", "blender", "power strip", "usb hub",
    "house", "fan", "board game", "bucket", "ladder", "toilet paper",
]  # fmt: skip
COUNT_CUES = [
    "budget", "budget:", "my budget", "spend", "limit", "price limit", "cap", "max",
    "maximum", "under", "up to", "at most", "below", "less than", "no more than", "within",
    "around", "about", "over", "at least", "from",
]  # fmt: skip


@dataclass(frozen=True)
class Counted:
    query: str
    budget: float | None  # the real budget beside the count, if any


@st.composite
def counted(draw: st.DrawFn) -> Counted:
    n = draw(st.integers(1, 60))
    word = draw(st.sampled_from(COUNT_WORDS))
    joint = draw(st.sampled_from([" ", "-"]))
    product = draw(st.sampled_from(COUNTED_PRODUCTS))
    cue = draw(st.sampled_from(COUNT_CUES))
    body = f"{cue} {n}{joint}{word} {product}"
    prefix, suffix = draw(st.sampled_from(PREFIXES)), draw(st.sampled_from(SUFFIXES))
    if not draw(st.booleans()):
        return Counted(f"{prefix}{body}{suffix}", None)
    whole = draw(st.integers(1, 5000))
    amount = draw(st.sampled_from(SYMBOL_FORMS + WORD_FORMS)).format(whole)
    budget = draw(st.sampled_from(["under {}", "budget {}", "max {}", "{} or less", "{} tops"]))
    joiner = draw(st.sampled_from([" ", ", "]))
    return Counted(f"{prefix}{body}{joiner}{budget.format(amount)}{suffix}", float(whole))


@settings(max_examples=400, deadline=None, derandomize=True)
@given(counted())
def test_a_count_or_unit_after_a_budget_word_is_no_budget(case: Counted) -> None:
    got = heard(parser.parse(case.query))
    assert "min_price" not in got, (case.query, got)
    assert got.get("max_price") == case.budget, (case.query, got)


@pytest.mark.parametrize(
    "query",
    [
        "budget 3 burner stove",
        "under 2 people tent",
        "max 4 slice toaster",
        "budget 2 person tent",
        "spend 4 season tent",
        "budget 6 quart instant pot",
        "max 3-burner stove",
        "up to 12 cup coffee maker",
        "budget 5 drawer dresser",
    ],
)
def test_the_issue_phrasings_are_no_budget(query: str) -> None:
    got = heard(parser.parse(query))
    assert "max_price" not in got and "min_price" not in got, (query, got)


@pytest.mark.parametrize(
    "bound",
    [
        "no less than {}",
        "not less than {}",
        "not under {}",
        "not below {}",
        "no lower than {}",
        "no cheaper than {}",
        "at least {}",
        "over {} though",
    ],
)
@pytest.mark.parametrize("amount", ["30", "$30", "30 dollars"])
def test_a_lower_bound_said_by_negating_an_upper_one_is_the_lower_bound(
    bound: str, amount: str
) -> None:
    """ "kettle no less than 30" was a $30 cap and a search for "kettle no": the upper bound
    word inside it ("less than") was heard, not the whole phrase."""
    parsed = parser.parse(f"a kettle {bound.format(amount)}")
    assert heard(parsed) == {"min_price": 30.0}, (bound, amount, heard(parsed))
    # "though" is searched too (as "please" is), and names no kind of product.
    assert parsed.search_text.removesuffix(" though") == "a kettle", parsed.search_text
