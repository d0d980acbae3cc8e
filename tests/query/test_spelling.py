"""Misspellings mended against the catalog's own words (app/query/spelling.py): typos and
run-together words are mended, and nothing the catalog or the encoder knows is touched;
the words are read from a real store and follow its writes and deletes; through HTTP the
shopper sees what was searched.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import httpx
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.core.config import Settings
from app.query import store_view as store_view_module
from app.query.offline import OfflineQueryParser
from app.query.spelling import (
    CatalogWords,
    Speller,
    catalog_word_counts,
    dictionary_words,
)
from app.store import ChunkPoint, VectorStore, open_store
from tests.demo_index import DemoShard, demo_shard_fixture, replica_client  # noqa: F401
from tests.qdrant_cluster import QdrantNode, qdrant_own_server_fixture  # noqa: F401
from tests.synctools import wait_for, watch_failures

NAMES = [
    "Hampton Bay 52 in. Ceiling Fan in Brushed Nickel",
    "Westinghouse 42 in. Ceiling Fan with Light",
    "Hunter 60 in. Indoor Ceiling Fan",
    "Rheem 38 Gal. Tankless Electric Water Heater",
    "EcoSmart Tankless Water Heater 5.5 kW",
    "Stiebel Eltron Tankless Heater",
    "Granite Top Sealer 24 oz.",
    "Marble and Stone Top Sealer",
    "Tile Top Sealer Spray",
    "Shower Head in Chrome",
    "Rain Shower Head",
    "Handheld Shower Kit",
    "Shower Curtain Rod",
    "Snow Thrower 24 in.",
    "Electric Snow Thrower",
    "Cordless Snow Thrower",
    "Desk Lamp with USB",
    "Standing Desk 48 in.",
    "Corner Desk in Oak",
    "Ridgid 18-Volt Drill",  # "ridgid" once in the names: a one-off is no target
    "Refrigerator in White",
    "French Door Refrigerator",
    "Mini Refrigerator",
    "LED Headlamp",
    "Rechargeable Headlamp",
    "Headlamp with Strap",
    "Hex Head Lag Bolt",
    "Lag Bolt 3 in.",
    "Lag Shield",
    "DEWALT 20V Drill",
    "DEWALT Circular Saw",
    "Dewalt Impact Driver",
    "Showerhead in Brushed Nickel",
]
COUNTS = catalog_word_counts(NAMES)
DICTIONARY = frozenset({"could", "show", "lease", "thank"})


@pytest.fixture(scope="module")
def speller() -> Speller:
    return Speller(COUNTS, DICTIONARY)


@pytest.mark.parametrize(
    ("typed", "mended"),
    [
        ("cieling fan", "ceiling fan"),  # two letters swapped
        ("tsnkless water heater", "tankless water heater"),  # one changed
        ("celing fan", "ceiling fan"),  # one dropped
        ("showwer head", "shower head"),  # one added
        ("marble topsealer", "marble top sealer"),  # two words run together
        ("Cieling Fan 52 in.", "ceiling Fan 52 in."),  # only the mended word changes
        ("snow thower", "snow thrower"),  # "shower" is as near, but not with a "t"
        ("refrigirater", "refrigerator"),  # two edits in a long word
        ("headlag bolt", "head lag bolt"),  # run together before two edits ("headlamp")
        ("eshower head", "shower head"),  # a stray first letter
        ("de walt  drill", "dewalt  drill"),  # two words the names write as one
        ("tankles heater", "tankless heater"),  # not a singular of "tankless"
    ],
)
def test_a_typo_is_mended_to_the_catalog_word(speller: Speller, typed: str, mended: str) -> None:
    assert speller.correct(typed) == mended


@pytest.mark.parametrize(
    "typed",
    [
        "ceiling fan",  # catalog words
        "desks",  # a plural of a catalog word: the BM25 stemmer's business
        "could closet organizer",  # words the encoder knows whole: "could" is not "cold"
        "show riser",
        "peb2060smss water heater",  # a model number
        "36in desk",  # digits glued to letters
        "fna tile",  # under four letters
        "ridgib drill",  # its only neighbour is a one-off in one title
        "zzzzzz",  # nothing near
        "celign fan",  # two edits from "ceiling", but too short to guess that far
        "rain shower head",  # "showerhead" is a name word, but "shower head" is commoner
    ],
)
def test_what_the_catalog_or_the_encoder_knows_is_searched_as_typed(
    speller: Speller, typed: str
) -> None:
    assert speller.correct(typed) == typed


@given(st.lists(st.sampled_from(sorted(w for w in COUNTS if " " not in w)), min_size=1, max_size=6))
def test_a_query_of_catalog_words_keeps_its_letters(words: list[str]) -> None:
    # At most two of its words are joined, where the names write them as one.
    text = " ".join(words)
    mended = Speller(COUNTS, DICTIONARY).correct(text)
    assert mended.replace(" ", "") == text.replace(" ", "")
    assert all(COUNTS[w] > 0 for w in mended.split())


def test_an_empty_catalog_mends_nothing() -> None:
    assert Speller({}).correct("cieling fan") == "cieling fan"


def test_the_dictionary_is_the_tokenizers_whole_words() -> None:
    vocab = ["[CLS]", "##ing", "could", "▁lease", "Ġthank", "show", "ab", "x1y2", "café"]
    assert dictionary_words(vocab) == {"could", "lease", "thank", "show"}


def test_the_parser_searches_the_mended_words_and_keeps_the_constraints(
    speller: Speller,
) -> None:
    parsed = OfflineQueryParser().parse("cieling fan under $100", (), speller)
    assert parsed.search_text == "ceiling fan"
    assert parsed.query == "cieling fan under $100"
    assert [(c.field, c.value) for c in parsed.constraints] == [("max_price", 100.0)]


DIM = 8


def chunk(pid: int, name: str, part: int = 0) -> ChunkPoint:
    vector = np.random.default_rng(pid).normal(size=DIM).astype(np.float32)
    payload = {"product_id": pid, "name": name, "text": f"{name} part {part}"}
    return ChunkPoint(str(uuid.uuid5(uuid.NAMESPACE_URL, f"{pid}-{part}")), vector, payload)


@pytest.fixture
def store() -> Iterator[VectorStore]:
    s = open_store(Settings(qdrant_url=None, qdrant_path=":memory:", qdrant_collection="c"))
    yield s
    s.close()


def test_the_words_are_the_stores_product_names_and_follow_its_writes(
    store: VectorStore,
) -> None:
    store.ensure_collection(DIM)
    # Two chunks of one product: its name counts once.
    store.upsert([chunk(1, "Ceiling Fan", 0), chunk(1, "Ceiling Fan", 1)])
    store.upsert([chunk(2, "Ceiling Fan White"), chunk(3, "Ceiling Light")])
    words = CatalogWords(store, refresh_seconds=0.2)
    assert words.warm() is None  # nothing read yet: no caller waits, the read starts
    wait_for("the first read", lambda: words.peek() is not None, 10)
    assert words.get().counts["ceiling"] == 3 and words.get().counts["fan"] == 2
    assert words.get().counts["ceiling fan"] == 2
    assert words.get().correct("cieling fan") == "ceiling fan"
    assert words.get().correct("tsnkless heater") == "tsnkless heater"  # no such products yet
    store.upsert([chunk(10 + i, "Tankless Heater") for i in range(3)])
    wait_for("the new words", lambda: words.get().correct("tsnkless") == "tankless", 10)
    store.delete_products([10, 11])
    wait_for("the deleted words", lambda: words.get().correct("tsnkless") == "tsnkless", 10)


def test_words_read_before_the_first_sync_are_read_again_soon(
    store: VectorStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A fresh service reads before its sync's bootstrap lands (the image's start did): an
    # empty store is no answer, and the next read comes after the retry, not in 10 minutes.
    monkeypatch.setattr(store_view_module, "RETRY_FAILED_READ_SECONDS", 0.2)
    store.ensure_collection(DIM)
    words = CatalogWords(store, refresh_seconds=3600)
    assert words.get().correct("cieling fan") == "cieling fan"
    store.upsert([chunk(i, "Ceiling Fan") for i in range(3)])
    wait_for("the words after the sync", lambda: words.get().correct("cieling") == "ceiling", 10)


def test_no_collection_yet_mends_nothing(store: VectorStore) -> None:
    words = CatalogWords(store, refresh_seconds=3600)
    # No collection yet (a replica before the first sync): no words, and no error.
    assert words.get().correct("cieling fan") == "cieling fan"


@pytest.mark.server
def test_a_refresh_while_the_server_is_killed_keeps_the_last_words_and_reads_again_after(
    qdrant_own_server: QdrantNode,
) -> None:
    store = open_store(Settings(qdrant_url=qdrant_own_server.url, qdrant_collection="c"))
    failed = watch_failures(store, "iter_chunks", iterates=True)
    try:
        store.ensure_collection(DIM)
        store.upsert([chunk(i, "Ceiling Fan") for i in range(3)])
        fresh = CatalogWords(store, refresh_seconds=0.1)
        assert fresh.get().correct("cieling fan") == "ceiling fan"

        qdrant_own_server.kill()  # SIGKILL: each refresh past the interval fails for real
        wait_for("a failed refresh", lambda: fresh.get() is not None and failed, 10)
        assert fresh.get().correct("cieling fan") == "ceiling fan"  # the last words are kept

        qdrant_own_server.start()  # same storage and ports
        store.upsert([chunk(i, "Bathroom Vanity") for i in range(3, 6)])
        wait_for("the words read again", lambda: fresh.get().correct("vanaty") == "vanity", 20)
    finally:
        store.close()


@pytest.fixture(scope="module")
def client(
    demo_shard: DemoShard, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[httpx.Client]:
    with replica_client(demo_shard, tmp_path_factory.mktemp("api-spelling")) as c:
        yield c


def test_through_http_the_shopper_sees_what_was_searched(client: httpx.Client) -> None:
    def searched(query: str) -> str:
        r = client.post("/search", json={"query": query, "top_k": 3})
        assert r.status_code == 200, r.text
        text: str = r.json()["search_text"]
        return text

    # The words are read in the background from the service's start.
    wait_for("the catalog's words", lambda: searched("runing shoes") == "running shoes", 30)
    r = client.post("/search", json={"query": "wireless headphnes under $300", "top_k": 3})
    body = r.json()
    assert body["search_text"] == "wireless headphones"
    assert [f["field"] for f in body["filters_applied"]] == ["max_price"]
    assert "Headphones" in body["products"][0]["name"]
    assert searched("noise cancelling headphones for the gym") == (
        "noise cancelling headphones for the gym"
    )
