"""Relevance fusion's order (app/store/relevance.py): equal scores in product id order."""

from __future__ import annotations

from app.store.base import ProductHit
from app.store.relevance import fuse_products


def test_equal_scores_come_in_id_order_whatever_order_the_store_gave() -> None:
    # A title sold in several sizes: the same cosine and the same BM25. Left in the
    # store's order, the service and the eval answered some Home Depot queries apart.
    dense = [ProductHit(9, 0.8), ProductHit(3, 0.8), ProductHit(5, 0.9), ProductHit(1, 0.7)]
    lexical = [ProductHit(9, 4.0), ProductHit(3, 4.0)]
    fused = fuse_products(dense, lexical, 0.4)
    assert [h.product_id for h in fused] == [3, 9, 5, 1]
    again = fuse_products(list(reversed(dense)), list(reversed(lexical)), 0.4)
    assert [h.product_id for h in again] == [3, 9, 5, 1]
