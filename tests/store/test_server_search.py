"""A search on a Qdrant server: one round trip, and the edge engine's answers exactly.

Data: 200 products with 1-3 chunks each (`chunk_count` on every chunk), 16-d vectors from
a fixed seed. 24 products say "waterproof" in one chunk only, whatever their number of
chunks, each text a different length (no two BM25 scores tie); 6 one-chunk products say
"swimming". A hybrid query (relevance fusion) aimed at random directions finds most of
the BM25 products outside the dense branch's first chunks, so their cosine must be read
over all their chunks, not only over the chunk that matched the words.

The server is asked over REST and over gRPC (QDRANT_TRANSPORT), and counts the search
requests it answers (its `/metrics`): a query whose BM25-only
products are all one chunk is one request; one whose BM25-only products have chunks
without the words is two. The answers are checked against numpy (the exact fused score
of every product) and against the embedded engine, product by product and chunk by chunk.
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
from app.store import ChunkPoint, ProductHit, SearchFilter, VectorStore, open_store
from app.store.hybrid import DEFAULT_LEXICAL_WEIGHT, query_sparse
from tests.qdrant_server import grpc_port, qdrant_server_fixture  # noqa: F401

pytestmark = pytest.mark.server

DIM = 16
CATEGORIES = ["audio", "shoes", "kitchen"]


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
) -> list[tuple[int, list[str], float]]:
    """Every product the filter allows, scored by numpy: its best chunk's cosine plus the
    lexical weight times its BM25 share (BM25 as the engine scores it: a BM25-only
    search), and its two best chunks by cosine."""
    vectors = np.stack([np.asarray(p.vector) for p in POINTS])
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    cosine = unit @ (query / np.linalg.norm(query))
    chunks: dict[int, list[tuple[float, str]]] = {}
    for p, c in zip(POINTS, cosine, strict=True):
        if _allowed(p.payload, flt):
            chunks.setdefault(p.payload["product_id"], []).append((float(c), p.id))
    lexical = edge.search_products(
        None, limit=200, chunks_per_product=1, sparse=query_sparse(words), flt=flt
    )
    bm25 = {h.product_id: h.score for h in lexical}
    best = max(bm25.values())
    fused = []
    for pid, found in chunks.items():
        found.sort(reverse=True)
        score = found[0][0] + DEFAULT_LEXICAL_WEIGHT * bm25.get(pid, 0.0) / best
        fused.append((pid, [i for _, i in found[:2]], score))
    fused.sort(key=lambda f: -f[2])
    return fused[:limit]


def _answer(hits: list[ProductHit]) -> list[tuple[int, list[str], float]]:
    return [(h.product_id, [c.id for c in h.chunks], h.score) for h in hits]


def _search(
    store: VectorStore, query: np.ndarray, words: str, flt: SearchFilter | None, limit: int
) -> list[ProductHit]:
    return store.search_products(
        query, limit=limit, chunks_per_product=2, flt=flt, sparse=query_sparse(words)
    )


@pytest.mark.parametrize("flt", [None, SearchFilter(category="shoes", max_price=40.0)])
def test_a_hybrid_search_is_exact_and_the_engines_agree(
    stores: tuple[VectorStore, VectorStore], flt: SearchFilter | None
) -> None:
    server, edge = stores
    rng = np.random.default_rng(9)
    multi_chunk_lexical_only = 0
    for _ in range(6):
        query = rng.normal(size=DIM).astype(np.float32)
        for limit in (5, 12):
            expected = _expected(edge, query, "waterproof", flt, limit)
            on_edge = _answer(_search(edge, query, "waterproof", flt, limit))
            got = _answer(_search(server, query, "waterproof", flt, limit))
            # Product by product and chunk by chunk as the embedded engine answers.
            assert [g[:2] for g in got] == [e[:2] for e in on_edge]
            # Each product's score and best chunk exact. (A product the dense branch found
            # shows the chunks of its own window: its further ones may be missing.)
            for answer in (got, on_edge):
                assert [(g[0], g[1][0]) for g in answer] == [(e[0], e[1][0]) for e in expected]
                assert [g[2] for g in answer] == pytest.approx([e[2] for e in expected], abs=1e-5)
            by_id = {p.id: p.payload for p in POINTS}
            for pid, chunk_ids, _ in expected:
                if "waterproof" not in by_id[chunk_ids[0]]["text"] and pid % 8 == 1:
                    multi_chunk_lexical_only += 1
    # The path under test ran: BM25 products whose best chunk by cosine lacks the word.
    assert multi_chunk_lexical_only > 0


def test_a_hybrid_search_is_one_request_when_its_bm25_products_are_complete(
    stores: tuple[VectorStore, VectorStore], qdrant_server: str
) -> None:
    server, edge = stores
    rng = np.random.default_rng(3)
    for _ in range(5):
        query = rng.normal(size=DIM).astype(np.float32)
        before = _search_requests(qdrant_server)
        got = _search(server, query, "swimming", None, 5)
        assert _search_requests(qdrant_server) - before == 1
        assert _answer(got)[:5] and [h.product_id for h in got] == [
            h.product_id for h in _search(edge, query, "swimming", None, 5)
        ]
        # A BM25 product only: every "swimming" product is in the fused pool.
        before = _search_requests(qdrant_server)
        _search(server, query, "waterproof", None, 5)
        assert _search_requests(qdrant_server) - before == 2


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
