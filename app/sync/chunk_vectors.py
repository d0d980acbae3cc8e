"""Vectors made on Spark (`python -m spark_jobs.embed`), loaded by the sync instead of embedded.

The job writes a Hudi table of chunk vectors keyed by content key (`chunk_hash`: the chunk's
text in one vector space, whose model id names the encoder, int8 included), so a vector is
only ever loaded for the very text and engine it was made for. For the chunks a cycle is
about to embed, the sync asks this table first and embeds only what it lacks. Where the
table does not exist, the sync runs as it always did. The job drops the vectors no live
chunk uses (`spark_jobs.embed`), so the table follows the catalog, not its history.

Memory: the vectors are never held. When the table's latest commit changes, one streamed
read (a record batch at a time) writes its vectors to an unnamed temporary file in table
order and keeps an index of sorted content keys with their row numbers (36 bytes a row);
a lookup finds its keys in the index and reads just those rows back from the file
(`os.pread`, 4 bytes a dimension each). So the syncer holds 36 bytes per row of the table's
snapshot plus the base file being read (hudi-rs decodes one file at a time; Hudi caps a
file at `hoodie.parquet.max.file.size`, 120 MB), whatever the table weighs:
bench/vector_lookup.py measures it while the table's history grows.
"""

from __future__ import annotations

import logging
import os
import tempfile
import time
from collections.abc import Iterator, Sequence
from typing import IO

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
# Rows converted at a time (~6 MB of vectors at 384-d).
_READ_BATCH = 4_096


class SpilledVectors:
    """A snapshot of the vectors table: sorted keys in memory, the vectors in a temp file."""

    def __init__(self, batches: Iterator[pa.RecordBatch], dim: int) -> None:
        self.dim = dim
        self._row_bytes = dim * 4
        # Unnamed, gone with the process; closed by `close` when the table moves on.
        self._file: IO[bytes] = tempfile.TemporaryFile(prefix="chunk-vectors-")  # noqa: SIM115
        parts: list[npt.NDArray[np.bytes_]] = []
        self.skipped = 0
        for whole in batches:
            # hudi-rs gives a base file as one batch: converted a slice at a time.
            for start in range(0, whole.num_rows, _READ_BATCH):
                batch = whole.slice(start, _READ_BATCH)
                lists = batch.column(VECTOR)
                # Vectors of another size are another model's: never loaded.
                fits = pc.fill_null(pc.equal(pc.list_value_length(lists), dim), False)
                self.skipped += batch.num_rows - pc.sum(fits).as_py()
                kept = batch.filter(fits)
                if not kept.num_rows:
                    continue
                values = pc.list_flatten(kept.column(VECTOR)).to_numpy(zero_copy_only=False)
                self._file.write(np.ascontiguousarray(values, dtype=np.float32).data)
                parts.append(_as_keys([kept.column(CONTENT_KEY)]))
        self._file.flush()
        keys = np.concatenate(parts) if parts else np.zeros(0, dtype=_KEY_DTYPE)
        order = np.argsort(keys, kind="stable")
        self.keys = keys[order]
        self.rows = order.astype(np.uint32)

    def __len__(self) -> int:
        return len(self.keys)

    @property
    def index_bytes(self) -> int:
        return int(self.keys.nbytes + self.rows.nbytes)

    def get(self, keys: Sequence[str]) -> dict[str, npt.NDArray[np.float32]]:
        """The vector of every key in `keys` the snapshot holds (read from the file)."""
        if not len(self.keys) or not keys:
            return {}
        wanted = np.asarray(keys, dtype=_KEY_DTYPE)
        at = np.minimum(np.searchsorted(self.keys, wanted), len(self.keys) - 1)
        hit = np.flatnonzero(self.keys[at] == wanted)
        fd = self._file.fileno()
        out: dict[str, npt.NDArray[np.float32]] = {}
        # File order: reads go forward through the file.
        for i in sorted(hit, key=lambda i: int(self.rows[at[i]])):
            raw = os.pread(fd, self._row_bytes, int(self.rows[at[i]]) * self._row_bytes)
            out[keys[int(i)]] = np.frombuffer(raw, dtype=np.float32)
        return out

    def close(self) -> None:
        self._file.close()


class ChunkVectorSource:
    """The vectors table at VECTORS_TABLE_PATH, as one sync cycle sees it."""

    def __init__(self, settings: Settings, dim: int) -> None:
        self.path = settings.vectors_table_path
        self._settings = settings.model_copy(update={"hudi_table_path": self.path})
        self._dim = dim
        self._table: TableSnapshot | None = None
        self._version: str | None = None
        # The table's latest snapshot, spilled on the first lookup after it changed.
        self._spilled: SpilledVectors | None = None

    def start_cycle(self) -> None:
        """Open the table once per cycle (a new job run is seen at the next cycle)."""
        self._table = None
        if not self._exists():
            self._version = None
            self.release()
            return
        table = TableSnapshot(self._settings)
        version = table.latest.completed if table.latest else None
        if version != self._version:
            self._version = version
            self.release()
        self._table = table

    def release(self) -> None:
        """Drop the spilled snapshot (its index and its temp file); kept across cycles
        otherwise, until the table's latest commit changes."""
        if self._spilled is not None:
            self._spilled.close()
            self._spilled = None

    @property
    def index_bytes(self) -> int:
        """Memory the lookup holds between calls (the sorted keys and their rows)."""
        return self._spilled.index_bytes if self._spilled is not None else 0

    def lookup(self, keys: Sequence[str]) -> dict[str, npt.NDArray[np.float32]]:
        """The stored vector of every content key in `keys` the table holds."""
        if self._table is None or self._table.latest is None or not keys:
            return {}
        if self._spilled is None:
            self._spilled = self._spill(self._table)
        return self._spilled.get(keys)

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

    def _spill(self, table: TableSnapshot) -> SpilledVectors:
        started = time.monotonic()
        spilled = SpilledVectors(self._stream(table, [CONTENT_KEY, VECTOR]), self._dim)
        logger.info(
            "chunk vectors: %d at %s (commit %s) spilled, index %.1f MB%s, in %.2fs",
            len(spilled),
            self.path,
            self._version,
            spilled.index_bytes / 1e6,
            f", {spilled.skipped} of another size skipped" if spilled.skipped else "",
            time.monotonic() - started,
        )
        return spilled


def _as_keys(parts: Sequence[pa.Array | pa.ChunkedArray]) -> npt.NDArray[np.bytes_]:
    if not parts:
        return np.zeros(0, dtype=_KEY_DTYPE)
    column = pa.chunked_array(parts).combine_chunks() if len(parts) > 1 else parts[0]
    return np.asarray(column.to_numpy(zero_copy_only=False), dtype=_KEY_DTYPE)
