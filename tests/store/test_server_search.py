"""A search on a Qdrant server: one round trip, and the edge engine's answers exactly.

Data: 200 products with 1-3 chunks each (`chunk_count` on every chunk), 16-d vectors from
a fixed seed. 24 products say "waterproof" in one chunk only, whatever their number of
chunks, each text a different length (no two BM25 scores tie); 6 one-chunk products say
"swimming". A hybrid query (relevance fusion) aimed at random directions finds most of
the BM25 products outside the dense branch's window: those are scored by the chunk that
matched the word, and their other chunks, outside the window too, never score above the
window's last chunk.

The server is asked over REST and over gRPC (QDRANT_TRANSPORT), and counts the search
requests it answers (its `/metrics`): every hybrid query is one request. The answers are
checked against numpy (the fused score of every product) and against the embedded engine,
product by product and chunk by chunk.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import numpy as np
import pytest

from app.core.config import Settings
from app.query.plan import FilterPlan
from app.query.search import constrained_retrieve
from app.retrieval import Retriever
from app.store import ChunkPoint, ProductHit, SearchFilter, VectorStore, open_store
from app.store.hybrid import DEFAULT_LEXICAL_WEIGHT, FusionSpec, query_sparse, relevance_depth
from tests.qdrant_server import grpc_port, qdrant_server_fixture  # noqa: F401

pytestmark = pytest.mark.server

DIM = 16
CATEGORIES = ["audio", "shoes", "kitchen"]
CHUNKS_PER_PRODUCT = 2


def _points() -> list[ChunkPoint]:
    rng = np.random.default_rng(5)
    points = []
    for pid in range(200):
        count = 1 + pid % 3
        words = {}
        if pid % 8 == 1:  # 25 products: 1, 9, 17, ... (24 below 200), one chunk of each
            words[pid % count] = " waterproof" + " shell" * (pid // 8)
        if pid % 3 == 0 and pid % 8 != 1 and pid < 36:  # one-chunk products
            words[0] = " swimming" + " pool" * (pid // 3)
        for index in range(count):
            text = f"Item {pid}\nmodel {pid} part {index}{words.get(index, '')}"
            payload: dict[str, Any] = {
                "product_id": pid,
                "chunk_hash": f"h{pid}-{index}",
                "chunk_index": index,
                "chunk_count": count,
                "text": text,
                "name": f"Item {pid}",
                "category": CATEGORIES[pid % 3],
                "brand": None,
                "price": float(10 + pid % 40),
            }
            point_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"server-search/{pid}/{index}"))
            points.append(ChunkPoint(point_id, rng.normal(size=DIM).astype(np.float32), payload))
    return points


POINTS = _points()


@pytest.fixture(scope="module", params=["rest", "grpc"])
def stores(
    qdrant_server: str, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[tuple[VectorStore, VectorStore]]:
    """(server over each QDRANT_TRANSPORT, edge), holding the same points."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    server = open_store(
        Settings(
            qdrant_url=qdrant_server,
            qdrant_collection=name,
            qdrant_transport=request.param,
            qdrant_grpc_port=grpc_port(qdrant_server),
        )
    )
    edge_path = tmp_path_factory.mktemp("edge") / "shard"
    edge = open_store(Settings(qdrant_url=None, qdrant_path=str(edge_path)))
    for s in (server, edge):
        s.ensure_collection(DIM)
        s.upsert(POINTS)
    yield server, edge
    server.close()
    edge.close()


def _search_requests(url: str) -> int:
    """Search requests the server has answered so far, over either transport."""
    text = httpx.get(f"{url}/metrics", timeout=5).text
    total = 0
    for line in text.splitlines():
        if line.startswith(("rest_responses_total", "grpc_responses_total")) and re.search(
            r'endpoint="[^"]*(points/query|Points/Query)', line
        ):
            total += int(float(line.rsplit(" ", 1)[1]))
    return total


def _allowed(payload: dict[str, Any], flt: SearchFilter | None) -> bool:
    if flt is None:
        return True
    return bool(payload["category"] == flt.category and payload["price"] <= (flt.max_price or 0))


def _expected(
    edge: VectorStore, query: np.ndarray, words: str, flt: SearchFilter | None, limit: int
) -> tuple[list[tuple[int, list[str], float]], float]:
    """The page numpy computes, and the dense window's last cosine.

    A product with a chunk in the dense branch's window (its first `relevance_depth`
    chunks by cosine) scores its best chunk's cosine; a product only BM25 found scores
    its best chunk among those with the word. Each adds the lexical weight times its BM25
    share (BM25 as the engine scores it: a BM25-only search) of the best BM25 of the whole
    store, whatever the filter."""
    vectors = np.stack([np.asarray(p.vector) for p in POINTS])
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    cosine = unit @ (query / np.linalg.norm(query))
    allowed = [
        (float(c), p) for p, c in zip(POINTS, cosine, strict=True) if _allowed(p.payload, flt)
    ]
    allowed.sort(key=lambda cp: -cp[0])
    window = allowed[: relevance_depth(limit, CHUNKS_PER_PRODUCT)]
    in_window = {p.payload["product_id"] for _, p in window}
    lexical = edge.search_products(
        None, limit=200, chunks_per_product=1, sparse=query_sparse(words)
    )
    bm25 = {h.product_id: h.score for h in lexical}
    best = max(bm25.values())
    chunks: dict[int, list[tuple[float, str]]] = {}
    for c, p in allowed:
        pid = p.payload["product_id"]
        if pid in in_window or (pid in bm25 and words in p.payload["text"]):
            chunks.setdefault(pid, []).append((c, p.id))
    fused = []
    for pid, found in chunks.items():
        score = found[0][0] + DEFAULT_LEXICAL_WEIGHT * bm25.get(pid, 0.0) / best
        fused.append((pid, [i for _, i in found[:CHUNKS_PER_PRODUCT]], score))
    fused.sort(key=lambda f: -f[2])
    return fused[:limit], window[-1][0]


def _answer(hits: list[ProductHit]) -> list[tuple[int, list[str], float]]:
    return [(h.product_id, [c.id for c in h.chunks], h.score) for h in hits]


def _search(
    store: VectorStore, query: np.ndarray, words: str, flt: SearchFilter | None, limit: int
) -> list[ProductHit]:
    return store.search_products(
        query,
        limit=limit,
        chunks_per_product=CHUNKS_PER_PRODUCT,
        flt=flt,
        sparse=query_sparse(words),
    )


@pytest.mark.parametrize("flt", [None, SearchFilter(category="shoes", max_price=40.0)])
def test_a_hybrid_search_matches_numpy_and_the_engines_agree(
    stores: tuple[VectorStore, VectorStore], flt: SearchFilter | None
) -> None:
    server, edge = stores
    rng = np.random.default_rng(9)
    vectors = {p.id: np.asarray(p.vector) / np.linalg.norm(p.vector) for p in POINTS}
    by_product: dict[int, list[str]] = {}
    for p in POINTS:
        by_product.setdefault(p.payload["product_id"], []).append(p.id)
    scored_by_their_word = 0
    for _ in range(6):
        query = rng.normal(size=DIM).astype(np.float32)
        unit = query / np.linalg.norm(query)
        for limit in (5, 12):
            expected, window_last = _expected(edge, query, "waterproof", flt, limit)
            on_edge = _answer(_search(edge, query, "waterproof", flt, limit))
            got = _answer(_search(server, query, "waterproof", flt, limit))
            # Product by product and chunk by chunk as the embedded engine answers.
            assert [g[:2] for g in got] == [e[:2] for e in on_edge]
            # Each product's score and best chunk as numpy has them. (A product the dense
            # branch found shows the chunks of its own window: its further ones may be missing.)
            for answer in (got, on_edge):
                assert [(g[0], g[1][0]) for g in answer] == [(e[0], e[1][0]) for e in expected]
                assert [g[2] for g in answer] == pytest.approx([e[2] for e in expected], abs=1e-5)
            for pid, chunk_ids, _ in got:
                unmatched = [c for c in by_product[pid] if c not in chunk_ids]
                if pid % 8 == 1 and unmatched and len(chunk_ids) == 1:
                    # Scored by its word's chunk: the others lie below the window's last.
                    scored_by_their_word += 1
                    assert max(float(vectors[c] @ unit) for c in unmatched) <= window_last + 1e-6
    # The path under test ran: multi-chunk products only BM25 found made the page.
    assert scored_by_their_word > 0


def test_a_hybrid_search_is_one_request(
    stores: tuple[VectorStore, VectorStore], qdrant_server: str
) -> None:
    server, edge = stores
    rng = np.random.default_rng(3)
    for _ in range(5):
        query = rng.normal(size=DIM).astype(np.float32)
        # One-chunk BM25 products, and BM25 products with chunks without the word.
        for words in ("swimming", "waterproof"):
            before = _search_requests(qdrant_server)
            got = _search(server, query, words, None, 5)
            assert _search_requests(qdrant_server) - before == 1
            assert got and [h.product_id for h in got] == [
                h.product_id for h in _search(edge, query, words, None, 5)
            ]


def test_feedback_reads_the_vectors_back_and_answers_as_the_edge_does(
    stores: tuple[VectorStore, VectorStore],
) -> None:
    """Pseudo-relevance feedback moves the query by the vectors the first batch returns:
    the server's answer (REST's JSON or gRPC's messages) carries them as the edge's does."""
    server, edge = stores
    spec = FusionSpec(feedback_weight=0.5, feedback_products=5)
    rng = np.random.default_rng(5)
    for _ in range(4):
        query = rng.normal(size=DIM).astype(np.float32)
        got, on_edge = (
            _answer(
                s.search_products(
                    query,
                    limit=8,
                    chunks_per_product=CHUNKS_PER_PRODUCT,
                    sparse=query_sparse("waterproof"),
                    fusion=spec,
                )
            )
            for s in (server, edge)
        )
        assert got and [g[:2] for g in got] == [e[:2] for e in on_edge]
        assert [g[2] for g in got] == pytest.approx([e[2] for e in on_edge], abs=1e-5)
        plain = _answer(_search(server, query, "waterproof", None, 8))
        assert [g[2] for g in got] != pytest.approx([p[2] for p in plain], abs=1e-6)


def test_search_hits_carry_only_the_fields_an_answer_reads(
    stores: tuple[VectorStore, VectorStore],
) -> None:
    server, _ = stores
    query = np.ones(DIM, dtype=np.float32)
    for hit in _search(server, query, "waterproof", None, 5):
        for chunk in hit.chunks:
            assert "chunk_hash" not in chunk.payload and "chunk_index" not in chunk.payload
            assert chunk.payload["text"].startswith(f"Item {hit.product_id}\n")
            assert chunk.payload["product_id"] == hit.product_id


class _Fixed:
    """The query encoder of a Retriever over these 16-d points: the query's vector is set."""

    def __init__(self, vector: np.ndarray) -> None:
        self.vector = vector

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.stack([self.vector] * len(texts))


def test_a_price_bound_asks_for_the_products_outside_it_in_the_same_request(
    stores: tuple[VectorStore, VectorStore], qdrant_server: str
) -> None:
    # Prices run 10..49 (pid % 40): 5 products cost at most $10, fewer than the 8 asked
    # for, so the closest products outside the bound complete the page; at most $40 the
    # page fills. Either way the products outside the bound are asked for (their best sets
    # the relevance bar), in the first search's batch.
    server, edge = stores
    settings = Settings(similarity_threshold=-1.0, relevance_margin=2.0)
    rng = np.random.default_rng(4)
    short_pages = 0
    for max_price in (10.0, 40.0) * 3:
        plan = FilterPlan(SearchFilter(max_price=max_price), (), prefer_low_price=False)
        encoder = _Fixed(rng.normal(size=DIM).astype(np.float32))
        on_edge = constrained_retrieve(Retriever(encoder, edge, settings), "waterproof", 8, plan)
        before = _search_requests(qdrant_server)
        got = constrained_retrieve(Retriever(encoder, server, settings), "waterproof", 8, plan)
        short = bool(got.closest_outside or got.nearest)
        assert _search_requests(qdrant_server) - before == 1
        assert [(p.id, p.outside_filters) for p in got.offered] == [
            (p.id, p.outside_filters) for p in on_edge.offered
        ]
        fitting = [p for p in got.offered if not p.outside_filters]
        assert all(p.price is not None and p.price <= max_price for p in fitting)
        assert all(p.price is not None and p.price > max_price for p in got.closest_outside)
        assert short == (max_price == 10.0)
        short_pages += short
    # The case under test ran: pages the bound left short, completed from outside it.
    assert short_pages == 3


def test_the_shelves_are_one_request_on_a_server(
    stores: tuple[VectorStore, VectorStore], qdrant_server: str
) -> None:
    """Qdrant's group-by takes one search per request: the shop's shelves (a search per
    category) were a round trip each. Now their best chunks go in one request, and the
    products whose further chunks lay past them are completed in one more at most."""
    server, edge = stores
    rng = np.random.default_rng(6)
    searches = [
        (rng.normal(size=DIM).astype(np.float32), SearchFilter(category=c), 6) for c in CATEGORIES
    ]
    before = _search_requests(qdrant_server)
    got = server.search_dense_each(searches, chunks_per_product=CHUNKS_PER_PRODUCT)
    assert _search_requests(qdrant_server) - before <= 2
    on_edge = edge.search_dense_each(searches, chunks_per_product=CHUNKS_PER_PRODUCT)
    assert [[(h.product_id, [c.id for c in h.chunks]) for h in page] for page in got] == [
        [(h.product_id, [c.id for c in h.chunks]) for h in page] for page in on_edge
    ]
    assert all(len(page) == 6 for page in got)
    for (vector, flt, limit), page in zip(searches, got, strict=True):
        alone = server.search_products(
            vector, limit=limit, chunks_per_product=CHUNKS_PER_PRODUCT, flt=flt
        )  # the engine's own group-by
        assert [h.product_id for h in page] == [h.product_id for h in alone]
