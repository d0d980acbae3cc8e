"""Check the mirror invariant: the store holds exactly the chunks of the table at the checkpoint."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from app.core.catalog import payload_fields
from app.core.config import Settings
from app.store.base import GROUP_FIELD, VectorStore
from app.sync.chunking import ProductChunker, sparse_marker
from app.sync.hudi_source import TableSnapshot
from app.sync.state import SyncCheckpoint

# Products compared per round: their expected chunks and their stored chunks are all that
# is held at once, so verifying a million products needs no more memory than a thousand.
VERIFY_BATCH = 2048


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
    product that are not its current chunks, carry outdated fields (e.g. old price), lack
    their BM25 vector (hybrid search would miss them on keywords) or hold it in another
    BM25 format than the current one;
    extra: stored chunks of products that are not in the snapshot (deleted).

    A store that was never synced is compared with the table's latest snapshot: an empty
    store over a non-empty table is `missing`, never "0/0/0 because nothing was expected".
    """
    cp = SyncCheckpoint.from_dict(store.load_state())
    table = TableSnapshot(settings)
    latest = table.latest
    # Time travel only when the table moved on since the checkpoint (as-of is in requested
    # time, which is what a checkpoint's instant is named by).
    as_of = cp.requested if cp and latest and cp.requested != latest.requested else None

    products: set[int] = set()
    # Normally empty: a filtered scroll for points without a BM25 vector.
    without_sparse = set(store.chunk_ids_without_sparse())
    expected_chunks = 0
    missing = stale = extra = 0
    examples: dict[str, list[str]] = {"missing": [], "stale": [], "extra": []}
    for batch in table.snapshot(VERIFY_BATCH, as_of=as_of):
        expected: dict[str, dict[str, Any]] = {}
        for product in batch:
            products.add(product.id)
            fields = payload_fields(product)
            for chunk in chunker.chunk(product):
                expected[chunk.point_id] = {**fields, **chunk.position, **sparse_marker()}
        expected_chunks += len(expected)
        for held in store.chunks_for_products([p.id for p in batch]):
            want = expected.pop(held.id, None)
            if (
                want is None
                or held.id in without_sparse
                or any(held.payload.get(k) != v for k, v in want.items())
            ):
                stale += 1
                _example(examples["stale"], held.id)
        missing += len(expected)
        for point_id in sorted(expected)[:5]:
            _example(examples["missing"], point_id)

    for held in store.iter_chunks(batch=8192, fields=[GROUP_FIELD]):
        if held.product_id not in products:
            extra += 1
            _example(examples["extra"], held.id)
    return MirrorReport(
        checkpoint=cp.completed if cp else None,
        products=len(products),
        expected_chunks=expected_chunks,
        stored_chunks=store.count(),
        missing=missing,
        stale=stale,
        extra=extra,
        examples=examples,
    )


def _example(kept: list[str], point_id: str) -> None:
    if len(kept) < 5:
        kept.append(point_id)
