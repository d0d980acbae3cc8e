"""One sync cycle: table (checkpoint, end] -> chunks -> embeddings -> store -> checkpoint.

The mirror invariant this keeps: after a completed cycle at checkpoint C, the store holds
exactly the chunks of the table snapshot at C (0 missing, 0 stale, 0 extra).

Crash safety comes from ordering and idempotence, not transactions: vectors are written
and acknowledged before the checkpoint moves; chunk ids are keyed by content, so replaying
a window after a crash re-embeds only what did not land and deletes what is stale.

A cycle makes one pass in this order: the window's commit metadata, then removals (when
any commit removed rows: read from the file groups those commits wrote, see
`removals.py`, or a key reconciliation when that cannot be sure), then the changed rows.
The whole table is only ever read as a streamed snapshot (bootstrap, full cycles, key
sets): an incremental read from "0" misses every archived commit.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator

import pyarrow as pa

from app.core.catalog import Product
from app.core.config import Settings
from app.core.errors import RecommenderError
from app.embedding import Embedder
from app.store.base import GROUP_FIELD, StoreFencedError, VectorStore
from app.sync.apply import ApplyCounts, ChunkApplier, group_by_product
from app.sync.chunk_vectors import ChunkVectorSource
from app.sync.chunking import ProductChunker
from app.sync.hudi_source import TableSnapshot, WindowChanges
from app.sync.lease import LeaseHeldError, LeaseLostError, SyncLease
from app.sync.lock import SyncLock
from app.sync.progress import Progress
from app.sync.removals import scan_removals
from app.sync.state import CycleMode, CycleReport, SyncCheckpoint, SyncTotals

logger = logging.getLogger(__name__)

# Products handled per embed/upsert round; also the progress granularity.
PRODUCT_BATCH = 512
# Once this many points were written since the search index (HNSW) was last built, build
# it before declaring the cycle done. Counted across cycles (in the checkpoint), so a
# catalog that grows by increments gets indexed too, not only one that bootstraps big.
OPTIMIZE_AFTER_UNINDEXED = 20_000
# ... and inside a cycle, between batches, once this many piled up: the engine keeps the
# points of its appendable segment on the heap (~1.1 KB each, BM25 index, id tracker,
# payload indexes) and their written pages mapped, so a bootstrap that wrote 1M points
# into one segment peaked at 3.2 GB. Building the index turns that segment into an indexed,
# memory-mapped one and starts a new appendable one: memory follows this, not the table.
# Equal to the edge store's SEGMENT_POINTS, so every rolled segment is one it never merges.
ROLL_AFTER_POINTS = 100_000


class CycleInProgressError(RecommenderError):
    """A cycle is already running in this process; the caller asked not to wait for it."""


class CycleCancelledError(RecommenderError):
    """The cycle stopped between batches because shutdown was requested (no checkpoint)."""


class SyncEngine:
    def __init__(
        self,
        settings: Settings,
        store: VectorStore,
        embedder: Embedder,
        *,
        open_table: Callable[[Settings], TableSnapshot] = TableSnapshot,
    ) -> None:
        self.settings = settings
        self.store = store
        self.embedder = embedder
        self.chunker = ProductChunker(
            embedder.tokenizer(),
            embedder.model_id,
            min(settings.max_chunk_tokens, embedder.max_seq_tokens),
            settings.chunk_overlap_tokens,
        )
        self.vectors = ChunkVectorSource(settings, embedder.dim)
        self.applier = ChunkApplier(store, embedder, self.chunker, self.vectors)
        self._open_table = open_table
        self.totals = SyncTotals()
        # One cycle at a time inside this process (background loop vs POST /sync).
        self._cycle_lock = threading.Lock()
        # ... and across processes (an API with SYNC_MODE=embedded vs `app.sync --loop`).
        self._process_lock = SyncLock.for_settings(settings)
        # ... and across hosts sharing a Qdrant server (None for a store of one process).
        self.lease = SyncLease.for_settings(settings, store)
        self._stop = threading.Event()
        # Points written since the index was last built (the checkpoint's `unindexed` at the
        # start of a cycle); see ROLL_AFTER_POINTS.
        self._unindexed = 0
        self._observed_at = 0.0
        # The last observation's failure, raised again until the next read is due: a
        # status that is 503 once and then 200 with old facts for 5 s would hide it.
        self._observe_error: RecommenderError | None = None
        # Guards the table facts in `totals` between a cycle and an observation running
        # beside it; `_moves` counts checkpoint moves, so an observation that read the
        # checkpoint before a cycle stored a new one drops its (older) facts.
        self._facts_lock = threading.Lock()
        self._moves = 0
        store.ensure_collection(embedder.dim)
        cp = self.checkpoint()
        self.totals.checkpoint = cp.completed if cp else None

    @property
    def serves_others_index(self) -> bool:
        """Another host's syncer holds the lease: this process serves what that one writes."""
        holder = self.totals.lease_holder
        return self.lease is not None and holder is not None and holder != self.lease.holder

    @property
    def running(self) -> bool:
        return self._cycle_lock.locked()

    def request_stop(self) -> None:
        """Make a running cycle stop at its next batch boundary (shutdown)."""
        self._stop.set()

    def wait_idle(self, timeout: float) -> bool:
        """Wait for a running cycle to finish (shutdown must not close the store under it)."""
        if self._cycle_lock.acquire(timeout=timeout):
            self._cycle_lock.release()
            return True
        return False

    def checkpoint(self) -> SyncCheckpoint | None:
        return SyncCheckpoint.from_dict(self.store.load_state())

    def observe(self, *, max_age: float = 5.0) -> None:
        """Refresh the checkpoint, the table's latest commit and the lag facts in `totals`.

        Reads the table and the store at most every `max_age` seconds, also while a cycle
        runs (without waiting for it): the lag must follow the table during a bootstrap,
        and in a process that does not sync (SYNC_MODE=off) it has no other source.
        """
        if time.monotonic() - self._observed_at < max_age:
            if self._observe_error is not None:
                raise self._observe_error
            return
        self._observed_at = time.monotonic()
        moves = self._moves
        try:
            table = self._open_table(self.settings)
            cp = self.checkpoint()
        except RecommenderError as e:
            self._observe_error = e
            raise
        self._observe_error = None
        self._note(table, cp.completed if cp else None, moves=moves)

    def _note(self, table: TableSnapshot, checkpoint: str | None, *, moves: int) -> None:
        """Record what `table` says against `checkpoint`, unless the checkpoint moved since."""
        latest = table.latest
        oldest = table.oldest_unsynced(checkpoint)
        with self._facts_lock:
            if moves != self._moves:
                return
            t = self.totals
            t.checkpoint = checkpoint
            t.table_latest = latest.completed if latest else None
            t.oldest_unsynced = oldest.completed if oldest else None
            t.unsynced_since = table.completed_at(oldest) if oldest else None

    def run_cycle(self, *, full: bool = False, wait: bool = True) -> CycleReport:
        """Run one cycle.

        Raises:
            CycleInProgressError: `wait=False` and a cycle is already running here.
            SyncBusyError: another process holds the sync lock of this collection.
        """
        if not self._cycle_lock.acquire(blocking=wait):
            raise CycleInProgressError("a sync cycle is already running")
        try:
            with self._held():
                try:
                    report = self._cycle(full=full)
                except StoreFencedError as e:
                    self.totals.failures += 1
                    self.totals.last_error = f"LeaseLostError: {e}"
                    raise LeaseLostError(f"a write was refused by the lease's fence: {e}") from e
                except Exception as e:
                    self.totals.failures += 1
                    self.totals.last_error = f"{type(e).__name__}: {e}"
                    raise
                self._record(report)
                return report
        finally:
            self._cycle_lock.release()

    @contextlib.contextmanager
    def _held(self) -> Iterator[None]:
        with self._process_lock.hold() if self._process_lock else contextlib.nullcontext():
            if self.lease is not None:
                try:
                    state = self.lease.claim()
                except LeaseHeldError as e:
                    self.totals.lease_holder = e.state.holder  # for /sync/status, readiness
                    self.totals.lease_until = e.state.until
                    raise
                self.totals.lease_holder, self.totals.lease_until = state.holder, state.until
            yield

    def _record(self, report: CycleReport) -> None:
        t = self.totals
        t.cycles += 1
        t.embedded += report.embedded
        t.loaded += report.loaded
        t.skipped += report.skipped
        t.deleted += report.deleted
        t.payload_updates += report.payload_updates
        t.full_reconciliations += report.mode in ("bootstrap", "full")
        t.key_reconciliations += report.key_reconciliation
        t.targeted_removal_scans += report.removal_scan == "targeted"
        t.last_report = report
        t.last_error = None
        t.last_success_at = time.time()
        with self._facts_lock:
            self._moves += 1
            t.checkpoint = report.end or t.checkpoint
            # This cycle's table ends at the checkpoint, but commits may have landed while
            # it ran: the next status or scrape reads the table again instead of waiting.
            t.oldest_unsynced = t.unsynced_since = None
            self._observed_at = 0.0

    def _cycle(self, *, full: bool) -> CycleReport:
        started = time.monotonic()
        moves = self._moves
        table = self._open_table(self.settings)
        self.vectors.start_cycle()
        latest = table.latest
        # Recreates a collection dropped under a running service; its checkpoint went with
        # it (same lifetime), so the check below turns this cycle into a bootstrap.
        self.store.ensure_collection(self.embedder.dim)
        cp = self.checkpoint()
        self._note(table, cp.completed if cp else None, moves=moves)
        end = latest.completed if latest else None

        reason = self._needs_full(cp, table, full)
        self._unindexed = cp.unindexed if cp else 0
        if reason:
            report = self._full(table, end, reason, bootstrap=cp is None)
        elif cp is None or end is None or end <= cp.completed:
            report = CycleReport("noop", cp.completed if cp else None, end)
        else:
            report = self._incremental(table, cp, end)

        if latest is not None and report.mode != "noop":
            self._build_index(report, OPTIMIZE_AFTER_UNINDEXED)
            if self.lease is not None:
                self.lease.confirm()  # no checkpoint from a syncer that lost its lease
            self.store.save_state(
                SyncCheckpoint(
                    completed=latest.completed,
                    requested=latest.requested,
                    table_path=self.settings.hudi_table_path,
                    signature=self.chunker.signature,
                    chunks=self.store.count(),
                    unindexed=self._unindexed,
                ).to_dict()
            )
        report.seconds = time.monotonic() - started
        logger.info(
            "sync %s (%s, %s]: rows %d, embedded %d, loaded %d, skipped %d, deleted %d, "
            "payload %d, sparse %d in %.2fs%s",
            report.mode,
            report.start,
            report.end,
            report.rows,
            report.embedded,
            report.loaded,
            report.skipped,
            report.deleted,
            report.payload_updates,
            report.sparse_rewrites,
            report.seconds,
            f" ({report.reason})" if report.reason else "",
        )
        return report

    def _needs_full(self, cp: SyncCheckpoint | None, table: TableSnapshot, full: bool) -> str:
        """Why this cycle must reconcile the whole table, or "" for a normal cycle."""
        if full:
            return "requested"
        if cp is None:
            return "no checkpoint: bootstrap"
        if cp.chunks > 0 and self.store.count() == 0:
            # The vectors are gone but their checkpoint survived (a dropped collection on a
            # server, a wiped shard folder): resuming would leave an empty store "in sync".
            return f"store is empty but its checkpoint recorded {cp.chunks} chunks"
        if table.latest is None:
            # An empty (or freshly re-created) table mirrors to an empty store.
            return "" if self.store.count() == 0 else "table has no commits"
        if cp.signature != self.chunker.signature:
            return f"chunking/model changed ({cp.signature} -> {self.chunker.signature})"
        if cp.table_path != self.settings.hudi_table_path:
            return f"table path changed ({cp.table_path} -> {self.settings.hudi_table_path})"
        if not table.has_instant(cp.requested, cp.completed):
            # Archived/cleaned past the checkpoint, re-created, or restored: the window
            # (checkpoint, end] no longer describes every change since the checkpoint.
            return f"checkpoint {cp.completed} is not on the active timeline"
        return ""

    def _full(
        self, table: TableSnapshot, end: str | None, reason: str, *, bootstrap: bool
    ) -> CycleReport:
        """Reconcile the store with the table's snapshot, streamed: removals first."""
        mode: CycleMode = "bootstrap" if bootstrap else "full"
        logger.info("sync %s: %s", mode, reason)
        report = CycleReport(mode, "0", end, reason=reason)
        totals = ApplyCounts()
        stored = self._stored_product_ids()
        keys = table.read_keys()
        totals.deleted += self._delete_products(stored - keys)
        progress = Progress(logger, f"sync {mode}", len(keys))
        del keys  # a million ids are ~60 MB: not held through the embedding
        for batch in table.snapshot(PRODUCT_BATCH):
            self._check_stop()
            report.rows += len(batch)
            held = [p.id for p in batch if p.id in stored]
            totals.add(self._apply(batch, held))
            progress.advance(len(batch))
            self._build_index(report, ROLL_AFTER_POINTS)
        return self._fill(report, totals)

    def _incremental(self, table: TableSnapshot, cp: SyncCheckpoint, end: str) -> CycleReport:
        start = cp.completed
        report = CycleReport("incremental", start, end)
        totals = ApplyCounts()
        changes = table.changes(start, end)
        # Rows first (read, not embedded): their ids tell a moved row from a removed one.
        rows = table.read_window(start, end)
        report.rows = rows.num_rows
        if changes.removals:
            # Removed rows are not returned by the incremental read; they are found and
            # deleted before any embedding, so a deleted product leaves search early.
            totals.deleted += self._delete_products(self._removed(table, cp, changes, rows, report))
        progress = Progress(logger, "sync incremental", rows.num_rows)
        for batch in table.products(rows, PRODUCT_BATCH):
            self._check_stop()
            totals.add(self._apply(batch, [p.id for p in batch]))
            progress.advance(len(batch))
            self._build_index(report, ROLL_AFTER_POINTS)
        return self._fill(report, totals)

    def _removed(
        self,
        table: TableSnapshot,
        cp: SyncCheckpoint,
        changes: WindowChanges,
        rows: pa.Table,
        report: CycleReport,
    ) -> set[int]:
        """Ids removed in the window: by file group when sure, else every key compared."""
        window_ids = {int(v) for v in rows.column("id").to_pylist()} if rows.num_rows else set()
        scan = scan_removals(table, cp.requested, cp.completed, changes, window_ids)
        described = ", ".join(c.describe() for c in changes.removals[:3])
        if scan.removed is not None:
            report.removal_scan = "targeted"
            report.reason = f"removals by file group after {described}: {scan.reason}"
            return set(scan.removed)
        logger.info(
            "sync: key reconciliation, the targeted removal scan is not sure: %s",
            scan.reason,
        )
        report.removal_scan = "full"
        report.removal_fallback = scan.reason
        report.key_reconciliation = True
        report.reason = f"key reconciliation after {described} ({scan.reason})"
        return self._stored_product_ids() - table.read_keys()

    def _apply(self, batch: list[Product], held: list[int]) -> ApplyCounts:
        started = time.monotonic()
        existing = group_by_product(self.store.chunks_for_products(held)) if held else {}
        counts = self.applier.apply(batch, existing)
        self._unindexed += counts.embedded + counts.loaded
        took = time.monotonic() - started
        if self.lease is not None and took > self.lease.seconds / 2:
            # Renewed between batches only: a batch past 2/3 of the lease can lose it.
            logger.warning(
                "sync batch of %d products took %.1fs, over half the %.0fs lease: "
                "a slower one would lose the lease mid-batch (raise SYNC_LEASE_SECONDS)",
                len(batch),
                took,
                self.lease.seconds,
            )
        return counts

    def _build_index(self, report: CycleReport, after: int) -> None:
        """Build the search index (`optimize`) once `after` points await it."""
        if self._unindexed >= after:
            self.store.optimize()
            report.optimized = True
            self._unindexed = 0

    def _stored_product_ids(self) -> set[int]:
        # Product ids only: chunk texts of a large store are hundreds of MB to scroll.
        return {c.product_id for c in self.store.iter_chunks(batch=8192, fields=[GROUP_FIELD])}

    def _delete_products(self, gone: Iterable[int]) -> int:
        """Delete every chunk of `gone`; returns how many chunks that removed."""
        ids = sorted(gone)
        if not ids:
            return 0
        before = self.store.count()
        self.store.delete_products(ids)
        return before - self.store.count()

    def _check_stop(self) -> None:
        """Between batches: stop for shutdown, and keep the lease of a long cycle."""
        if self._stop.is_set():
            raise CycleCancelledError("sync cycle stopped for shutdown")
        if self.lease is not None:
            self.lease.renew_if_due()

    @staticmethod
    def _fill(report: CycleReport, counts: ApplyCounts) -> CycleReport:
        report.products = counts.products
        report.embedded = counts.embedded
        report.loaded = counts.loaded
        report.skipped = counts.skipped
        report.payload_updates = counts.payload_updates
        report.sparse_rewrites = counts.sparse_rewrites
        report.deleted = counts.deleted
        return report
