"""The kind of product a query asks for, and whether the shop carries it
(app/query/kind.py): judged on the catalog's own words and the products shown."""

from __future__ import annotations

import pytest

from app.query.kind import KindReader, Lacked, product_kind, same_kind_first
from app.query.phrasebook import load_phrasebook
from app.query.spelling import Speller, catalog_word_counts, name_ends
from app.retrieval.types import RetrievedProduct

READER = KindReader(load_phrasebook())
NAMES = [
    "Pinecrest 4-Person Camping Tent",
    "Cairn 2-Person Camping Tent",
    "Alpenglow Rechargeable Headlamp",
    "Ironleaf Gooseneck Electric Kettle",
    "Kitchell Variable-Temperature Electric Kettle",
    "Brumm Wireless Headphones",
    "IronPeak Adjustable Dumbbells",
    "Stainless Steel Water Bottle",
    "Insulated Steel Tumbler",
    "Insulated Steel Flask",
]
# The encoder's whole words stand in for its tokenizer's vocabulary (`dictionary_words`).
DICTIONARY = frozenset(
    {
        "stove",
        "sofa",
        "drone",
        "weights",
        "steal",
        "instructions",
        "compare",
        "help",
        "pick",
        "kids",
    }
)
SPELLER = Speller(catalog_word_counts(NAMES), DICTIONARY)
TENT = RetrievedProduct(1, NAMES[0], "outdoor", "Pinecrest", 380.0, 0.82, ["Pitches fast."])


@pytest.mark.parametrize(
    ("query", "head"),
    [
        ("a camping stove", "stove"),
        ("I need a camping stove for my trip", "stove"),
        ("do you sell camping stoves?", "stoves"),
        ("show me a stove for camping", "stove"),
        ("looking for a good kettle", "kettle"),
        ("I'm in the market for a stove", "stove"),
        ("a kettle, cheap", "kettle"),
        ("lg dryer, anti-bacterial", "dryer"),
        # A quality is not the kind: the word before it is.
        ("vanities glass topped", "glass"),
        ("gas logs partially vented", "logs"),
        ("camping gear", "camping"),
        # A comparison or a measure is not the kind either.
        ("cat tree taller than 150 cm", "tree"),
        ("spend 30 minutes a day on a rowing machine", None),
        ("frigidaire refrigerator 25 cubic feet", None),
        ("a 2 person tent", "tent"),
        # A purpose or a recipient names no kind.
        ("something to cook on while camping", None),
        ("what to get my dad who likes camping", None),
        ("a gift for a hiker", None),
        ("for my dad", None),
        ("waterproof", None),
        ("2000", None),
        # A verb and its object name no kind ('nothing called "take"').
        ("I will take it", None),
        ("a case for it", "case"),
        # "Only" and "just" say how much, not what: 'nothing called "headphones only"'.
        ("over ear headphones only", "headphones"),
        ("circular saw only", "saw"),
        ("just a kettle", "kettle"),
    ],
)
def test_the_head_is_the_kind_asked_for(query: str, head: str | None) -> None:
    assert READER.head(query) == head


def test_a_kind_no_product_is_called_is_named() -> None:
    # Named with the word that says which: "a coffee maker" was 'nothing called "maker"'.
    assert READER.not_carried("a camping stove", SPELLER, [TENT]) == "camping stove"
    assert READER.not_carried("do you sell camping stoves?", SPELLER, [TENT]) == "camping stoves"
    assert READER.not_carried("I need a stove for my trip", SPELLER, [TENT]) == "stove"
    # ... but not with a colour, material or size: a "quiet" one is not all that is lacked.
    assert READER.not_carried("a small stove", SPELLER, [TENT]) == "stove"
    # Split by the tokenizer ("grind" + "##er"), a word all the same.
    speller = Speller(catalog_word_counts(NAMES), DICTIONARY | {"grind"})
    assert READER.not_carried("a coffee grinder", speller, [TENT]) == "coffee grinder"
    # Two words joined, neither whole in the tokenizer: "a quiet dishwasher" was unsaid.
    speller = Speller(catalog_word_counts(NAMES), DICTIONARY | {"dish", "wash"})
    assert READER.not_carried("a quiet dishwasher", speller, [TENT]) == "dishwasher"
    assert READER.not_carried("a quiet dishwahser", speller, [TENT]) is None  # a typo
    # ... but not two words the names use, run together (Home Depot's "flatbraces").
    speller = Speller(catalog_word_counts(NAMES), DICTIONARY | {"water", "bottle"})
    assert READER.not_carried("a steel waterbottle", speller, []) is None


@pytest.mark.parametrize(
    ("query", "why"),
    [
        ("a camping tent", "a name uses it"),
        ("camping tents", "a name uses it, in another form"),
        ("low voltage steal", "one edit from a catalog word: a typo of steel"),
        ("a reffridge", "not a word the encoder knows whole: a typo too far to mend"),
        ("something to cook on", "no kind named"),
        ("compare the kettles", "a verb opens it: the kettles are asked for"),
        ("help me choose a kettle", "the same, after 'help me'"),
        ("compare kettles", "a verb that never names a kind (`not_kind_words`)"),
        ("tents the kids can use", "a kind the shop carries is no verb"),
    ],
)
def test_what_is_carried_or_cannot_be_told_is_not_named(query: str, why: str) -> None:
    assert READER.not_carried(query, SPELLER, [TENT]) is None, why


def test_a_product_shown_that_mentions_the_kind_is_one() -> None:
    cooker = RetrievedProduct(
        2, "Trail Cooker", "outdoor", None, 40.0, 0.6, ["A one-burner stove for the trail."]
    )
    assert READER.not_carried("a camping stove", SPELLER, [TENT]) == "camping stove"
    assert READER.not_carried("a camping stove", SPELLER, [TENT, cooker]) is None
    # Part of another word is no mention: "stove-safe" does not make a pan a stove (the
    # demo's "quiet dishwasher" offered purifiers with "dishwasher-safe" parts, unsaid).
    pan = RetrievedProduct(3, "Trail Pan", "outdoor", None, 20.0, 0.6, ["A stove-safe pan."])
    assert READER.not_carried("a camping stove", SPELLER, [TENT, pan]) == "camping stove"
    # ... but the last word of one is its head: a "camp-stove" is a stove.
    camp = RetrievedProduct(4, "Trail Cooker", "outdoor", None, 40.0, 0.6, ["A camp-stove."])
    assert READER.not_carried("a camping stove", SPELLER, [TENT, camp]) is None


def test_after_a_verb_that_opens_it_the_kind_asked_for_is_judged() -> None:
    # 'nothing called "compare"' was said of "compare the kettles" on the demo.
    assert READER.not_carried("pick a stove for me", SPELLER, [TENT]) == "stove"
    assert READER.not_carried("compare the stoves", SPELLER, [TENT]) == "stoves"


@pytest.mark.parametrize(
    ("query", "lacked"),
    [
        ("a kettle and a stove", Lacked("stove", besides=True)),
        ("a stove and a kettle", Lacked("stove")),
        # A verb is no kind asked for beside it: the tents shown are only the closest.
        ("pick a stove for me", Lacked("stove")),
    ],
)
def test_what_is_lacked_says_whether_a_carried_kind_was_asked_for_too(
    query: str, lacked: Lacked
) -> None:
    assert READER.lacking(query, SPELLER, [TENT]) == lacked


def test_a_thing_the_text_says_a_product_is_used_with_is_no_mention() -> None:
    # The demo's cat trees "save the sofa from claws": "a sofa" offered one as the top pick.
    tree = RetrievedProduct(
        5, "Sisal Cat Tree", "pet", None, 58.0, 0.5, ["Sisal posts save the sofa from claws."]
    )
    assert READER.not_carried("a sofa", SPELLER, [tree]) == "sofa"
    throw = RetrievedProduct(6, "Merino Throw", "home", None, 90.0, 0.5, ["Warm on your sofa."])
    assert READER.not_carried("a sofa", SPELLER, [tree, throw]) == "sofa"
    # A sentence that opens with it speaks of the product itself.
    bed = RetrievedProduct(7, "Daybed", "home", None, 300.0, 0.5, ["The sofa folds flat."])
    assert READER.not_carried("a sofa", SPELLER, [tree, bed]) is None


@pytest.mark.parametrize(
    ("query", "lacked"),
    [
        ("a kettle and a stove", "stove"),
        ("a stove and a kettle", "stove"),
        ("a headlamp or a camping stove", "camping stove"),
        ("a kettle and a tent", None),
        ("tents and headlamps", None),
    ],
)
def test_every_kind_joined_by_and_or_or_is_judged(query: str, lacked: str | None) -> None:
    # The demo's "a kettle and a toaster" showed kettles and said nothing of toasters.
    assert READER.not_carried(query, SPELLER, [TENT]) == lacked


def test_a_sort_of_a_carried_kind_no_product_is_called_is_named() -> None:
    # Kettles are carried; no product says "purple" or "sony".
    kettle = RetrievedProduct(3, NAMES[3], "kitchen", "Ironleaf", 43.0, 0.8, ["Quick."])
    speller = Speller(catalog_word_counts(NAMES), DICTIONARY | {"purple", "sony", "hand"})
    assert READER.not_carried("a purple kettle", speller, [kettle]) == "purple kettle"
    assert READER.not_carried("sony headphones", speller, [kettle]) == "sony headphones"
    assert READER.not_carried("a purple kettle for tea", speller, [kettle]) == "purple kettle"
    # A colour or material further from the kind: every pair of running shoes was offered
    # for "I only want black running shoes", and nothing said no name says black.
    shoes = Speller(catalog_word_counts([*NAMES, "Trail Running Shoes"]), DICTIONARY | {"black"})
    for query in ("I only want black running shoes", "black trail running shoes"):
        assert READER.not_carried(query, shoes, []) == query.removeprefix("I only want ")
    # ... or after it.
    assert READER.not_carried("running shoes in black", shoes, []) == "black running shoes"
    assert READER.not_carried("running shoes in a size 10", shoes, []) is None
    assert READER.not_carried("stainless steel electric kettle", speller, [kettle]) is None


@pytest.mark.parametrize(
    ("query", "why"),
    [
        ("an electric kettle", "a name uses the word before the kind"),
        ("a gooseneck kettle", "a name uses it, though not right before the kind"),
        ("a kettle", "nothing before the kind but an article"),
        ("a washable kettle", "a quality by its ending, which names need not use"),
        ("a purpel kettle", "not a word the encoder knows whole: a typo"),
    ],
)
def test_a_sort_the_catalog_names_or_cannot_tell_is_not_named(query: str, why: str) -> None:
    kettle = RetrievedProduct(3, NAMES[3], "kitchen", "Ironleaf", 43.0, 0.8, ["Quick."])
    speller = Speller(catalog_word_counts(NAMES), DICTIONARY | {"purple", "washable"})
    assert READER.not_carried(query, speller, [kettle]) is None, why


def test_a_sort_a_product_shown_mentions_is_carried() -> None:
    kettle = RetrievedProduct(
        3, NAMES[3], "kitchen", "Ironleaf", 43.0, 0.8, ["Comes in a purple finish."]
    )
    speller = Speller(catalog_word_counts(NAMES), DICTIONARY | {"purple"})
    assert READER.not_carried("a purple kettle", speller, [kettle]) is None


def test_a_category_named_so_is_carried() -> None:
    assert READER.not_carried("a drone", SPELLER, [TENT]) == "drone"
    assert READER.not_carried("a drone", SPELLER, [TENT], ["drones & cameras"]) is None


def test_without_the_catalogs_words_nothing_is_judged() -> None:
    assert READER.not_carried("a camping stove", None, [TENT]) is None
    assert READER.not_carried("a camping stove", Speller({}, DICTIONARY), [TENT]) is None
    # No product shown: the names alone judge ("a kids bike" answered "no matching
    # products", without saying the shop sells no bikes).
    assert READER.not_carried("a camping stove", SPELLER, []) == "camping stove"
    assert READER.not_carried("a camping tent", SPELLER, []) is None


def test_a_products_kind_is_its_names_last_word_when_the_catalog_makes_it_one() -> None:
    names = [*NAMES, "Ridgeback Trekking Tent"]  # three names end with "tent" (MIN_COUNT)
    ends = Speller(catalog_word_counts(names), DICTIONARY, name_ends(names))
    assert product_kind("Pinecrest 4-Person Camping Tent", ends) == "tent"
    assert product_kind("Brumm Wireless Headphones", ends) is None  # one name ends so
    assert product_kind("Pinecrest 4-Person Camping Tent", None) is None


def test_the_same_kind_comes_first_each_group_in_its_order() -> None:
    def p(pid: int, name: str) -> RetrievedProduct:
        return RetrievedProduct(pid, name, None, None, None, 1 - pid / 10)

    nearest = [p(1, "A Headlamp"), p(2, "B Tent"), p(3, "C Sleeping Bag"), p(4, "D Tents")]
    assert [x.id for x in same_kind_first(nearest, "tent")] == [2, 4, 1, 3]
    assert same_kind_first(nearest, None) == nearest
