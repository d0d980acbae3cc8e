"""What a shopper rules out: the words after a negation are a filter, not a search
(app/query/negation.py), read against the catalog's words and brands."""

from __future__ import annotations

import pytest

from app.query import OfflineQueryParser, plan_filters
from app.query.ordering import SearchOutcome
from app.query.spelling import Speller, catalog_word_counts
from app.query.turn import (
    MAX_EXCLUDED_WORDS,
    ConversationState,
    Turn,
    carried_filters,
    next_state,
)
from app.query.types import Constraint, ParsedQuery

PARSER = OfflineQueryParser()
CATEGORIES = frozenset({"audio", "kitchen", "outdoor"})
BRANDS = frozenset({"Keylight Audio", "Marrow & Salt", "Nike"})
# A catalog that sells products named by an absence, three names each (MIN_COUNT).
NAMES = [
    *(f"No-Dig Landscape Edging {n} ft" for n in (20, 40, 60)),
    *(f"Salt-Free Ice Melt {n} lb" for n in (10, 20, 50)),
    "Vanity without Top",
    "Vanity in Espresso without Top",
    "Vanity without Tops or Mirror",
    "Over-Ear Headphones",
    "Backpacking Tent",
    "Corded Drill",
]
SPELLER = Speller(catalog_word_counts(NAMES))


def parse(query: str, speller: Speller | None = SPELLER) -> tuple[str, list[tuple[str, object]]]:
    parsed = PARSER.parse(query, CATEGORIES, speller, BRANDS)
    return parsed.search_text, [(c.field, c.value) for c in parsed.constraints]


@pytest.mark.parametrize(
    ("query", "search", "constraints"),
    [
        # What was ruled out is not searched for (it would attract exactly that).
        (
            "headphones for running, not over-ear",
            "headphones for running",
            [("exclude_words", "over-ear")],
        ),
        ("a tent, not a backpacking one", "a tent", [("exclude_words", "backpacking")]),
        ("a drill without a cord", "a drill", [("exclude_words", "cord")]),
        ("black electric stove no window", "black electric stove", [("exclude_words", "window")]),
        ("4x4 lumber not treated", "4x4 lumber", [("exclude_words", "treated")]),
        ("a kettle, no plastic, for tea", "a kettle, for tea", [("exclude_words", "plastic")]),
        # What led to the negation goes with it ("yoga mat that is" was searched).
        ("yoga mat that is not purple", "yoga mat", [("exclude_words", "purple")]),
        ("a kettle which is not plastic", "a kettle", [("exclude_words", "plastic")]),
        # A brand of the catalog, in its own spelling: the brand goes, the rest is searched.
        ("not Keylight Audio headphones", "headphones", [("exclude_brand", "Keylight Audio")]),
        ("knives, but not Marrow & Salt", "knives", [("exclude_brand", "Marrow & Salt")]),
        (
            "running shoes under $100 not nike",
            "running shoes",
            [("max_price", 100.0), ("exclude_brand", "Nike")],
        ),
        # A category inside a negation is not wanted, so it is no category filter.
        ("a gift, not kitchen stuff", "a gift", [("exclude_words", "kitchen stuff")]),
        # The catalog names products by the absence: they are what is asked for.
        ("no dig edging", "no dig edging", []),
        ("ice melters with no salt", "ice melters with no salt", []),
        ("vanities with no tops", "vanities with no tops", []),
        # Not a negation of a thing: a budget, a number, an abbreviation, a long sentence.
        ("no more than $50 headphones", "headphones", [("max_price", 50.0)]),
        ("no. 30 cutting wheel", "no. 30 cutting wheel", []),
        ("no 2 pencils", "no 2 pencils", []),
        ("a blender that is not too loud", "a blender that is not too loud", []),
        (
            "a tent not one that my kids could ever break easily",
            "a tent not one that my kids could ever break easily",
            [],
        ),
    ],
)
def test_a_negation_rules_its_words_out(
    query: str, search: str, constraints: list[tuple[str, object]]
) -> None:
    assert parse(query) == (search, constraints)


@pytest.mark.parametrize(
    ("query", "search", "constraints"),
    [
        # "over" is a function word, but the names use "over ear": the negation had ruled
        # nothing out and the over-ear headphones stayed on top.
        ("headphones not over ear", "headphones", [("exclude_words", "over ear")]),
        ("headphones, no in ear ones", "headphones", [("exclude_words", "in ear")]),
        # A room: "not the 4 person ones" after tents showed the 4-person tents first.
        ("a tent, not the 4 person ones", "a tent", [("exclude_words", "4 person")]),
        ("tent not 2-person", "tent", [("exclude_words", "2-person")]),
        # A function word the names do not pair with the next, a price, a bare count.
        ("headphones not for kids", "headphones not for kids", []),
        ("headphones not over $100", "headphones", [("max_price", 100.0)]),
        ("no 2 pencils", "no 2 pencils", []),
    ],
)
def test_a_pair_the_names_use_or_a_room_can_be_ruled_out(
    query: str, search: str, constraints: list[tuple[str, object]]
) -> None:
    names = [
        *(f"{b} Over-Ear Headphones" for b in ("Keylight", "Brumm", "Tidewave")),
        *(f"{b} In-Ear Earbuds" for b in ("Keylight", "Brumm", "Tidewave")),
        *(f"{b} {n}-Person Tent" for b in ("Pinecrest", "Cairn") for n in (2, 4)),
    ]
    assert parse(query, Speller(catalog_word_counts(names))) == (search, constraints)


def test_a_bare_no_needs_the_catalogs_words_other_negations_do_not() -> None:
    # Without the names nothing tells "no window" from "no dig edging": a bare "no" waits.
    assert parse("stove no window", speller=None) == ("stove no window", [])
    assert parse("stove without a window", speller=None) == (
        "stove",
        [("exclude_words", "window")],
    )


def test_an_exclusion_is_a_filter_with_the_shoppers_words() -> None:
    plan = plan_filters(
        PARSER.parse("headphones, not over-ear, not Nike", CATEGORIES, SPELLER, BRANDS), None
    )
    assert plan.search_filter.exclude_words == ("over-ear",)
    assert plan.search_filter.exclude_brands == ("Nike",)
    assert [(f.label, f.text) for f in plan.applied] == [
        ("not over-ear", "not over-ear"),
        ("not Nike", "not Nike"),
    ]


def test_exclusions_carry_until_their_words_are_asked_for() -> None:
    unwanted = Constraint("exclude_words", "over-ear", "not over-ear")
    later = ParsedQuery("cheaper", "headphones")
    assert carried_filters((unwanted,), later) == (unwanted,)
    again = ParsedQuery("over-ear ones after all", "headphones over-ear")
    assert carried_filters((unwanted,), again) == ()


def test_a_conversation_keeps_the_newest_exclusions() -> None:
    said = [Constraint("exclude_words", f"word{n}", f"not word{n}") for n in range(6)]
    parsed = ParsedQuery("q", "headphones", tuple(said))
    state = next_state(Turn(parsed), plan_filters(parsed, None), SearchOutcome([]))
    assert isinstance(state, ConversationState)
    assert [c.value for c in state.filters] == [f"word{n}" for n in range(MAX_EXCLUDED_WORDS)]
