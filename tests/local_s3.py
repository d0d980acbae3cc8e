"""A local S3 server (moto, in this process) with a fresh bucket, for tables on object storage."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from app.core.ports import free_port

KEY, SECRET, REGION = "testing-key", "testing-secret", "us-east-1"


@dataclass(frozen=True)
class LocalS3:
    endpoint: str
    bucket: str

    def settings(self) -> dict[str, Any]:
        """The Settings fields that point Spark and hudi-rs at this server."""
        return {
            "aws_endpoint_url": self.endpoint,
            "aws_region": REGION,
            "aws_access_key_id": KEY,
            "aws_secret_access_key": SECRET,
            "aws_allow_http": True,
        }

    def env(self) -> dict[str, str]:
        """The same as environment variables, for a job or a syncer run as a process."""
        return {
            f"AWS_{k[4:].upper()}": str(v).lower() if v is True else str(v)
            for k, v in self.settings().items()
        }

    def client(self) -> Any:
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            region_name=REGION,
            aws_access_key_id=KEY,
            aws_secret_access_key=SECRET,
        )


@contextmanager
def start_local_s3() -> Iterator[LocalS3]:
    from moto.server import ThreadedMotoServer

    # Its server logs every request at INFO: hundreds per Hudi commit in a failure's output.
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    # A fresh bucket name each time: Hadoop caches one S3AFileSystem per bucket in a
    # shared JVM, and a cached one would still point at a previous (stopped) server.
    s3 = LocalS3(f"http://127.0.0.1:{port}", f"lake-{uuid.uuid4().hex[:12]}")
    s3.client().create_bucket(Bucket=s3.bucket)
    try:
        yield s3
    finally:
        server.stop()
