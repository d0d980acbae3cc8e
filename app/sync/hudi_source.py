"""The products table as the sync sees it in one cycle, read natively with hudi-rs.

hudi 0.5.0 facts this module is built around (see DESIGN.md, "Facts verified"):
- incremental windows `(start, end]` select commits by *completion* time, while
  `HudiInstant.timestamp` is the *requested* time. Completion times only appear in the
  timeline file names `.hoodie/timeline/<requested>_<completed>.<action>`;
- a `HudiTable` caches its timeline when built, so each cycle builds a fresh one and pins
  `end` to the newest completion time *that table* can see;
- deleted rows are not returned by latest-state incremental reads; the commit metadata's
  `operationType` is how a window reveals that rows were removed.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
from hudi import HudiQueryType, HudiReadOptions, HudiTable, HudiTableBuilder

from app.core.catalog import COLUMN_NAMES, Product
from app.core.config import Settings

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


class TableReadError(Exception):
    """The table could not be opened or read (missing path, unreadable timeline, ...)."""

    def __init__(self, message: str, *, table: str) -> None:
        super().__init__(f"{message} (table={table})")
        self.table = table


@dataclass(frozen=True, slots=True)
class Instant:
    requested: str
    completed: str
    action: str


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

    def has_instant(self, requested: str, completed: str) -> bool:
        return any(i.requested == requested and i.completed == completed for i in self.instants)

    def window(self, start: str, end: str) -> list[Instant]:
        return [i for i in self.instants if start < i.completed <= end]

    def operations(self, instants: list[Instant]) -> list[str]:
        """Commit metadata's operationType per instant, e.g. UPSERT, DELETE."""
        ops = []
        for inst in instants:
            obj = self._instant_objs.get(inst.requested)
            if obj is None:
                continue
            meta: dict[str, Any] = json.loads(self._timeline.get_instant_metadata_in_json(obj))
            ops.append(str(meta.get("operationType") or "UNKNOWN"))
        return ops

    def read_window(self, start: str, end: str) -> pa.Table:
        """Latest state of the rows changed in `(start, end]` (completion time).

        `start="0"` gives the whole table as of `end`.
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
            yield [_product(r) for r in batch.to_pylist()]

    def read_keys(self) -> set[int]:
        """Every record key in the table's latest snapshot (as this table object sees it)."""
        try:
            batches = self.table.read(HudiReadOptions().with_projection(["id"]))
        except Exception as e:
            raise TableReadError(f"snapshot key read failed: {e}", table=self.path) from e
        return {int(v) for b in batches for v in b.column("id").to_pylist() if v is not None}


def _product(row: dict[str, Any]) -> Product:
    return Product(
        id=int(row["id"]),
        ts=int(row.get("ts") or 0),
        name=row.get("name") or "",
        description=row.get("description") or "",
        category=row.get("category"),
        brand=row.get("brand"),
        price=float(row["price"]) if row.get("price") is not None else None,
    )
