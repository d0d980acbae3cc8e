"""The products table as the sync sees it in one cycle, read natively with hudi-rs.

hudi 0.5.0 facts this module is built around (each also in README.md, Troubleshooting):
- incremental windows `(start, end]` select commits by *completion* time, while
  `HudiInstant.timestamp` is the *requested* time. Completion times only appear in the
  timeline file names `.hoodie/timeline/<requested>_<completed>.<action>`;
- a `HudiTable` caches its timeline when built, so each cycle builds a fresh one and pins
  `end` to the newest completion time *that table* can see;
- deleted rows are not returned by latest-state incremental reads; the commit metadata
  (`operationType`, and `numDeletes` in its write stats) is how a window reveals that rows
  were removed: `MERGE INTO ... THEN DELETE` and upserts carrying `_hoodie_is_deleted`
  commit as UPSERT with `numDeletes` > 0;
- an incremental read from "0" is not the table once commits are archived (it sees the
  active timeline only): the whole table is always read as a snapshot, streamed file
  slice by file slice so memory stays flat as the table grows.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
from hudi import HudiQueryType, HudiReadOptions, HudiTable, HudiTableBuilder

from app.core.catalog import COLUMN_NAMES, TIMELINE_TIMEZONE_KEY, Product
from app.core.config import Settings
from app.core.errors import RecommenderError
from app.sync.state import instant_epoch

logger = logging.getLogger(__name__)

_COMPLETED = re.compile(r"^(\d+)_(\d+)\.(commit|deltacommit|replacecommit)$")
# Operations that remove rows without returning them in an incremental read.
REMOVAL_OPERATIONS = frozenset(
    {
        "DELETE",
        "DELETE_PREPPED",
        "DELETE_PARTITION",
        "INSERT_OVERWRITE",
        "INSERT_OVERWRITE_TABLE",
    }
)
# Table services rewrite rows without changing them: their write stats may count deletes
# that an earlier (delta)commit already made, so they are not removals of their own.
_TABLE_SERVICES = frozenset({"COMPACT", "LOG_COMPACT", "CLUSTER"})


class TableReadError(RecommenderError):
    """The table could not be opened or read (missing path, unreadable timeline, ...)."""

    def __init__(self, message: str, *, table: str) -> None:
        super().__init__(f"{message} (table={table})")
        self.table = table


@dataclass(frozen=True, slots=True)
class Instant:
    requested: str
    completed: str
    action: str


@dataclass(frozen=True, slots=True)
class FileWrite:
    """One write stat: the file a commit wrote into one file group.

    `prev_commit` is the base instant of the slice the write built on ("null" for a new
    file group); for a Hudi 1.x MOR log append it is the delta commit's own instant.
    """

    partition: str
    file_id: str
    prev_commit: str
    path: str

    @property
    def group(self) -> tuple[str, str]:
        return self.partition, self.file_id

    @property
    def is_base_file(self) -> bool:
        return not self.path.rsplit("/", 1)[-1].startswith(".")


@dataclass(frozen=True, slots=True)
class CommitInfo:
    """What one commit's metadata says about the rows it changed."""

    instant: Instant
    operation: str
    deletes: int  # sum of numDeletes over its write stats
    replaced_file_groups: int  # partitionToReplaceFileIds (INSERT OVERWRITE, DELETE_PARTITION)
    # None when a stat lacks fileId/path: the targeted removal scan cannot trust it.
    writes: tuple[FileWrite, ...] | None = ()

    @property
    def removes_rows(self) -> bool:
        if self.operation in _TABLE_SERVICES:
            return False
        return (
            self.operation in REMOVAL_OPERATIONS
            or self.deletes > 0
            or self.replaced_file_groups > 0
        )

    def describe(self) -> str:
        return f"{self.operation}@{self.instant.completed} deletes={self.deletes}"


@dataclass(frozen=True, slots=True)
class WindowChanges:
    """The commits of a window `(start, end]`, read from their metadata before any row."""

    commits: list[CommitInfo] = field(default_factory=list)

    @property
    def removals(self) -> list[CommitInfo]:
        return [c for c in self.commits if c.removes_rows]


def _file_writes(stats: dict[str, Any]) -> tuple[FileWrite, ...] | None:
    writes = []
    for partition, per_partition in stats.items():
        for s in per_partition:
            if not s.get("fileId") or not s.get("path"):
                return None
            writes.append(
                FileWrite(
                    str(s.get("partitionPath") or partition or ""),
                    str(s["fileId"]),
                    str(s.get("prevCommit") or "null"),
                    str(s["path"]),
                )
            )
    return tuple(writes)


def storage_options(settings: Settings) -> dict[str, str]:
    """hudi-rs options for an s3:// (or s3a://) table; empty for a local path.

    hudi-rs hands these to Rust's object_store (AmazonS3Builder), whose config keys are
    `aws_region`, `aws_endpoint`, `aws_allow_http`, `aws_access_key_id` and
    `aws_secret_access_key`; unknown keys are dropped silently, so the names matter.
    """
    if not settings.hudi_table_path.startswith(("s3://", "s3a://")):
        return {}
    opts = {"aws_region": settings.aws_region}
    if settings.aws_endpoint_url:
        # object_store keeps its default path-style addressing (endpoint/bucket/key), the
        # style local S3-compatible servers serve and the one s3a is set to.
        opts["aws_endpoint"] = settings.aws_endpoint_url
    if _plain_http(settings):
        opts["aws_allow_http"] = "true"
    if settings.aws_access_key_id and settings.aws_secret_access_key:
        opts["aws_access_key_id"] = settings.aws_access_key_id.get_secret_value()
        opts["aws_secret_access_key"] = settings.aws_secret_access_key.get_secret_value()
    return opts


def _plain_http(settings: Settings) -> bool:
    """An http:// endpoint (a local MinIO or moto) is consent enough; AWS_ALLOW_HTTP also is."""
    endpoint = settings.aws_endpoint_url or ""
    return settings.aws_allow_http or endpoint.startswith("http://")


def _filesystem(settings: Settings) -> tuple[pafs.FileSystem, str]:
    """A pyarrow filesystem and in-filesystem path for listing the table's timeline."""
    path = settings.hudi_table_path
    if path.startswith(("s3://", "s3a://")):
        bucket_path = path.split("://", 1)[1]
        endpoint = settings.aws_endpoint_url
        keys = settings.aws_access_key_id, settings.aws_secret_access_key
        fs = pafs.S3FileSystem(
            region=settings.aws_region,
            # pyarrow wants host[:port] and the scheme apart.
            endpoint_override=endpoint.split("://", 1)[-1].rstrip("/") if endpoint else None,
            scheme="http" if _plain_http(settings) else "https",
            access_key=keys[0].get_secret_value() if keys[0] and keys[1] else None,
            secret_key=keys[1].get_secret_value() if keys[0] and keys[1] else None,
        )
        return fs, bucket_path
    local = path.removeprefix("file://")
    return pafs.LocalFileSystem(), local


class TableSnapshot:
    """One cycle's view of the table: a fresh HudiTable plus its completion-time timeline."""

    def __init__(self, settings: Settings) -> None:
        self.path = settings.hudi_table_path
        try:
            self.table: HudiTable = (
                HudiTableBuilder.from_base_uri(self.path)
                .with_storage_options(storage_options(settings))
                .build()
            )
            timeline = self.table.get_timeline()
            self._timeline = timeline
            # Requested time -> instant, for every completed write this table object sees.
            self._instant_objs = {
                i.timestamp: i
                for getter in (
                    timeline.get_completed_commits,
                    timeline.get_completed_deltacommits,
                    timeline.get_completed_replacecommits,
                )
                for i in getter()
            }
            listed = self._list_completed(settings)
            # Hudi's writers default to LOCAL when the key is absent; hudi-rs's own
            # `HudiTable.timezone` says "utc" then, so the property is read instead.
            zone = self.table.hudi_options().get(TIMELINE_TIMEZONE_KEY, "LOCAL")
            self.utc_timeline = zone.upper() == "UTC"
        except TableReadError:
            raise
        except Exception as e:  # hudi-rs raises its own HudiCoreError / OSError variants
            raise TableReadError(f"cannot open table: {e}", table=self.path) from e
        # Only instants the cached timeline knows: a commit that completed after the
        # HudiTable was built would be outside what this table object can read.
        self.instants = sorted(
            (i for i in listed if i.requested in self._instant_objs), key=lambda i: i.completed
        )

    def _list_completed(self, settings: Settings) -> list[Instant]:
        fs, base = _filesystem(settings)
        selector = pafs.FileSelector(f"{base.rstrip('/')}/.hoodie/timeline", recursive=False)
        out = []
        for info in fs.get_file_info(selector):
            m = _COMPLETED.match(info.base_name)
            if m:
                out.append(Instant(m.group(1), m.group(2), m.group(3)))
        if not out and not fs.get_file_info(f"{base.rstrip('/')}/.hoodie").type:
            raise TableReadError("not a Hudi table (no .hoodie folder)", table=self.path)
        return out

    @property
    def latest(self) -> Instant | None:
        return self.instants[-1] if self.instants else None

    def oldest_unsynced(self, checkpoint: str | None) -> Instant | None:
        """The oldest commit completed after `checkpoint`, or None if it covers the table.

        With no checkpoint (a bootstrap running or not yet started) nothing is searchable,
        so it is the oldest commit on the active timeline: the newest one's age would read
        as "seconds behind" while the whole catalog is missing for the hours a bootstrap
        takes. Commits archived before it are older still, but their times are not listed:
        on an archived table this is a lower bound.
        """
        if checkpoint is None:
            return self.instants[0] if self.instants else None
        return next((i for i in self.instants if i.completed > checkpoint), None)

    def completed_at(self, instant: Instant) -> float:
        """Epoch seconds of the instant's completion (the table's timeline time zone)."""
        return instant_epoch(instant.completed, utc=self.utc_timeline)

    def has_instant(self, requested: str, completed: str) -> bool:
        return any(i.requested == requested and i.completed == completed for i in self.instants)

    def window(self, start: str, end: str) -> list[Instant]:
        return [i for i in self.instants if start < i.completed <= end]

    def changes(self, start: str, end: str) -> WindowChanges:
        """Every commit completed in `(start, end]` with the counts its metadata records."""
        return WindowChanges([self._commit_info(i) for i in self.window(start, end)])

    def _commit_info(self, inst: Instant) -> CommitInfo:
        obj = self._instant_objs[inst.requested]
        try:
            meta: dict[str, Any] = json.loads(self._timeline.get_instant_metadata_in_json(obj))
        except Exception as e:  # a commit file archived or cleaned between listing and read
            raise TableReadError(
                f"cannot read commit metadata of {inst.requested}: {e}", table=self.path
            ) from e
        stats = meta.get("partitionToWriteStats") or {}
        deletes = sum(
            int(s.get("numDeletes") or 0) for per_partition in stats.values() for s in per_partition
        )
        replaced = sum(len(v) for v in (meta.get("partitionToReplaceFileIds") or {}).values())
        operation = str(meta.get("operationType") or "UNKNOWN")
        return CommitInfo(inst, operation, deletes, replaced, _file_writes(stats))

    def read_window(self, start: str, end: str) -> pa.Table:
        """Latest state of the rows changed in `(start, end]` (completion time).

        Only for windows on the active timeline; the whole table is `snapshot()`.
        (hudi-rs has no streamed incremental read yet, so a window is read at once.)
        """
        opts = (
            HudiReadOptions()
            .with_query_type(HudiQueryType.Incremental)
            .with_start_timestamp(start)
            .with_end_timestamp(end)
        )
        try:
            batches = self.table.read(opts)
        except Exception as e:
            raise TableReadError(
                f"incremental read ({start}, {end}] failed: {e}", table=self.path
            ) from e
        if not batches:
            return pa.table({c: pa.array([], pa.null()) for c in COLUMN_NAMES})
        table = pa.Table.from_batches(batches)
        present = [c for c in COLUMN_NAMES if c in table.column_names]
        return table.select(present)

    @staticmethod
    def products(rows: pa.Table, batch_rows: int) -> Iterator[list[Product]]:
        for batch in rows.to_batches(max_chunksize=batch_rows):
            yield [Product.from_row(r) for r in batch.to_pylist()]

    def _stream(
        self, columns: list[str], batch_rows: int, as_of: str | None
    ) -> Iterator[pa.RecordBatch]:
        """The snapshot this table object sees (or as of a requested time), batch by batch.

        `read_stream` reads one file slice at a time (base + logs merged for MOR), so peak
        memory is about one file slice, not the table.
        """
        opts = HudiReadOptions().with_projection(columns).with_batch_size(batch_rows)
        if as_of is not None:
            opts = opts.with_as_of_timestamp(as_of)
        try:
            yield from self.table.read_stream(opts)
        except Exception as e:
            raise TableReadError(f"snapshot read failed: {e}", table=self.path) from e

    def snapshot(self, batch_rows: int, *, as_of: str | None = None) -> Iterator[list[Product]]:
        """Every product of the snapshot, `batch_rows` at a time (see `_stream`)."""
        if self.latest is None:
            return
        columns = [c for c in COLUMN_NAMES if c in self._columns()]
        for batch in self._stream(columns, batch_rows, as_of):
            if batch.num_rows:
                yield [Product.from_row(r) for r in batch.to_pylist()]

    def _columns(self) -> set[str]:
        try:
            return set(self.table.get_schema().names)
        except Exception as e:
            raise TableReadError(f"cannot read the table schema: {e}", table=self.path) from e

    def read_keys(self) -> set[int]:
        """Every record key in the table's latest snapshot (as this table object sees it)."""
        if self.latest is None:
            return set()
        keys: set[int] = set()
        for batch in self._stream(["id"], 65_536, None):
            keys.update(int(v) for v in batch.column("id").to_pylist() if v is not None)
        return keys

    def group_keys(
        self, groups: set[tuple[str, str]], *, as_of: str | None
    ) -> dict[tuple[str, str], GroupSlice]:
        """The record keys of some file groups' slices, as of a requested time or latest.

        `as_of` is a *requested* time (hudi-rs picks the slice whose base instant is at
        or before it, and its file group reader skips log blocks written after it). A
        group with no slice then (not yet created, or its slice was cleaned) is absent.
        Only the named groups are read: this is what keeps a 1-product delete cheap.
        """
        opts = HudiReadOptions().with_projection(["id"])
        if as_of is not None:
            opts = opts.with_as_of_timestamp(as_of)
        out: dict[tuple[str, str], GroupSlice] = {}
        try:
            slices = self.table.get_file_slices(opts)
            wanted = [s for s in slices if (s.partition_path, s.file_id) in groups]
            if not wanted:
                return out
            reader = self.table.create_file_group_reader_with_options(opts)
            for s in wanted:
                batch = reader.read_file_slice(s, opts)
                keys = {int(v) for v in batch.column("id").to_pylist() if v is not None}
                out[(s.partition_path, s.file_id)] = GroupSlice(s.creation_instant_time, keys)
        except Exception as e:
            raise TableReadError(
                f"file group read (as of {as_of or 'latest'}) failed: {e}", table=self.path
            ) from e
        return out


@dataclass(frozen=True, slots=True)
class GroupSlice:
    """One file group's slice at some time: its base instant and the keys it holds."""

    base_instant: str
    keys: set[int]
