"""The targeted removal scan (app/sync/removals.py) on the committed Spark tables, no JVM.

History of the fixtures is in tests/fixtures/tables/make_tables.py; what matters here is
the end of their active timelines (requested_completed, from `.hoodie/timeline/`):
- cow_aged: 033534064 UPSERT, 033543704 UPSERT (edit), 033549130 DELETE (id 7),
  033553120 MERGE INTO ... THEN DELETE (UPSERT, id 8); cleaning kept the base files of the
  last three commits only.
- mor_aged: 033652040 DELETE (id 7, delete block in a log file), 033655516 compaction,
  033657375 MERGE INTO ... THEN DELETE (id 8, log file).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from app.core.config import Settings
from app.sync.hudi_source import TableSnapshot
from app.sync.removals import RemovalScan, scan_removals
from tests.fixtures.tables.make_tables import DELETED_ID, HERE, MERGE_DELETED_ID


def _table(name: str, tmp_path: Path) -> TableSnapshot:
    dest = tmp_path / name  # a copy: nothing a test does touches the committed files
    shutil.copytree(HERE / name, dest)
    return TableSnapshot(Settings(hudi_table_path=str(dest), qdrant_path=":memory:"))


def _scan(table: TableSnapshot, back: int, window_ids: frozenset[int] = frozenset()) -> RemovalScan:
    """Scan from a checkpoint `back` commits before the first removing commit on the
    active timeline (0: at that commit), to the table's end."""
    end = table.latest
    assert end is not None
    active = table.changes("0", end.completed).commits
    first = next(k for k, c in enumerate(active) if c.removes_rows)
    cp = active[first - back].instant
    changes = table.changes(cp.completed, end.completed)
    assert changes.removals
    return scan_removals(table, cp.requested, cp.completed, changes, set(window_ids))


def test_cow_both_deletes_found_from_one_file_group(tmp_path: Path) -> None:
    scan = _scan(_table("cow_aged", tmp_path), 1)
    assert scan.removed == frozenset({DELETED_ID, MERGE_DELETED_ID}), scan
    assert scan.file_groups == 1


def test_a_key_rewritten_in_the_window_is_not_removed(tmp_path: Path) -> None:
    scan = _scan(_table("cow_aged", tmp_path), 1, frozenset({DELETED_ID}))
    assert scan.removed == frozenset({MERGE_DELETED_ID}), scan


def test_cow_checkpoint_slice_cleaned_is_not_trusted(tmp_path: Path) -> None:
    table = _table("cow_aged", tmp_path)
    scan = _scan(table, 2)  # its base file was cleaned
    assert scan.removed is None and "not found" in scan.reason, scan


def test_mor_delete_in_a_log_file_with_compaction_in_the_window(tmp_path: Path) -> None:
    scan = _scan(_table("mor_aged", tmp_path), 0)
    assert scan.removed == frozenset({MERGE_DELETED_ID}), scan
