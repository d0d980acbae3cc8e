"""Closed segments to object storage, for EVENTS_DIR=s3://bucket/prefix.

The log still writes and fsyncs locally (a 202 must not wait on a network store), in a
spool folder; a closed segment is uploaded whole as `prefix/<name>.jsonl` and only then
deleted from the spool. An S3 object appears complete or not at all, so readers
(`spark_jobs.ingest_events --events s3://…`) never see part of one, as with the local
rename. A failed upload stays in the spool and is retried at the next close or sweep; an
upload repeated after a crash between upload and delete writes the same bytes to the same
key, and the interactions table is keyed by `event_id` in any case.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

from prometheus_client import Counter

from app.core.config import Settings
from app.events.log import SUFFIX

logger = logging.getLogger(__name__)

SEGMENTS_SHIPPED = Counter("events_segments_shipped", "Closed event segments uploaded.")
SHIP_FAILURES = Counter(
    "events_ship_failures", "Uploads of closed event segments that failed (retried later)."
)


def is_object_store(events_dir: str) -> bool:
    return events_dir.startswith(("s3://", "s3a://"))


def split_s3_url(url: str) -> tuple[str, str]:
    """`s3://bucket/a/b` → (`bucket`, `a/b`); the prefix has no trailing slash."""
    bucket, _, prefix = url.split("://", 1)[1].partition("/")
    if not bucket:
        raise ValueError(f"EVENTS_DIR {url!r} names no bucket")
    return bucket, prefix.strip("/")


def s3_client(settings: Settings) -> Any:
    """A boto3 S3 client for the endpoint and credentials the tables use."""
    import boto3  # only a service that ships to S3 pays for the import
    from botocore.config import Config

    key, secret = settings.aws_access_key_id, settings.aws_secret_access_key
    return boto3.client(
        "s3",
        endpoint_url=settings.aws_endpoint_url,
        region_name=settings.aws_region,
        aws_access_key_id=key.get_secret_value() if key and secret else None,
        aws_secret_access_key=secret.get_secret_value() if key and secret else None,
        # Few quick retries: the shipper retries the whole upload at its next round anyway.
        config=Config(retries={"max_attempts": 2, "mode": "standard"}, connect_timeout=5),
    )


class SegmentShipper:
    """Uploads every closed segment in `spool` to `target` (s3://bucket/prefix), in a thread.

    `wake()` after a segment closes; it also runs every `retry_seconds`, which retries
    failures and ships what a previous run left in the spool.
    """

    def __init__(self, spool: Path, target: str, client: Any, retry_seconds: float) -> None:
        self.spool = spool
        self.bucket, self.prefix = split_s3_url(target)
        self.client = client
        self.retry_seconds = retry_seconds
        self._wake = threading.Event()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="event-shipper", daemon=True)
        self._thread.start()

    def wake(self) -> None:
        self._wake.set()

    def close(self) -> None:
        """Stop, then ship what is closed now (one last try: a failure stays in the spool)."""
        self._stopping = True
        self._wake.set()
        self._thread.join()
        self.ship()

    def _run(self) -> None:
        while not self._stopping:
            self.ship()  # first at start: what an earlier run left in the spool
            self._wake.wait(self.retry_seconds)
            self._wake.clear()

    def ship(self) -> int:
        """Upload and remove each closed segment; returns how many were shipped."""
        shipped = 0
        for path in sorted(self.spool.glob(f"*{SUFFIX}")):
            key = f"{self.prefix}/{path.name}" if self.prefix else path.name
            try:
                self.client.upload_file(str(path), self.bucket, key)
            except FileNotFoundError:
                continue  # another process on this host shipped it first
            except Exception as e:  # boto3 raises many kinds; all are retried
                SHIP_FAILURES.inc()
                logger.warning("event log: uploading %s failed (retried later): %s", path.name, e)
                return shipped  # the store is likely down: try the rest later
            path.unlink(missing_ok=True)
            SEGMENTS_SHIPPED.inc()
            shipped += 1
        return shipped
