"""Embed and write chunks on background threads while the sync thread keeps chunking.

Three stages, one thread each: the caller chunks and diffs products and `add`s the new
chunks; an embed thread turns groups of them into vectors (the encoder spreads a group's
batches over the cores); a write thread builds the points (BM25 included) and upserts
them, `upsert_batch` at a time. Run one after the other, chunking, BM25 and the store's
flush left the cores idle that the encoder would have used: 21% of a bootstrap on
2 cores (BENCHMARKS.md, issue 11).

What the sync relies on, kept:
- leaving the `with` block returns only once every added chunk is written, so the caller
  deletes stale chunks, and the engine moves the checkpoint, after the new ones landed;
- the first failure stops both stages (nothing is embedded or written after it) and is
  raised to the caller: from `add`, or when the block ends;
- memory stays bounded: at most `max_groups` groups are between `add` and the store.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from types import TracebackType

from app.core.catalog import Product
from app.embedding import Embedder
from app.store.base import ChunkPoint, VectorStore
from app.sync.chunking import ProductChunk


class EmbedPipeline:
    """Args:
    embedder: embeds one group per call (its own batching and threads apply).
    store: receives the points, from the write thread only.
    group: chunks per embed call.
    upsert_batch: points per store upsert (the last one may be smaller).
    max_groups: groups embedded or waiting to be written at once; `add` blocks beyond.
    """

    def __init__(
        self,
        embedder: Embedder,
        store: VectorStore,
        group: int,
        upsert_batch: int,
        *,
        max_groups: int = 2,
    ) -> None:
        self._embedder = embedder
        self._store = store
        self._group = group
        self._upsert_batch = upsert_batch
        self._pending: list[tuple[ProductChunk, Product]] = []
        self._in_flight = threading.BoundedSemaphore(max_groups)
        self._embed = ThreadPoolExecutor(1, thread_name_prefix="sync-embed")
        self._write = ThreadPoolExecutor(1, thread_name_prefix="sync-write")
        self._unwritten: list[ChunkPoint] = []  # the write thread's alone
        self._error: BaseException | None = None
        self._stopped = False
        self.submitted = 0  # chunks handed to the embed stage

    def __enter__(self) -> EmbedPipeline:
        return self

    def add(self, chunk: ProductChunk, product: Product) -> None:
        """Queue one chunk; raises the pipeline's first failure, if any."""
        self._pending.append((chunk, product))
        if len(self._pending) >= self._group:
            self._submit()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc is not None:
            self._stopped = True  # the caller failed: write nothing more
        elif self._pending and self._error is None:
            self._submit()
        self._embed.shutdown(wait=True, cancel_futures=exc is not None)
        if exc is None and self._error is None:
            self._write.submit(self._write_points, [], final=True)
        self._write.shutdown(wait=True, cancel_futures=exc is not None)
        if exc is None and self._error is not None:
            raise self._error

    def _submit(self) -> None:
        if self._error is not None:
            raise self._error
        items, self._pending = self._pending, []
        self._in_flight.acquire()
        self.submitted += len(items)
        self._embed.submit(self._embed_group, items)

    def _running(self) -> bool:
        return self._error is None and not self._stopped

    def _fail(self, e: BaseException) -> None:
        if self._error is None:
            self._error = e

    def _embed_group(self, items: list[tuple[ProductChunk, Product]]) -> None:
        try:
            if self._running():
                vectors = self._embedder.embed([chunk.text for chunk, _ in items])
                points = [
                    ChunkPoint(chunk.point_id, vectors[i], chunk.payload(product))
                    for i, (chunk, product) in enumerate(items)
                ]
                self._write.submit(self._write_points, points)  # releases the slot
                return
        except BaseException as e:
            self._fail(e)
        self._in_flight.release()

    def _write_points(self, points: list[ChunkPoint], *, final: bool = False) -> None:
        try:
            self._unwritten.extend(points)
            while self._running() and (
                len(self._unwritten) >= self._upsert_batch or (final and self._unwritten)
            ):
                batch = self._unwritten[: self._upsert_batch]
                self._store.upsert(batch)
                del self._unwritten[: len(batch)]
        except BaseException as e:
            self._fail(e)
        finally:
            if not final:
                self._in_flight.release()
