"""The catalog's category vocabulary (app/query/category.py): read with the store's facet,
every answer kept until the next refresh (an empty one too), refreshed in the background,
and equal to Spark's own `SELECT DISTINCT category` after inserts, re-filings and deletes.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from app.core.config import Settings
from app.query import OfflineQueryParser
from app.query import store_view as store_view_module
from app.query.category import CategoryMatcher, CategoryVocabulary, Frequent
from app.query.phrasebook import load_phrasebook
from app.query.plan import MAX_SHELVES, plan_filters
from app.store import ChunkPoint, VectorStore, open_store
from tests.qdrant_cluster import QdrantNode, qdrant_own_server_fixture  # noqa: F401
from tests.synctools import wait_for, watch_failures

DIM = 8


@pytest.fixture
def store() -> Iterator[VectorStore]:
    s = open_store(Settings(qdrant_url=None, qdrant_path=":memory:", qdrant_collection="c"))
    yield s
    s.close()


def count_reads(store: VectorStore, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Wrap the store's facet read: the list grows by the field name at each call."""
    reads: list[str] = []
    real = store.keyword_counts

    def counted(field: str, *, limit: int) -> dict[str, int]:
        reads.append(field)
        return real(field, limit=limit)

    monkeypatch.setattr(store, "keyword_counts", counted)
    return reads


def chunk(pid: int, category: str | None) -> ChunkPoint:
    vector = np.random.default_rng(pid).normal(size=DIM).astype(np.float32)
    payload = {"product_id": pid, "text": f"product {pid}", "category": category}
    return ChunkPoint(str(uuid.uuid5(uuid.NAMESPACE_URL, str(pid))), vector, payload)


def test_an_empty_vocabulary_is_an_answer_kept_until_the_refresh(
    store: VectorStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A catalog without categories: issue 26 read the whole store again on every call.
    store.ensure_collection(DIM)
    store.upsert([chunk(pid, None) for pid in range(20)])
    reads = count_reads(store, monkeypatch)
    vocabulary = CategoryVocabulary(store, refresh_seconds=3600)
    assert vocabulary.peek() is None  # nothing read yet: the caller hops to a thread
    assert vocabulary.get() == frozenset()
    for _ in range(50):
        assert vocabulary.peek() == frozenset()
        assert vocabulary.get() == frozenset()
    assert reads == ["category"]


def test_a_failed_read_is_retried_soon(store: VectorStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_view_module, "RETRY_FAILED_READ_SECONDS", 0.2)
    reads = count_reads(store, monkeypatch)
    vocabulary = CategoryVocabulary(store, refresh_seconds=3600)
    # No collection yet (an API replica before the first sync): a StoreError is no answer,
    # yet no caller waits on the store again for it.
    assert vocabulary.get() == frozenset()
    assert vocabulary.peek() == frozenset()
    assert reads == ["category"]
    store.ensure_collection(DIM)
    store.upsert([chunk(1, "audio"), chunk(2, "kitchen"), chunk(3, None)])
    # Retried RETRY_FAILED_READ_SECONDS later, in the background, and then kept.
    wait_for("the first read", lambda: vocabulary.peek() == frozenset({"audio", "kitchen"}), 10)
    assert reads == ["category"] * 2


def test_a_peek_while_another_thread_stores_a_read_gets_the_last_answer(
    store: VectorStore,
) -> None:
    # A refresh thread holds the lock while it stores its read: a request peeking then had
    # None, and parsed that once without the catalog's categories or words.
    store.ensure_collection(DIM)
    store.upsert([chunk(1, "audio")])
    vocabulary = CategoryVocabulary(store, refresh_seconds=3600)
    assert vocabulary.get() == {"audio"}
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with vocabulary._lock:
            holding.set()
            release.wait(10)

    other = threading.Thread(target=hold)
    other.start()
    try:
        assert holding.wait(10)
        assert vocabulary.peek() == frozenset({"audio"})
        assert vocabulary.warm() == frozenset({"audio"})
    finally:
        release.set()
        other.join(10)


@pytest.mark.server
def test_a_refresh_while_the_server_is_killed_keeps_the_last_list_and_reads_again_after(
    qdrant_own_server: QdrantNode,
) -> None:
    store = open_store(Settings(qdrant_url=qdrant_own_server.url, qdrant_collection="c"))
    failed = watch_failures(store, "keyword_counts")
    try:
        store.ensure_collection(DIM)
        store.upsert([chunk(1, "audio"), chunk(2, "kitchen")])
        often = CategoryVocabulary(store, refresh_seconds=0.2)
        assert often.get() == {"audio", "kitchen"}

        qdrant_own_server.kill()  # SIGKILL: the refreshes now fail for real
        wait_for("a refresh that failed", lambda: often.get() is not None and failed, 10)
        assert often.get() == {"audio", "kitchen"}  # the last good list is kept

        qdrant_own_server.start()  # same storage and ports: the collection is back
        store.upsert([chunk(3, "garden")])
        wait_for("the list read again", lambda: often.get() == {"audio", "kitchen", "garden"}, 20)
    finally:
        store.close()


def test_vocabulary_reads_the_categories_from_the_store(embedder: Any) -> None:
    from app.core.catalog import Product
    from app.eval.index import build_chunk_index, chunker_for
    from app.sync.apply import ChunkApplier

    settings = Settings(qdrant_path=":memory:")
    store = build_chunk_index(
        [
            Product(1, 1, "Swim Buds", "Earbuds for the pool.", "audio", "Acme", 59.0),
            Product(2, 1, "Kettle", "Boils water.", "kitchen", "Acme", 30.0),
            Product(3, 1, "Mystery", "No category.", None, "Acme", 5.0),
        ],
        settings,
        embedder,
    )
    vocabulary = CategoryVocabulary(store, refresh_seconds=1)
    # peek() is what the event loop calls: it never reads the store itself.
    assert vocabulary.peek() is None
    assert vocabulary.get() == {"audio", "kitchen"}
    assert vocabulary.peek() == frozenset({"audio", "kitchen"})
    # A category that arrives later is picked up by a background refresh; callers keep
    # getting the last list meanwhile, without waiting on the store.
    ChunkApplier(store, embedder, chunker_for(settings, embedder)).apply(
        [Product(4, 1, "Hose", "Waters the lawn.", "garden", "Acme", 20.0)], {}
    )
    assert vocabulary.get() == {"audio", "kitchen"}
    wait_for("the refreshed list", lambda: vocabulary.get() == {"audio", "kitchen", "garden"}, 10)
    store.close()


# --- against Spark's view of a live table ----------------------------------------------
def spark_categories(spark: Any, path: str) -> set[str]:
    from tests.hudi_writes import sql_table

    with sql_table(spark, path) as t:
        rows = spark.sql(f"SELECT DISTINCT category FROM {t} WHERE category IS NOT NULL")
        return {r["category"] for r in rows.collect()}


@pytest.mark.spark
@pytest.mark.timeout(600)
def test_vocabulary_is_sparks_distinct_categories_after_inserts_and_deletes(
    spark: Any, embedder: Any, tmp_path: Path
) -> None:
    """Spark writes the table (products 1-9: audio 1-2, kitchen 3-5, garden 6, toys 9,
    none 7-8); the sync mirrors it into both engines; then product 6 is re-filed to kitchen
    (garden empties), 7 gains "audio", 10 arrives in "books", and 1 and 9 are deleted
    (audio stays with 2, toys empties)."""
    from spark_jobs.create_table import create_table
    from spark_jobs.delete_products import delete_ids
    from spark_jobs.upsert_products import upsert_rows
    from tests.synctools import make_harness, product

    path = str(tmp_path / "products")
    create_table(spark, path)
    filed: dict[int, str | None] = {
        1: "audio",
        2: "audio",
        3: "kitchen",
        4: "kitchen",
        5: "kitchen",
        6: "garden",
    }
    filed |= {7: None, 8: None, 9: "toys"}
    rows = [
        product(p, 1, f"Item {p}", f"Item {p} for the category test.", category=c)
        for p, c in filed.items()
    ]
    assert upsert_rows(spark, path, rows).upserted == 9
    harnesses = [
        make_harness(path, embedder),
        make_harness(path, embedder, str(tmp_path / "edge"), sync_lock_dir=str(tmp_path)),
    ]
    vocabularies = [CategoryVocabulary(h.store, refresh_seconds=1) for h in harnesses]
    try:
        for h in harnesses:
            assert h.cycle().mode == "bootstrap"
        first = spark_categories(spark, path)
        assert first == {"audio", "kitchen", "garden", "toys"}
        for h, vocabulary in zip(harnesses, vocabularies, strict=True):
            assert vocabulary.get() == first
            assert set(h.store.keyword_counts("category", limit=100)) == first

        edits = [
            product(6, 2, "Item 6", "Item 6 for the category test.", category="kitchen"),
            product(7, 2, "Item 7", "Item 7 for the category test.", category="audio"),
            product(10, 2, "Item 10", "Item 10 for the category test.", category="books"),
        ]
        assert upsert_rows(spark, path, edits).upserted == 3
        assert delete_ids(spark, path, [1, 9]).deleted == 2
        for h in harnesses:
            h.cycle()
            h.assert_mirror()
        second = spark_categories(spark, path)
        assert second == {"audio", "kitchen", "books"}
        for h in harnesses:
            counts = h.store.keyword_counts("category", limit=100)
            assert set(counts) == second
            # Every chunk of a categorised product is counted once, the others not at all.
            uncategorised = len(h.store.chunks_for_products([8]))
            assert sum(counts.values()) == h.store.count() - uncategorised
        # The long-lived vocabularies catch up in the background.
        wait_for(
            "every process refreshed", lambda: all(v.get() == second for v in vocabularies), 10
        )
    finally:
        for h in harnesses:
            h.store.close()


@pytest.mark.parametrize(
    ("query", "nothing"),
    [
        ("best sellers", True),
        ("anything under $50", True),
        ("cheap stuff", True),
        ("show me everything", True),
        ("a gift under 30", True),
        ("gift ideas for my dad", False),  # a gift for someone: searched first
        ("something for a baby", False),  # whom it is for is searched
        ("4338 81 15", False),  # a model number
        ("running shoes under $100", False),
        ("🎧", False),
    ],
)
def test_words_that_name_no_product(query: str, nothing: bool) -> None:
    parsed = OfflineQueryParser().parse(query)
    said = [c.text for c in parsed.constraints]
    asked = CategoryMatcher(load_phrasebook()).asks_for(parsed.search_text, said)
    assert (asked == "nothing") is nothing


def test_the_vocabulary_knows_which_categories_are_largest(store: VectorStore) -> None:
    store.ensure_collection(DIM)
    sizes = {"audio": 3, "books": 1, "kitchen": 5, "toys": 3}
    pid = iter(range(1, 100))
    store.upsert([chunk(next(pid), name) for name, n in sizes.items() for _ in range(n)])
    found = CategoryVocabulary(store, refresh_seconds=60).get()
    assert found == set(sizes)
    assert isinstance(found, Frequent) and found.most_first == ("kitchen", "audio", "toys", "books")


def test_the_shelves_are_the_largest_categories_at_most() -> None:
    """ "best sellers" searched every category of the shop, up to the 10,000 the vocabulary
    holds: a search each per request."""
    names = [f"category {i:02d}" for i in range(40)]
    largest = Frequent(names[::-1])  # "category 39" has the most products
    plan = plan_filters(OfflineQueryParser().parse("best sellers"), None, categories=largest)
    assert plan.shelves == tuple(sorted(names[::-1][:MAX_SHELVES]))
    few = Frequent(["toys", "audio"])
    assert plan_filters(
        OfflineQueryParser().parse("best sellers"), None, categories=few
    ).shelves == (
        "audio",
        "toys",
    )


@pytest.mark.parametrize(
    ("query", "asked"),
    [
        ("birthday present for my 8 year old son", "a gift"),
        ("a gift for a 10 year old", "a gift"),
        ("presents for 3-year-olds under 40", "a gift"),
        ("a gift for a six month old", "a gift"),
        ("something for a 3-year-old", "a product"),  # searched by whom it is for
        ("a 10 year battery smoke detector", "a product"),
    ],
)
def test_an_age_says_whom_a_gift_is_for(query: str, asked: str) -> None:
    """Read as words of a product, "for my 8 year old son" was searched as such and found
    a stand mixer whose spare parts last "ten years"."""
    parsed = OfflineQueryParser().parse(query)
    said = [c.text for c in parsed.constraints]
    assert CategoryMatcher(load_phrasebook()).asks_for(parsed.search_text, said) == asked


@pytest.mark.parametrize(
    ("query", "category"),
    [
        ("best sellers in audio", "audio"),
        ("anything in kitchen under 30", "kitchen"),
        ("in audio", "audio"),
        ("a speaker in kitchen", None),  # where it goes, not what it is
        ("a rug for the kitchen", None),
    ],
)
def test_in_a_category_is_the_category_when_nothing_else_is_named(
    query: str, category: str | None
) -> None:
    parsed = OfflineQueryParser().parse(query, {"audio", "kitchen", "home"})
    found = parsed.get("category")
    assert (found.value if found else None) == category
