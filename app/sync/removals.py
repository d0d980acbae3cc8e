"""Which products a window's removing commits took out, read from the file groups they wrote.

Latest-state incremental reads never return removed rows. Instead of comparing every key
of the table with every id in the store (seconds at 100k products), this reads only the
file groups named in the removing commits' write stats (`fileId`, `partitionPath`):

    removed = keys those groups held at the checkpoint
              - keys they hold at the window's end
              - ids among the window's changed rows

The last term covers a row that moved to another file group in the window: it was
rewritten there, so the incremental read returns it. The record key is the table's
primary key (upserts, one location per key), so a key held at the checkpoint by a group
the window did not touch is still where it was.

Whenever this cannot be sure, `scan_removals` answers `removed=None` with the reason and
the caller reconciles every key, as before: file groups replaced in the window (INSERT
OVERWRITE, DELETE_PARTITION, clustering), write stats without file ids, requested and
completion order that disagree around the checkpoint (time travel is by requested time),
a group's slice at the checkpoint no longer on storage (cleaned) or not the one the
window's first write built on, a checkpoint without its requested time, any read error.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from app.sync.hudi_source import (
    FileWrite,
    GroupSlice,
    TableReadError,
    TableSnapshot,
    WindowChanges,
)

logger = logging.getLogger(__name__)

# Operations that swap whole file groups for new ones (partitionToReplaceFileIds).
_REPLACING = frozenset(
    {"INSERT_OVERWRITE", "INSERT_OVERWRITE_TABLE", "DELETE_PARTITION", "CLUSTER"}
)


@dataclass(frozen=True, slots=True)
class RemovalScan:
    """The answer of a targeted scan: the removed ids, or None and why not."""

    removed: frozenset[int] | None
    reason: str
    file_groups: int = 0  # how many file groups were read (at the checkpoint and at end)


def scan_removals(
    table: TableSnapshot,
    checkpoint_requested: str,
    checkpoint_completed: str,
    changes: WindowChanges,
    window_ids: set[int],
) -> RemovalScan:
    """Products removed in the window `(checkpoint_completed, latest]`, by file group.

    Args:
        table: the cycle's table; its latest snapshot is the window's end.
        checkpoint_requested: requested time of the checkpoint's instant (time travel key).
        checkpoint_completed: completion time of that instant (the window's start).
        changes: the window's commits, with their write stats.
        window_ids: ids of the rows the window's incremental read returned.
    """
    why = _unsafe(table, checkpoint_requested, checkpoint_completed, changes)
    if why:
        return RemovalScan(None, why)
    writes = [w for c in changes.commits for w in (c.writes or ())]
    groups = {w.group for c in changes.removals for w in (c.writes or ())}
    if not groups:
        return RemovalScan(None, "removing commits name no file group")
    try:
        before = table.group_keys(groups, as_of=checkpoint_requested)
        after = table.group_keys(groups, as_of=None)
    except TableReadError as e:
        return RemovalScan(None, f"file group read failed: {e}")
    for group in sorted(groups):
        first = next(w for w in writes if w.group == group)
        why = _slice_mismatch(group, first, before.get(group))
        if why:
            return RemovalScan(None, why)
    held = set().union(*(s.keys for s in before.values())) if before else set()
    kept = set().union(*(s.keys for s in after.values())) if after else set()
    removed = frozenset(held - kept - window_ids)
    return RemovalScan(removed, f"{len(groups)} file group(s), {len(removed)} removed", len(groups))


def _unsafe(table: TableSnapshot, requested: str, completed: str, changes: WindowChanges) -> str:
    """Why the window cannot be scanned by file group, or ""."""
    if not requested:
        return "checkpoint has no requested time"
    for c in changes.commits:
        replacing = c.operation in _REPLACING or c.replaced_file_groups > 0
        if replacing or c.instant.action == "replacecommit":
            return f"{c.operation}@{c.instant.completed} replaced file groups"
        if c.writes is None:
            return f"{c.operation}@{c.instant.completed}: write stats without fileId/path"
    # Time travel picks slices by requested time, windows are by completion time: the
    # two agree on what "at the checkpoint" means only if no instant completed on the
    # other side of it than it was requested (concurrent writers, async table services).
    for i in table.instants:
        if (i.requested <= requested) != (i.completed <= completed):
            return f"instant {i.requested} requested and completed on both sides of the checkpoint"
    return ""


def _slice_mismatch(
    group: tuple[str, str], first: FileWrite, at_checkpoint: GroupSlice | None
) -> str:
    """Why the group's slice at the checkpoint is not the one the window built on, or ""."""
    name = "/".join(p for p in group if p)
    created = first.is_base_file and first.prev_commit == "null"
    if at_checkpoint is None:
        # Absent at the checkpoint: fine only for a group the window created.
        return "" if created else f"file group {name}: slice at the checkpoint not found (cleaned?)"
    if created:
        return f"file group {name}: created in the window but present at the checkpoint"
    # A base-file write names the slice it merged (COW, MOR compaction); a Hudi 1.x log
    # append names only itself, and then presence is the check (cleaning removes a whole
    # slice, oldest first, so an older slice cannot stand in for a cleaned one).
    if first.is_base_file and first.prev_commit != at_checkpoint.base_instant:
        return (
            f"file group {name}: slice at the checkpoint is {at_checkpoint.base_instant}, "
            f"the window built on {first.prev_commit} (cleaned?)"
        )
    return ""
