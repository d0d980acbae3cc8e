"""Vectors made on Spark (`python -m spark_jobs.embed`), loaded by the sync instead of embedded.

The job writes a Hudi table of chunk vectors keyed by content key (`chunk_hash`: the chunk's
text in one vector space, whose model id names the encoder, int8 included), so a vector is
only ever loaded for the very text and engine it was made for. For the chunks a cycle is
about to embed, the sync asks this table first and embeds only what it lacks. Where the
table does not exist, the sync runs as it always did.

Memory: the table's keys are held while its latest commit stays the same (32 bytes a
chunk), its vectors only from the first lookup that hits until the cycle ends (4 bytes a
dimension: ~1.6 KB a chunk at 384, 160 MB per 100k distinct chunks). A bootstrap of a
catalog past ~5M distinct chunks needs that much memory in the syncer.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sequence

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
from hudi import HudiReadOptions

from app.core.config import Settings
from app.sync.hudi_source import TableReadError, TableSnapshot, _filesystem

logger = logging.getLogger(__name__)

# The vectors table's columns (the Spark job writes them, spark_jobs/embed.py).
CONTENT_KEY = "content_key"  # record key
VECTOR = "vector"  # array<float>, unit length
MODEL_ID = "model_id"  # for people and the job's report: the key already names it
EMBEDDED_AT = "ts"  # precombine: epoch millis of the embedding
# Content keys are 32 hex characters (chunk_hash).
_KEY_DTYPE = "S32"
_READ_BATCH = 65_536


class ChunkVectorSource:
    """The vectors table at VECTORS_TABLE_PATH, as one sync cycle sees it."""

    def __init__(self, settings: Settings, dim: int) -> None:
        self.path = settings.vectors_table_path
        self._settings = settings.model_copy(update={"hudi_table_path": self.path})
        self._dim = dim
        self._table: TableSnapshot | None = None
        self._version: str | None = None
        # Sorted content keys of the table's latest snapshot, and (once a lookup hits) the
        # vectors in the same order.
        self._keys: npt.NDArray[np.bytes_] | None = None
        self._vectors: npt.NDArray[np.float32] | None = None

    def start_cycle(self) -> None:
        """Open the table once per cycle (a new job run is seen at the next cycle)."""
        self.release()
        self._table = None
        if not self._exists():
            self._version = self._keys = None
            return
        table = TableSnapshot(self._settings)
        version = table.latest.completed if table.latest else None
        if version != self._version:
            self._version, self._keys = version, None
        self._table = table

    def release(self) -> None:
        """Drop the vectors (the keys stay until the table changes)."""
        self._vectors = None

    def lookup(self, keys: Sequence[str]) -> dict[str, npt.NDArray[np.float32]]:
        """The stored vector of every content key in `keys` the table holds."""
        if self._table is None or self._table.latest is None or not keys:
            return {}
        if self._keys is None:
            self._keys = self._load_keys(self._table)
        wanted = np.asarray(keys, dtype=_KEY_DTYPE)
        if not self._hits(self._keys, wanted).any():
            return {}
        if self._vectors is None:
            self._keys, self._vectors = self._load_vectors(self._table)
        hit = self._hits(self._keys, wanted)
        rows = np.searchsorted(self._keys, wanted)
        return {keys[int(i)]: self._vectors[rows[i]] for i in np.flatnonzero(hit)}

    @staticmethod
    def _hits(
        held: npt.NDArray[np.bytes_], wanted: npt.NDArray[np.bytes_]
    ) -> npt.NDArray[np.bool_]:
        if not len(held):
            return np.zeros(len(wanted), dtype=bool)
        rows = np.minimum(np.searchsorted(held, wanted), len(held) - 1)
        return np.asarray(held[rows] == wanted)

    def _exists(self) -> bool:
        fs, base = _filesystem(self._settings)
        try:
            info = fs.get_file_info(f"{base.rstrip('/')}/.hoodie")
        except OSError as e:
            raise TableReadError(f"cannot look for the vectors table: {e}", table=self.path) from e
        return bool(info.type != pafs.FileType.NotFound)

    def _stream(self, table: TableSnapshot, columns: list[str]) -> Iterator[pa.RecordBatch]:
        opts = HudiReadOptions().with_projection(columns).with_batch_size(_READ_BATCH)
        try:
            yield from (b for b in table.table.read_stream(opts) if b.num_rows)
        except Exception as e:  # hudi-rs raises its own error types
            raise TableReadError(f"vectors read failed: {e}", table=self.path) from e

    def _load_keys(self, table: TableSnapshot) -> npt.NDArray[np.bytes_]:
        started = time.monotonic()
        batches = self._stream(table, [CONTENT_KEY])
        keys = _as_keys([b.column(CONTENT_KEY) for b in batches])
        keys.sort()
        logger.info(
            "chunk vectors: %d keys at %s (commit %s) in %.2fs",
            len(keys),
            self.path,
            self._version,
            time.monotonic() - started,
        )
        return keys

    def _load_vectors(
        self, table: TableSnapshot
    ) -> tuple[npt.NDArray[np.bytes_], npt.NDArray[np.float32]]:
        started = time.monotonic()
        key_parts: list[pa.Array] = []
        vector_parts: list[npt.NDArray[np.float32]] = []
        skipped = 0
        for batch in self._stream(table, [CONTENT_KEY, VECTOR]):
            lists = batch.column(VECTOR)
            # Vectors of another size are another model's: never loaded.
            fits = pc.fill_null(pc.equal(pc.list_value_length(lists), self._dim), False)
            skipped += batch.num_rows - pc.sum(fits).as_py()
            kept = batch.filter(fits)
            if kept.num_rows:
                values = pc.list_flatten(kept.column(VECTOR)).to_numpy(zero_copy_only=False)
                vector_parts.append(values.astype(np.float32).reshape(-1, self._dim))
                key_parts.append(kept.column(CONTENT_KEY))
        keys = _as_keys(key_parts)
        vectors = (
            np.concatenate(vector_parts)
            if vector_parts
            else np.zeros((0, self._dim), dtype=np.float32)
        )
        order = np.argsort(keys, kind="stable")
        logger.info(
            "chunk vectors: loaded %d vectors (%.0f MB)%s in %.2fs",
            len(keys),
            vectors.nbytes / 1e6,
            f", {skipped} of another size skipped" if skipped else "",
            time.monotonic() - started,
        )
        return keys[order], vectors[order]


def _as_keys(parts: Sequence[pa.Array | pa.ChunkedArray]) -> npt.NDArray[np.bytes_]:
    if not parts:
        return np.zeros(0, dtype=_KEY_DTYPE)
    column = pa.chunked_array(parts).combine_chunks() if len(parts) > 1 else parts[0]
    return np.asarray(column.to_numpy(zero_copy_only=False), dtype=_KEY_DTYPE)
