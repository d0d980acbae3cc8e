"""The relevance cut on the demo's judged queries (data/eval: every product not listed for a
query is grade 0, so both sides of the cut are counted, not guessed).

For each of the 30 queries, the top 10 products by relevance, then the margin cut
(RELEVANCE_MARGIN below the best): how many unrelated products it removes, how many
relevant ones it loses, with the defaults on the embedded engine (the figures:
BENCHMARKS.md, "Ranking quality"); the bounds below leave room for the encoders' difference.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from app.core.config import Settings
from app.eval.data import (
    DEFAULT_PRODUCTS,
    DEFAULT_QRELS,
    DEFAULT_QUERIES,
    load_products,
    load_qrels,
    load_queries,
)
from app.eval.index import build_chunk_index
from app.query.ordering import within_margin
from app.retrieval import Retriever

pytestmark = pytest.mark.slow

TOP = 10


@pytest.fixture(scope="module")
def retriever(embedder: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Retriever]:
    settings = Settings()
    folder = str(tmp_path_factory.mktemp("cut-index"))
    store = build_chunk_index(load_products(DEFAULT_PRODUCTS), settings, embedder, path=folder)
    yield Retriever(embedder, store, settings)
    store.close()


def test_the_margin_cut_removes_most_unrelated_products_and_few_relevant(
    retriever: Retriever,
) -> None:
    qrels = load_qrels(DEFAULT_QRELS)
    removed = kept_unrelated = lost = kept_relevant = lost_good = 0
    for q in load_queries(DEFAULT_QUERIES):
        ranked = retriever.retrieve(q.query, TOP)
        kept = {p.id for p in within_margin(ranked, ranked[0].score, retriever.relevance_margin)}
        grades = qrels.get(q.qid, {})
        for p in ranked:
            grade = grades.get(p.id, 0)
            if grade == 0:
                removed += p.id not in kept
                kept_unrelated += p.id in kept
            else:
                lost += p.id not in kept
                kept_relevant += p.id in kept
                lost_good += grade >= 2 and p.id not in kept
    unrelated, relevant = removed + kept_unrelated, lost + kept_relevant
    print(
        f"\nrelevance cut: {removed} of {unrelated} unrelated removed, "
        f"{lost} of {relevant} relevant lost ({lost_good} of grade 2-3)"
    )
    assert unrelated > 40 and relevant > 200  # the top 10 holds both kinds
    assert removed >= 0.75 * unrelated
    assert lost <= 0.15 * relevant and lost_good <= 0.08 * relevant


def test_a_shared_number_alone_brings_no_product(retriever: Retriever) -> None:
    # The demo sells no stove; many of its names carry a "3" ("Aero 3 Recycled Notebook").
    # Matched by that number alone, a product keeps its cosine and no BM25 share.
    hits = retriever.candidates("3 burner stove", TOP)
    assert hits and all(h.signals is not None and h.signals.bm25 == 0 for h in hits)
    names = [str(h.chunks[0].payload.get("name")) for h in hits]
    assert not any("Notebook" in n or "Sleeping Bag" in n for n in names), names
    # Beside a word it matches, the number still counts: "2-Person" tents lead.
    tents = retriever.candidates("2 person tent", 4)
    assert all("Tent" in str(h.chunks[0].payload.get("name")) for h in tents)
    assert all(h.signals is not None and h.signals.bm25 > 0 for h in tents)
