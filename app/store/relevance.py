"""Relevance fusion: one score per product, on the cosine scale, from both branches.

A product's relevance is its best chunk's cosine similarity to the query plus
`lexical_weight` times its best BM25 score divided by the best BM25 score of any
candidate (of the whole catalog, when a filter limits the candidates). The lexical part
is bounded by the weight, so a product that only shares a word with the query ("runs" in
a dog harness) cannot outrank one that means it, and the sum stays on the cosine scale:
a floor and a margin cut mean the same on every catalog.

Why scores and not ranks: rank fusion (RRF) gives a weak branch's first hit as much as a
strong branch's, which pulls dense search down on catalogs with long descriptions, and a
rank-based score cannot say where relevance ends (BENCHMARKS.md, retrieval quality).
"""

from __future__ import annotations

from collections.abc import Sequence

from app.store.base import BranchSignals, ProductHit


def fuse_products(
    dense: Sequence[ProductHit],
    lexical: Sequence[ProductHit],
    lexical_weight: float,
    *,
    dense_found: int | None = None,
    lexical_best: float = 0.0,
) -> list[ProductHit]:
    """Products of both branches, best relevance first, each with its `BranchSignals`.

    Args:
        dense: every candidate product with its best chunks by cosine (products found
            by BM25 only must have been scored by the dense query too), the dense
            branch's own products first, in its order.
        lexical: the BM25 branch's products, score = their best chunk's BM25 score.
        lexical_weight: what the best BM25 match adds to a cosine similarity.
        dense_found: how many of `dense` the dense branch found itself (the rest were
            scored apart for BM25's sake); default all.
        lexical_best: the best BM25 score of the whole catalog when `lexical` was
            filtered: a share is of the best word match anywhere, so a filter that leaves
            out the products that mean the words does not lift the rest.

    Returns:
        The dense branch's products (their chunks, best first by cosine) with the fused
        score; a BM25 product the dense branch lacks is dropped.
    """
    found = len(dense) if dense_found is None else dense_found
    best = max([lexical_best, *(h.score for h in lexical)])
    by_words = {h.product_id: (rank, h.score) for rank, h in enumerate(lexical, start=1)}
    fused = []
    for rank, h in enumerate(dense, start=1):
        lexical_rank, bm25 = by_words.get(h.product_id, (None, 0.0))
        share = bm25 / best if best > 0 else 0.0
        score = h.score + lexical_weight * share
        signals = BranchSignals(
            cosine=h.score,
            bm25=bm25,
            bm25_share=share,
            dense_rank=rank if rank <= found else None,
            lexical_rank=lexical_rank,
            fused=score,
        )
        fused.append(ProductHit(h.product_id, score, h.chunks, signals))
    # Equal scores (a title sold in several sizes) in id order: in the store's order, two
    # processes serving one index answered differently (BENCHMARKS.md, over HTTP).
    fused.sort(key=lambda h: (-h.score, h.product_id))
    return fused
