"""Follow-up rules (app/query/followup.py) on the real offline parser and phrasebook, and
how plan_filters ranks what a conversation carries. No model, no store: milliseconds.

The last turn: "running shoes under $100" showed five shoes at $45..$95 (and one at $120
outside the budget); the catalog's brands are Acme, Brumm Audio and Lune & Leaf.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from app.query import OfflineQueryParser, plan_filters
from app.query.followup import FollowUpError, FollowUpReader
from app.query.followup_effects import cheaper_cap
from app.query.ordering import SearchOutcome
from app.query.plan import rooms
from app.query.spelling import Speller, catalog_word_counts, name_ends
from app.query.turn import ConversationState, ShownProduct, Turn, next_state
from app.query.types import Constraint, FilterField
from app.store import SearchFilter

PARSER = OfflineQueryParser()
KINDS = ("Trail Running Shoes", "Gooseneck Kettle", "Cork Yoga Mat", "Wide Toe Box Sandals")
READER = FollowUpReader(PARSER.book)
BRANDS = frozenset({"Acme", "Brumm Audio", "Lune & Leaf"})
CATEGORIES = frozenset({"sports", "kitchen", "audio"})
LAST = ConversationState(
    search_text="running shoes",
    filters=(Constraint("max_price", 100.0, "under $100"),),
    shown=(
        ShownProduct(11, 45.0),
        ShownProduct(12, 60.0),
        ShownProduct(13, 75.0),
        ShownProduct(14, 89.0),
        ShownProduct(15, 95.0),
        ShownProduct(16, 120.0, outside=True),
    ),
)


def read(query: str, state: ConversationState | None = LAST) -> Turn:
    # As the service reads it: the parser knows the brands too (a negation may name one).
    return READER.read(PARSER.parse(query, CATEGORIES, None, BRANDS), state, BRANDS, CATEGORIES)


def after(last: str, query: str) -> Turn:
    """`query` read after a turn that searched `last` and showed LAST's products."""
    return read(query, ConversationState(search_text=last, shown=LAST.shown))


def applied(turn: Turn) -> list[tuple[str, object, str]]:
    plan = plan_filters(turn.parsed, None, (), "$", turn.carried)
    return [(f.field, f.value, f.source) for f in plan.applied]


def test_without_a_conversation_the_parse_is_the_turn() -> None:
    parsed = PARSER.parse("running shoes under $100", CATEGORIES)
    assert READER.read(parsed, None, BRANDS, CATEGORIES) == Turn(parsed)


@pytest.mark.parametrize("query", ["cheaper", "cheaper ones?", "anything less expensive"])
def test_cheaper_caps_below_the_median_price_shown_within_the_bounds(query: str) -> None:
    turn = read(query)
    assert turn.follow_up and turn.parsed.search_text == "running shoes"
    # Median of 45, 60, 75, 89, 95 (the $120 one was outside the budget): 75; a round price
    # below it, $70, with the cheaper half ($45, $60) in view.
    assert ("price_preference", "low", "query") in applied(turn)
    assert [f for f in applied(turn) if f[0] == "max_price"] == [("max_price", 70.0, "query")]


@pytest.mark.parametrize(
    ("prices", "cap"),
    [
        ([107.99, 144.99], 120.0),  # not $126.48
        ([144.99, 380.99], 260.0),
        ([48.0, 52.0], 48.0),  # a round $45 would hide the cheaper one shown
        ([8.49, 8.99], 8.49),
        ([19.99], 19.0),
    ],
)
def test_the_cheaper_cap_is_a_round_price_that_keeps_the_cheaper_half(
    prices: list[float], cap: float
) -> None:
    assert cheaper_cap(prices) == cap


def test_cheaper_never_raises_the_budget() -> None:
    low = ConversationState(
        "running shoes", (Constraint("max_price", 50.0, "under $50"),), LAST.shown[:5]
    )
    assert [f for f in applied(read("cheaper", low)) if f[0] == "max_price"] == [
        ("max_price", 50.0, "query")
    ]


def test_in_black_adds_the_words_and_keeps_the_budget() -> None:
    turn = read("in black")
    assert turn.follow_up and turn.parsed.search_text == "running shoes in black"
    assert applied(turn) == [("max_price", 100.0, "conversation")]
    # Said twice, added once; a long conversation's text stops growing at its cap.
    again = ConversationState("running shoes in black", LAST.filters, LAST.shown)
    assert read("and in black?", again).parsed.search_text == "running shoes in black"
    long = ConversationState("shoes " * 50, LAST.filters, LAST.shown)
    assert len(read("with laces", long).parsed.search_text) <= 300


def test_a_new_budget_replaces_the_old_one() -> None:
    turn = read("under $60")
    assert turn.parsed.search_text == "running shoes"
    assert applied(turn) == [("max_price", 60.0, "query")]


@pytest.mark.parametrize(
    ("query", "product"),
    [
        ("more like the second one", 12),
        ("similar to #2", 12),
        ("like the first", 11),
        ("something like the 3rd one, but cheaper", 13),
        ("more like the last one", 16),
        # "That one": the first the last answer listed (the cheapest, after "which is the
        # cheapest?"); added, "more like that one" searched "running shoes more like that".
        ("more like that one", 11),
        ("more like this one please", 11),
    ],
)
def test_more_like_a_shown_product_searches_by_it(query: str, product: int) -> None:
    turn = read(query)
    assert turn.like == product and turn.parsed.search_text == "running shoes"


def test_a_product_that_was_not_shown_is_a_clear_error() -> None:
    with pytest.raises(FollowUpError, match="showed 6 products"):
        read("more like the ninth one")


def test_brands_are_excluded_or_wanted_by_the_catalogs_spelling() -> None:
    assert applied(read("not acme")) == [
        ("exclude_brand", "Acme", "query"),
        ("max_price", 100.0, "conversation"),
    ]
    both = applied(read("no Acme or brumm audio"))
    assert [f for f in both if f[0] == "exclude_brand"] == [
        ("exclude_brand", "Acme", "query"),
        ("exclude_brand", "Brumm Audio", "query"),
    ]
    assert ("brand", "Lune & Leaf", "query") in applied(read("only Lune & Leaf"))
    assert ("brand", "Acme", "query") in applied(read("Acme ones"))


def test_a_wanted_brand_lifts_its_exclusion_and_replaces_the_wanted_one() -> None:
    last = ConversationState(
        "running shoes",
        (Constraint("exclude_brand", "Acme", "not Acme"), Constraint("brand", "Brumm Audio", "")),
        LAST.shown,
    )
    assert applied(read("what about Acme", last)) == [("brand", "Acme", "query")]


def test_a_negation_that_names_no_brand_rules_out_its_words_and_is_never_searched_for() -> None:
    turn = read("not Samsung")
    assert turn.follow_up and turn.parsed.search_text == "running shoes"
    assert applied(turn) == [
        ("exclude_words", "Samsung", "query"),
        ("max_price", 100.0, "conversation"),
    ]
    turn = read("without laces please")
    assert turn.follow_up and turn.parsed.search_text == "running shoes"
    assert applied(turn)[0] == ("exclude_words", "laces", "query")


def test_a_category_named_alone_sets_the_category() -> None:
    turn = read("only kitchen ones")
    assert turn.parsed.search_text == "running shoes"
    assert ("category", "kitchen", "query") in applied(turn)


def test_a_new_question_starts_fresh() -> None:
    turn = read("headphones for swimming")
    assert not turn.follow_up and turn.carried == ()
    assert turn.parsed.search_text == "headphones for swimming"


@pytest.mark.parametrize(
    ("query", "search"),
    [
        ("actually I need a yoga mat", "yoga mat"),
        ("Actually, I'm looking for wireless earbuds", "wireless earbuds"),
        ("never mind, a kettle", "kettle"),
        ("I'd rather have headphones for swimming", "headphones for swimming"),
        # Searched as a refinement: 'The shop has nothing called "meant"'.
        ("I meant a kettle", "kettle"),
        ("sorry, I meant a yoga mat", "yoga mat"),
    ],
)
def test_a_new_need_after_a_switch_cue_is_searched_alone_with_nothing_carried(
    query: str, search: str
) -> None:
    """Read as a refinement ("actually" opens one), "actually I need a backpack" after tents
    searched 'tents I need a backpack' and showed a backpacking tent first."""
    turn = read(query)
    assert not turn.follow_up and turn.carried == () and turn.like is None
    assert turn.parsed.search_text == search
    assert applied(turn) == []


# Names of a shop that sells shoes, kettles and yoga mats (three of each: MIN_COUNT).
NAMES = [f"{brand} {kind}" for brand in ("Acme", "Brumm", "Zeno") for kind in KINDS]
SPELLER = Speller(catalog_word_counts(NAMES), (), name_ends(NAMES))


@pytest.mark.parametrize(
    ("query", "search"),
    [
        ("show me kettles instead", "kettles"),
        ("what about a yoga mat", "yoga mat"),
        ("and black kettles then", "black kettles"),
    ],
)
def test_a_kind_of_product_the_last_search_did_not_name_is_a_new_question(
    query: str, search: str
) -> None:
    """Added to the last search text ("running shoes kettles"), the shoes came back among
    the kettles."""
    turn = READER.read(PARSER.parse(query, CATEGORIES), LAST, BRANDS, CATEGORIES, SPELLER)
    assert not turn.follow_up and turn.carried == ()
    assert turn.parsed.search_text == search


@pytest.mark.parametrize(
    "query", ["in black", "with a wide toe box", "what about lighter shoes", "black ones instead"]
)
def test_words_of_the_kind_searched_or_after_a_kept_opener_refine(query: str) -> None:
    turn = READER.read(PARSER.parse(query, CATEGORIES), LAST, BRANDS, CATEGORIES, SPELLER)
    assert turn.follow_up and turn.parsed.search_text.startswith("running shoes")
    assert applied(turn) == [("max_price", 100.0, "conversation")]


@pytest.mark.parametrize(
    ("query", "about", "asked"),
    [
        ("is the second one waterproof?", (12,), "waterproof"),
        ("is that one waterproof?", (11,), "waterproof"),
        ("does the first one have a wide toe box", (11,), "have a wide toe box"),
        ("compare the first two", (11, 12), "running shoes"),
        ("tell me more about the last one", (16,), "running shoes"),
        # The reference alone: "which one?" answered.
        ("the second one?", (12,), "running shoes"),
        ("#3", (13,), "running shoes"),
        ("I will take the second one", (12,), "running shoes"),
    ],
)
def test_a_question_about_shown_products_is_asked_of_them(
    query: str, about: tuple[int, ...], asked: str
) -> None:
    """Searched, "compare the first two" matched nothing and "is the second one waterproof?"
    answered with waterproof e-readers."""
    turn = read(query)
    assert turn.follow_up and (turn.about, turn.asked) == (about, asked)
    assert turn.parsed.search_text == "running shoes" and turn.like is None
    assert applied(turn) == [("max_price", 100.0, "conversation")]  # kept for the next turn


@pytest.mark.parametrize(
    ("query", "asked"),
    [
        ("which one has the widest toe box?", "has the widest toe box"),
        ("do any of them fold?", "fold"),
        ("are they waterproof?", "waterproof"),
        ("do these come in black?", "come in black"),
        # Nothing asked but the price: the search's words ("is" ordered them by its cosine).
        ("which one is cheapest?", "running shoes"),
        ("which of them is the cheapest one", "running shoes"),
    ],
)
def test_a_question_about_everything_shown_is_asked_of_the_matches(query: str, asked: str) -> None:
    """Added to the search text, "which one has the longest battery" stayed in it for every
    later turn."""
    turn = read(query)
    assert turn.follow_up and turn.about_ranked and turn.asked == asked
    assert turn.about == (11, 12, 13, 14, 15)  # not 16, shown as outside the budget
    assert turn.parsed.search_text == "running shoes"


@pytest.mark.parametrize(
    ("query", "asked"),
    [
        ("is it heavy?", "heavy"),
        ("how heavy is it?", "how heavy"),
        ("does it fold?", "fold"),
        ("can it go in the washing machine?", "go in the washing machine"),
        # Chosen: the answer is about it ("take" searched was 'nothing called "take"').
        ("I'll take it", "running shoes"),
    ],
)
def test_a_question_about_it_is_asked_of_the_top_pick(query: str, asked: str) -> None:
    """Searched, "is it heavy?" after tents offered heavy resistance bands."""
    turn = read(query)
    assert turn.follow_up and (turn.about, turn.asked) == ((11,), asked)
    assert turn.parsed.search_text == "running shoes"
    outside_first = replace(LAST, shown=(ShownProduct(16, 120.0, outside=True), *LAST.shown[:2]))
    assert read(query, outside_first).about == (11,)  # the first match, not the first shown


def test_it_in_a_new_question_is_no_reference() -> None:
    turn = read("I need a tent, is it possible under $50?", None)
    assert turn.about == () and not turn.follow_up


@pytest.mark.parametrize(
    ("query", "search", "follow_up"),
    [
        ("no, I want a yoga mat", "yoga mat", False),
        ("no I need a yoga mat", "yoga mat", False),
        ("no, a yoga mat", "yoga mat", False),
        ("no. in black", "running shoes in black", True),
        # A thing the shop does not carry is still the new need ("a kettle coffee grinder").
        ("no, a coffee grinder", "coffee grinder", False),
        ("no, a black one", "running shoes black", True),
    ],
)
def test_no_said_to_the_last_answer_is_no_negation(
    query: str, search: str, follow_up: bool
) -> None:
    """Read as a negation that named no brand, "no, I want a floor lamp" after "desk lamp"
    was ignored and the desk lamps shown again."""
    turn = READER.read(PARSER.parse(query, CATEGORIES), LAST, BRANDS, CATEGORIES, SPELLER)
    assert (turn.parsed.search_text, turn.follow_up) == (search, follow_up)


def test_a_sort_and_one_renames_the_sort_of_a_carried_kind() -> None:
    """ "A hand one?" after "a stand mixer" is "a hand mixer", as "what about a hand mixer?"
    is; a colour is added as before."""
    mixer = ConversationState("a stand mixer", shown=LAST.shown)
    turn = READER.read(PARSER.parse("a hand one?", CATEGORIES), mixer, BRANDS, CATEGORIES, SPELLER)
    assert turn.follow_up and turn.parsed.search_text == "a hand mixer"
    turn = READER.read(PARSER.parse("glass ones", CATEGORIES), mixer, BRANDS, CATEGORIES, SPELLER)
    assert turn.parsed.search_text == "a stand mixer glass"


def test_a_first_time_is_no_reference() -> None:
    turn = read("running shoes for the first time")
    assert turn.about == () and not turn.follow_up


def test_a_question_about_a_product_not_shown_is_an_error() -> None:
    with pytest.raises(FollowUpError, match="showed 6 products"):
        read("is the ninth one waterproof?")


@pytest.mark.parametrize(
    ("query", "search"),
    [
        ("any with a wide toe box?", "running shoes with a wide toe box"),
        ("anything in black", "running shoes in black"),
        ("ones that are light", "running shoes that are light"),
        # A comparison alone ("thicker" after a yoga mat was a new question, and no match).
        ("thicker", "running shoes thicker"),
        ("quieter ones please", "running shoes quieter"),
    ],
)
def test_any_with_refines(query: str, search: str) -> None:
    """A question that opens with "any"/"ones" was a new question: the search became "any
    with a milk frother?" and the budget was gone."""
    turn = read(query)
    assert turn.follow_up and turn.parsed.search_text == search
    assert applied(turn) == [("max_price", 100.0, "conversation")]


def test_a_budget_closed_by_a_filler_is_a_budget() -> None:
    turn = read("under 60 then")
    assert turn.follow_up and turn.parsed.search_text == "running shoes"
    assert applied(turn) == [("max_price", 60.0, "query")]


@pytest.mark.parametrize(
    ("query", "follow_up"),
    [
        ("washable?", True),  # ends like a quality
        ("black", True),  # a colour
        ("machine washable", True),
        ("something bigger", True),  # a comparison, after a filler
        ("trail", True),  # a word of the names that names no kind of product
        ("kettles", False),  # a kind of product: a new question
        ("blender", False),  # not sold here: a new question (and "nothing close")
    ],
)
def test_a_quality_alone_refines(query: str, follow_up: bool) -> None:
    """As a new question, "washable?" after dog beds found travel pillows."""
    turn = READER.read(PARSER.parse(query, CATEGORIES), LAST, BRANDS, CATEGORIES, SPELLER)
    assert turn.follow_up is follow_up
    assert turn.parsed.search_text.startswith("running shoes") is follow_up


def test_a_switch_cue_keeps_a_budget_stated_with_the_new_need() -> None:
    turn = read("actually I need a yoga mat under $40")
    assert turn.parsed.search_text == "yoga mat"
    assert applied(turn) == [("max_price", 40.0, "query")]


@pytest.mark.parametrize("query", ["actually I want black ones", "actually I need it in black"])
def test_a_switch_cue_whose_words_point_back_refines(query: str) -> None:
    turn = read(query)
    assert turn.follow_up and turn.parsed.search_text.startswith("running shoes ")
    assert "black" in turn.parsed.search_text
    assert applied(turn) == [("max_price", 100.0, "conversation")]


def test_the_request_and_this_turn_win_over_what_was_carried() -> None:
    turn = read("in black")
    plan = plan_filters(turn.parsed, SearchFilter(max_price=70.0), (), "$", turn.carried)
    assert [(f.field, f.value, f.source) for f in plan.applied] == [("max_price", 70.0, "request")]
    ignored: tuple[FilterField, ...] = ("max_price",)
    removed = plan_filters(turn.parsed, None, ignored, "$", turn.carried)
    assert removed.applied == () and removed.search_filter.is_empty


def test_the_product_searched_by_stays_until_new_words_come() -> None:
    liked = ConversationState("running shoes", LAST.filters, LAST.shown, like=12)
    assert read("cheaper", liked).like == 12
    assert read("not acme", liked).like == 12
    assert read("in black", liked).like is None
    assert read("more like the first one", liked).like == 11


@pytest.mark.parametrize(
    ("last", "query", "search"),
    [
        (
            "a board game for four players",
            "for two players instead",
            "a board game for two players",
        ),
        ("a board game for four players", "for two instead", "a board game for two players"),
        ("a 4-person tent", "what about a 2-person one", "a 2-person tent"),
        ("a 4-person tent", "how about 2 person ones with a porch", "a 2 person tent with a porch"),
        ("a 2 slice toaster", "4 slice ones", "a 4 slice toaster"),
        # No count of that unit searched before: the words are added, as any refinement.
        ("a board game", "for two players instead", "a board game for two players"),
    ],
)
def test_a_new_count_of_the_unit_searched_replaces_it(last: str, query: str, search: str) -> None:
    """Added, "for two players instead" searched "a board game for four players for two
    players", and the four-player games kept coming first."""
    turn = after(last, query)
    assert turn.follow_up and turn.parsed.search_text == search


@pytest.mark.parametrize(
    ("last", "query", "search"),
    [
        ("headphones", "only wireless ones", "headphones wireless only"),
        ("headphones", "only over-ear ones", "headphones over-ear only"),
        # Restricted already, or its words went to a filter: as before.
        ("headphones wireless only", "cheaper", "headphones wireless only"),
        ("headphones", "wireless ones", "headphones wireless"),
    ],
)
def test_only_in_a_follow_up_restricts_the_later_turns_too(
    last: str, query: str, search: str
) -> None:
    """ "only wireless ones" after "headphones" lost its "only" as a follow-up cue: the
    search text now ends with it, where the names are restricted from (and every later
    turn reads it)."""
    turn = after(last, query)
    assert turn.parsed.search_text == search


@pytest.mark.parametrize(
    ("last", "query", "search"),
    [
        ("a tent", "just the 2 person ones", "a tent 2 person only"),
        ("a 4-person tent", "only 2 person ones", "a 2 person tent only"),
        ("a tent for 4 people", "only for 2 people", "a tent for 2 people only"),
        ("a board game", "just for 2 players", "a board game for 2 players only"),
        # Asked exactly already, or not exactly now: as typed.
        ("a tent only 2 person", "cheaper", "a tent only 2 person"),
        ("a tent", "2 person ones", "a tent 2 person"),
    ],
)
def test_a_room_asked_exactly_is_kept_exact(last: str, query: str, search: str) -> None:
    """ "Just the 2 person ones" after "a tent" lost its "just" as a follow-up cue and showed
    the 4-person tents beside the 2-person ones; the search text now asks it exactly, and
    so does every later turn."""
    turn = after(last, query)
    assert turn.parsed.search_text == search
    room = rooms().asked(search)
    assert room is not None and room.exact == ("only" in search.split())


@pytest.mark.parametrize(
    ("last", "query", "search"),
    [
        ("a stand mixer", "what about a hand mixer?", "a hand mixer"),
        ("an electric kettle", "how about a stovetop kettle", "a stovetop kettle"),
        ("a stand mixer for bread", "what about hand mixers", "a hand mixer for bread"),
        ("a desk lamp", "what about a floor lamp", "a floor lamp"),
        # A colour, material or size qualifies the kind: added, as any refinement.
        ("waterproof jackets", "what about black jackets", "waterproof jackets black jackets"),
        # Nothing named the sort before, or more than the sort and the kind is said.
        ("a tent for two", "what about a family tent", "a tent for two family tent"),
        (
            "a stand mixer",
            "what about a hand mixer with a whisk",
            "a stand mixer hand mixer with a whisk",
        ),
    ],
)
def test_another_sort_of_the_kind_searched_replaces_it(last: str, query: str, search: str) -> None:
    """Added, "what about a hand mixer?" searched "a stand mixer hand mixer", and the stand
    mixers kept coming first."""
    turn = after(last, query)
    assert turn.follow_up and turn.parsed.search_text == search


@pytest.mark.parametrize(
    ("last", "query", "search"),
    [
        (
            "sleeping bag for winter camping",
            "what about summer?",
            "sleeping bag for summer camping",
        ),
        ("a red kettle", "what about black?", "a black kettle"),
        ("a red kettle", "any in black?", "a black kettle"),
        ("a red kettle", "black ones", "a black kettle"),
        ("a red kettle", "any in black with a lid?", "a black kettle with a lid"),
        ("a cork yoga mat", "what about rubber?", "a rubber yoga mat"),
        ("a small dog bed", "how about large", "a large dog bed"),
        ("a compact stand mixer for bread", "a mini one", "a mini stand mixer for bread"),
        # Not an alternative to anything searched: added, as any refinement.
        ("a kettle", "what about black?", "a kettle black"),
        ("a black-red kettle", "what about white?", "a black-red kettle white"),
    ],
)
def test_a_colour_material_season_or_size_replaces_the_one_searched(
    last: str, query: str, search: str
) -> None:
    """Added, "what about summer?" after "sleeping bag for winter camping" searched for
    both, and the winter bags stayed on top; "a red kettle black" named 'nothing called
    "kettle black"'."""
    turn = after(last, query)
    assert turn.follow_up and turn.parsed.search_text == search


@pytest.mark.parametrize(
    ("last", "query", "search"),
    [
        ("a tent for 2 people", "bigger", "a tent for 3 people"),
        # Exactly that many before: at least one more now ("bigger" asked exactly 5, and
        # no tent states 5).
        ("a tent 4 person only", "bigger", "a tent 5 person"),
        ("a tent only 4 person", "bigger", "a tent 5 person"),
        ("a tent for exactly 4 people", "any roomier ones", "a tent for 5 people"),
        ("a four-person tent", "what about a bigger tent?", "a 5-person tent"),
        ("a sofa for 3 seats", "any roomier ones", "a sofa for 4 seats"),
        # No room asked for: "bigger" is a word to search, as any refinement.
        ("a dog bed", "bigger", "a dog bed bigger"),
        ("a tent for 2 people", "bigger and lighter", "a tent for 2 people bigger and lighter"),
    ],
)
def test_more_room_after_a_room_asked_for_is_room_for_one_more(
    last: str, query: str, search: str
) -> None:
    """Added, "bigger" after "a tent for 2 people" searched "a tent for 2 people bigger",
    and the 2-person tent kept the top."""
    turn = after(last, query)
    assert turn.follow_up and turn.parsed.search_text == search


@pytest.mark.parametrize(
    "query",
    [
        "show me more",
        "more",
        "More options?",
        "anything else?",
        "any others?",
        "what else do you have",
        "ok, more please",
        "next",
    ],
)
def test_more_is_the_same_search_past_the_products_shown(query: str) -> None:
    """As a new question, "any others?" searched "others"; as a refinement, "more options"
    searched "running shoes more" and showed the same products again."""
    turn = read(query)
    assert turn.follow_up and turn.parsed.search_text == "running shoes"
    assert turn.excluded == (11, 12, 13, 14, 15, 16)
    assert applied(turn) == [("max_price", 100.0, "conversation")]


def test_a_run_of_more_keeps_out_every_page_shown_and_other_turns_start_afresh() -> None:
    state = ConversationState("running shoes", LAST.filters, LAST.shown, seen=(1, 2, 3))
    assert read("more", state).excluded == (1, 2, 3, 11, 12, 13, 14, 15, 16)
    assert read("cheaper", state).excluded == ()
    # "More" with words is a refinement or a search by a shown product, not the next page.
    assert read("more like the second one").like == 12
    assert read("more like the second one").excluded == ()
    assert read("more options under 80").excluded == ()


@pytest.mark.parametrize(
    "query",
    [
        "what about the first aid kit?",
        "tell me about the top loader ones",
        "is the second hand one ok",
    ],
)
def test_an_ordinal_that_starts_a_products_name_is_no_reference(query: str) -> None:
    """ "What about the first aid kit?" was a question about the first product shown."""
    turn = read(query)
    assert turn.about == () and turn.like is None


def test_an_ordinal_pair_the_catalogs_names_use_is_no_reference() -> None:
    names = [f"Northwind First Response Kit {n}" for n in range(3)]
    speller = Speller(catalog_word_counts(names))
    parsed = PARSER.parse("is the first response kit waterproof?", CATEGORIES, speller, BRANDS)
    assert READER.read(parsed, LAST, BRANDS, CATEGORIES, speller).about == ()
    # Without a name that uses it, the same words point at the first product shown.
    assert READER.read(parsed, LAST, BRANDS, CATEGORIES).about == (11,)


# The catalog's words with the encoder's whole words: "stove" and "canvas" are words.
WORDY = Speller(
    catalog_word_counts(NAMES),
    frozenset({"stove", "canvas", "even", "little", "still"}),
    name_ends(NAMES),
)


@pytest.mark.parametrize(
    ("query", "search"),
    [("got any stoves?", "stoves"), ("what about a stove", "stove")],
)
def test_a_kind_the_shop_lacks_is_a_new_question(query: str, search: str) -> None:
    """Added, "got any stoves?" searched "running shoes stoves" and answered with shoes."""
    turn = READER.read(PARSER.parse(query, CATEGORIES), LAST, BRANDS, CATEGORIES, WORDY)
    assert not turn.follow_up and turn.carried == ()
    assert turn.parsed.search_text.endswith(search)


@pytest.mark.parametrize(
    ("query", "follow_up", "search"),
    [
        (
            "ok, what do you have for cooking on a trip then?",
            False,
            "what do you have for cooking on a trip",
        ),
        ("what about something to boil water", False, "to boil water"),
        # Constraints, a kept opener or a shown product keep the conversation.
        ("under $50", True, "a camping stove"),
        ("in black", True, "a camping stove in black"),
        # So do words that point back at it: searched alone, "burr" found running shoes
        # (after "coffee grinder"); "a gas one" is a sort of it, put before it.
        ("do you have a gas one?", True, "a camping gas stove"),
        ("any blue ones?", True, "a camping stove blue"),
    ],
)
def test_words_after_a_kind_the_shop_lacks_ask_again(
    query: str, follow_up: bool, search: str
) -> None:
    """Added to "a camping stove", "ok, what do you have for smoothies then?" after "a
    blender" searched "a blender what do you have for smoothies": nothing called blender,
    again, and a hair dryer as the closest."""
    stove = ConversationState("a camping stove", shown=LAST.shown)
    turn = READER.read(PARSER.parse(query, CATEGORIES), stove, BRANDS, CATEGORIES, WORDY)
    assert turn.follow_up is follow_up and turn.parsed.search_text == search


@pytest.mark.parametrize("query", ["any in canvas", "in black", "what about waterproof ones"])
def test_a_quality_the_names_lack_still_refines(query: str) -> None:
    turn = READER.read(PARSER.parse(query, CATEGORIES), LAST, BRANDS, CATEGORIES, WORDY)
    assert turn.follow_up and turn.parsed.search_text.startswith("running shoes")


@pytest.mark.parametrize("query", ["even cheaper", "a little cheaper", "still cheaper please"])
def test_a_word_before_a_cue_modifies_it(query: str) -> None:
    """With the catalog's words read, "even" (a word no name uses) after "cheaper" was
    read as a kind the shop lacks: searched alone, the budget was lost."""
    turn = READER.read(PARSER.parse(query, CATEGORIES), LAST, BRANDS, CATEGORIES, WORDY)
    assert turn.follow_up and turn.parsed.search_text == "running shoes"
    assert [f for f in applied(turn) if f[0] == "max_price"] == [("max_price", 70.0, "query")]


@pytest.mark.parametrize(
    ("query", "bounds", "outer"),
    [
        ("cheaper", (None, 70.0), (None, 100.0)),
        ("under $60", (None, 60.0), (None, 100.0)),
        # A higher budget replaces the lower one: nothing holds it back.
        ("under $150", (None, 150.0), (None, None)),
        # A bound on the other side makes a range with the one before ...
        ("over $50", (50.0, 100.0), (None, None)),
        ("but over 50 though", (50.0, 100.0), (None, None)),
        ("no less than $50", (50.0, 100.0), (None, None)),
        # ... unless the two cannot both hold: a new budget.
        ("over $150", (150.0, None), (None, None)),
    ],
)
def test_a_new_budget_and_the_one_before(
    query: str, bounds: tuple[float | None, float | None], outer: tuple[float | None, float | None]
) -> None:
    """After "under $100": a lower cap replaces it, and what is offered outside the new cap
    stays within the old one; a floor below it makes a range with it ("over 30" after "a
    kettle under 50" searched kettles from $30 to anything); a floor above it replaces it."""
    turn = read(query)
    flt = plan_filters(turn.parsed, None, (), "$", turn.carried).search_filter
    assert (flt.min_price, flt.max_price) == bounds
    assert (flt.outer_min_price, flt.outer_max_price) == outer
    kept = ("max_price", 100.0, "conversation") in applied(turn)
    assert kept == (flt.max_price == 100.0), applied(turn)


def test_the_budget_a_narrower_one_replaced_holds_while_the_narrower_one_does() -> None:
    """After "cheaper" the $200 budget still bounded what was offered outside the new cap,
    but only for that turn: "in green" next offered a $380.99 tent as a nearest match."""
    state = LAST
    turns: list[tuple[str, tuple[float | None, float | None], float | None]]
    turns = [("cheaper", (None, 70.0), 100.0), ("in black", (None, 70.0), 100.0)]
    turns += [("under $50", (None, 50.0), 70.0), ("in blue", (None, 50.0), 70.0)]
    turns += [("under $150", (None, 150.0), None)]  # a new, higher budget: nothing held back
    for query, bounds, outer in turns:
        turn = read(query, state)
        plan = plan_filters(turn.parsed, None, (), "$", turn.carried)
        flt = plan.search_filter
        assert ((flt.min_price, flt.max_price), flt.outer_max_price) == (bounds, outer), query
        state = next_state(turn, plan, SearchOutcome([]), state)
