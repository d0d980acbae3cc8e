"""What the sync remembers (stored with the vectors) and what it reports."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any, Literal

CycleMode = Literal["bootstrap", "incremental", "full", "noop"]
# How an incremental cycle found removed products: not needed (no removing commit), by
# reading the file groups the removing commits wrote, or by comparing every key.
RemovalScanKind = Literal["none", "targeted", "full"]


@dataclass(frozen=True, slots=True)
class SyncCheckpoint:
    """Saved in the vector store after every completed cycle.

    `completed` is the completion time of the newest commit mirrored (hudi-rs windows are
    in completion time); `requested` identifies that instant so a later cycle can tell
    whether it is still on the active timeline. `signature` is the model + chunking setup:
    a change means every chunk id changes, so a full reconciliation. `chunks` is what the
    store held when the checkpoint was written: a store that holds none while its
    checkpoint says otherwise lost its vectors. `unindexed` counts points written since the
    search index was last built, so increments add up to an index build too.
    """

    completed: str
    requested: str
    table_path: str
    signature: str
    chunks: int = 0
    unindexed: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, raw: dict[str, Any] | None) -> SyncCheckpoint | None:
        if not raw or "completed" not in raw:
            return None
        return cls(
            completed=str(raw["completed"]),
            requested=str(raw.get("requested", "")),
            table_path=str(raw.get("table_path", "")),
            signature=str(raw.get("signature", "")),
            chunks=int(raw.get("chunks") or 0),
            unindexed=int(raw.get("unindexed") or 0),
        )


@dataclass
class CycleReport:
    mode: CycleMode
    start: str | None
    end: str | None
    reason: str = ""
    rows: int = 0
    products: int = 0
    embedded: int = 0
    loaded: int = 0  # new chunks whose vector came from VECTORS_TABLE_PATH (not embedded)
    skipped: int = 0
    payload_updates: int = 0
    sparse_rewrites: int = 0  # kept chunks whose BM25 vector was rewritten (a format change)
    deleted: int = 0
    key_reconciliation: bool = False  # every table key vs every stored id was compared
    removal_scan: RemovalScanKind = "none"
    removal_fallback: str = ""  # why a targeted scan was not sure (then key_reconciliation)
    optimized: bool = False
    seconds: float = 0.0


@dataclass
class SyncTotals:
    cycles: int = 0
    failures: int = 0
    embedded: int = 0
    loaded: int = 0
    skipped: int = 0
    deleted: int = 0
    payload_updates: int = 0
    full_reconciliations: int = 0
    key_reconciliations: int = 0
    targeted_removal_scans: int = 0
    last_report: CycleReport | None = None
    last_error: str | None = None
    last_success_at: float | None = None
    checkpoint: str | None = None
    table_latest: str | None = None
    # The oldest commit the index does not hold yet (completion time, as in the timeline)
    # and the same instant in epoch seconds; None when the checkpoint covers the table.
    oldest_unsynced: str | None = None
    unsynced_since: float | None = None
    # The sync lease (a Qdrant server only) as last claimed or found held by another.
    lease_holder: str | None = None
    lease_until: float | None = None

    def lag_seconds(self, now: float | None = None) -> float:
        """Age of the oldest table commit not yet searchable; 0 when none is waiting.

        Computed when asked, from the commit's own time, so it grows while a long cycle
        (a bootstrap) runs instead of holding what it was when the cycle started. A
        writer whose clock runs ahead of this one's could make it negative: 0 then.
        """
        if self.unsynced_since is None:
            return 0.0
        return max(0.0, (time.time() if now is None else now) - self.unsynced_since)


def instant_epoch(instant: str, *, utc: bool) -> float:
    """Epoch seconds of a Hudi instant time (yyyyMMddHHmmss, with SSS on Hudi 1.x).

    Args:
        utc: the table's timeline is in UTC (`hoodie.table.timeline.timezone=UTC`);
            otherwise it is the writer's local time, taken to be this process's zone. In
            the hour a DST fall-back repeats, the earlier reading is used.
    """
    naive = datetime.strptime(instant[:17].ljust(17, "0") + "000", "%Y%m%d%H%M%S%f")
    return naive.replace(tzinfo=UTC).timestamp() if utc else naive.timestamp()
