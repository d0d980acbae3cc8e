"""One sync cycle: table (checkpoint, end] -> chunks -> embeddings -> store -> checkpoint.

The mirror invariant this keeps: after a completed cycle at checkpoint C, the store holds
exactly the chunks of the table snapshot at C (0 missing, 0 stale, 0 extra).

Crash safety comes from ordering and idempotence, not transactions: vectors are written
and acknowledged before the checkpoint moves; chunk ids are keyed by content, so replaying
a window after a crash re-embeds only what did not land and deletes what is stale.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable

from app.core.config import Settings
from app.embedding import Embedder
from app.store.base import GROUP_FIELD, VectorStore
from app.sync.apply import ApplyCounts, ChunkApplier, group_by_product
from app.sync.chunking import ProductChunker
from app.sync.hudi_source import REMOVAL_OPERATIONS, TableSnapshot
from app.sync.lock import SyncLock
from app.sync.progress import Progress
from app.sync.state import CycleMode, CycleReport, SyncCheckpoint, SyncTotals

logger = logging.getLogger(__name__)

# Products handled per embed/upsert round; also the progress granularity.
PRODUCT_BATCH = 512
# After a bulk load this large, build the search index (HNSW) before declaring the cycle
# done: exact search over 200k points is ~2-10x slower, and the first cycle is the one
# /ready waits for anyway. Smaller loads are searched exactly, which is fast enough.
OPTIMIZE_AFTER_EMBEDDED = 20_000


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
        self.applier = ChunkApplier(store, embedder, self.chunker)
        self._open_table = open_table
        self.totals = SyncTotals()
        # One cycle at a time inside this process (background loop vs POST /sync).
        self._cycle_lock = threading.Lock()
        # ... and across processes (an API with SYNC_MODE=embedded vs `app.sync --loop`).
        self._process_lock = SyncLock.for_settings(settings)
        store.ensure_collection(embedder.dim)
        cp = self.checkpoint()
        self.totals.checkpoint = cp.completed if cp else None

    def wait_idle(self, timeout: float) -> bool:
        """Wait for a running cycle to finish (shutdown must not close the store under it)."""
        if self._cycle_lock.acquire(timeout=timeout):
            self._cycle_lock.release()
            return True
        return False

    def checkpoint(self) -> SyncCheckpoint | None:
        return SyncCheckpoint.from_dict(self.store.load_state())

    def run_cycle(self, *, full: bool = False) -> CycleReport:
        with self._cycle_lock, self._held():
            try:
                report = self._cycle(full=full)
            except Exception as e:
                self.totals.failures += 1
                self.totals.last_error = f"{type(e).__name__}: {e}"
                raise
            self._record(report)
            return report

    def _held(self) -> contextlib.AbstractContextManager[None]:
        return self._process_lock.hold() if self._process_lock else contextlib.nullcontext()

    def _record(self, report: CycleReport) -> None:
        t = self.totals
        t.cycles += 1
        t.embedded += report.embedded
        t.skipped += report.skipped
        t.deleted += report.deleted
        t.payload_updates += report.payload_updates
        t.full_reconciliations += report.mode in ("bootstrap", "full")
        t.key_reconciliations += report.key_reconciliation
        t.last_report = report
        t.last_error = None
        t.last_success_at = time.time()
        t.checkpoint = report.end or t.checkpoint

    def _cycle(self, *, full: bool) -> CycleReport:
        started = time.monotonic()
        table = self._open_table(self.settings)
        latest = table.latest
        self.totals.table_latest = latest.completed if latest else None
        cp = self.checkpoint()
        end = latest.completed if latest else None

        reason = self._needs_full(cp, table, full)
        if reason:
            report = self._full(table, end, reason, bootstrap=cp is None)
            if report.embedded >= OPTIMIZE_AFTER_EMBEDDED:
                self.store.optimize()
        elif cp is None or end is None or end <= cp.completed:
            report = CycleReport("noop", cp.completed if cp else None, end)
        else:
            report = self._incremental(table, cp.completed, end)

        if latest is not None and report.mode != "noop":
            self.store.save_state(
                SyncCheckpoint(
                    completed=latest.completed,
                    requested=latest.requested,
                    table_path=self.settings.hudi_table_path,
                    signature=self.chunker.signature,
                ).to_dict()
            )
        report.seconds = time.monotonic() - started
        logger.info(
            "sync %s (%s, %s]: rows %d, embedded %d, skipped %d, deleted %d, payload %d in %.2fs%s",
            report.mode,
            report.start,
            report.end,
            report.rows,
            report.embedded,
            report.skipped,
            report.deleted,
            report.payload_updates,
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
        mode: CycleMode = "bootstrap" if bootstrap else "full"
        logger.info("sync %s: %s", mode, reason)
        report = CycleReport(mode, "0", end, reason=reason)
        existing = group_by_product(self.store.iter_chunks())
        seen: set[int] = set()
        totals = ApplyCounts()
        if end is not None:
            rows = table.read_window("0", end)
            report.rows = rows.num_rows
            progress = Progress(logger, f"sync {mode}", rows.num_rows)
            for batch in table.products(rows, PRODUCT_BATCH):
                seen.update(p.id for p in batch)
                totals.add(self.applier.apply(batch, existing))
                progress.advance(len(batch))
        gone = [pid for pid in existing if pid not in seen]
        if gone:
            self.store.delete_products(gone)
            totals.deleted += sum(len(existing[pid]) for pid in gone)
        return self._fill(report, totals)

    def _incremental(self, table: TableSnapshot, start: str, end: str) -> CycleReport:
        report = CycleReport("incremental", start, end)
        totals = ApplyCounts()
        rows = table.read_window(start, end)
        report.rows = rows.num_rows
        progress = Progress(logger, "sync incremental", rows.num_rows)
        for batch in table.products(rows, PRODUCT_BATCH):
            existing = group_by_product(self.store.chunks_for_products([p.id for p in batch]))
            totals.add(self.applier.apply(batch, existing))
            progress.advance(len(batch))

        ops = table.operations(table.window(start, end))
        removals = sorted(set(ops) & REMOVAL_OPERATIONS)
        if removals:
            # Deleted rows are not returned by the incremental read: compare keys instead.
            report.key_reconciliation = True
            report.reason = f"key reconciliation after {', '.join(removals)}"
            keys = table.read_keys()
            stored = group_by_product(self.store.iter_chunks(fields=[GROUP_FIELD]))
            gone = [pid for pid in stored if pid not in keys]
            if gone:
                self.store.delete_products(gone)
                totals.deleted += sum(len(stored[pid]) for pid in gone)
        return self._fill(report, totals)

    @staticmethod
    def _fill(report: CycleReport, counts: ApplyCounts) -> CycleReport:
        report.products = counts.products
        report.embedded = counts.embedded
        report.skipped = counts.skipped
        report.payload_updates = counts.payload_updates
        report.deleted = counts.deleted
        return report
