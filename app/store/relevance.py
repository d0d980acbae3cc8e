"""Relevance fusion: one score per product, on the cosine scale, from both branches.

A product's relevance is its best chunk's cosine similarity to the query plus
`lexical_weight` times its best BM25 score divided by the best BM25 score of any
candidate. The lexical part is bounded by the weight, so a product that only shares a word
with the query ("runs" in a dog harness) cannot outrank one that means it, and the sum
stays on the cosine scale: a floor and a margin cut mean the same on every catalog.

Why scores and not ranks: rank fusion (RRF) gives a weak branch's first hit as much as a
strong branch's, which pulls dense search down on catalogs with long descriptions, and a
rank-based score cannot say where relevance ends (BENCHMARKS.md, retrieval quality).
"""

from __future__ import annotations

from collections.abc import Sequence

from app.store.base import ProductHit


def fuse_products(
    dense: Sequence[ProductHit], lexical: Sequence[ProductHit], lexical_weight: float
) -> list[ProductHit]:
    """Products of both branches, best relevance first.

    Args:
        dense: every candidate product with its best chunks by cosine (products found
            by BM25 only must have been scored by the dense query too).
        lexical: the BM25 branch's products, score = their best chunk's BM25 score.
        lexical_weight: what the best BM25 match adds to a cosine similarity.

    Returns:
        The dense branch's products (their chunks, best first by cosine) with the fused
        score; a BM25 product the dense branch lacks is dropped.
    """
    best = max((h.score for h in lexical), default=0.0)
    lexical_share = {h.product_id: h.score / best for h in lexical} if best > 0 else {}
    fused = [
        ProductHit(
            h.product_id, h.score + lexical_weight * lexical_share.get(h.product_id, 0.0), h.chunks
        )
        for h in dense
    ]
    fused.sort(key=lambda h: h.score, reverse=True)
    return fused
