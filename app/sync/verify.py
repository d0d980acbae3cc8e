"""Check the mirror invariant: the store holds exactly the chunks of the table at the checkpoint."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from app.core.config import Settings
from app.store.base import VectorStore
from app.sync.chunking import ProductChunker, product_fields
from app.sync.hudi_source import TableSnapshot
from app.sync.state import SyncCheckpoint


@dataclass
class MirrorReport:
    checkpoint: str | None
    products: int
    expected_chunks: int
    stored_chunks: int
    missing: int
    stale: int
    extra: int
    examples: dict[str, list[str]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.missing == 0 and self.stale == 0 and self.extra == 0


def mirror_verify(settings: Settings, store: VectorStore, chunker: ProductChunker) -> MirrorReport:
    """Compare the store with the table snapshot at the stored checkpoint.

    missing: chunks of the snapshot that the store lacks; stale: stored chunks of a current
    product that are not its current chunks, carry outdated fields (e.g. old price) or
    lack their BM25 vector (hybrid search would miss them on keywords);
    extra: stored chunks of products that are not in the snapshot (deleted).
    """
    cp = SyncCheckpoint.from_dict(store.load_state())
    expected: dict[str, dict[str, Any]] = {}
    products: set[int] = set()
    if cp is not None:
        table = TableSnapshot(settings)
        rows = table.read_window("0", cp.completed)
        for batch in table.products(rows, 2048):
            for product in batch:
                products.add(product.id)
                fields = product_fields(product)
                for chunk in chunker.chunk(product):
                    expected[chunk.point_id] = {**fields, "chunk_index": chunk.chunk_index}

    missing_ids = set(expected)
    without_sparse = set(store.chunk_ids_without_sparse())
    stale: list[str] = []
    extra: list[str] = []
    stored = 0
    for held in store.iter_chunks():
        stored += 1
        want = expected.get(held.id)
        if want is not None:
            missing_ids.discard(held.id)
            if held.id in without_sparse or any(held.payload.get(k) != v for k, v in want.items()):
                stale.append(held.id)
        elif held.product_id in products:
            stale.append(held.id)
        else:
            extra.append(held.id)
    return MirrorReport(
        checkpoint=cp.completed if cp else None,
        products=len(products),
        expected_chunks=len(expected),
        stored_chunks=stored,
        missing=len(missing_ids),
        stale=len(stale),
        extra=len(extra),
        examples={
            "missing": sorted(missing_ids)[:5],
            "stale": stale[:5],
            "extra": extra[:5],
        },
    )
