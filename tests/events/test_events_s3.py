"""EVENTS_DIR=s3://bucket/prefix against a local S3 server (moto) started here.

A live service (real HTTP) spools its segments locally and uploads each closed one; the
lakehouse test reads them from S3 with `spark_jobs.ingest_events` into the interactions
table (hudi-rs): every acknowledged event once. The outage test stops the S3 server while
the service takes events: they are still acknowledged (fsynced in the spool), the failed
uploads are counted, and a server back on the same port receives them all.
"""

from __future__ import annotations

import json
import logging
import shutil
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pytest
from hudi import HudiReadOptions, HudiTableBuilder

from app.core.config import Settings
from app.core.ports import free_port
from app.embedding import Embedder
from tests.demo_index import build_demo_shard
from tests.live_server import ServerThread
from tests.local_s3 import LocalS3
from tests.synctools import wait_for

pytestmark = pytest.mark.slow

moto_server = pytest.importorskip("moto.server", reason="moto[server] is a dev dependency")

SECRET = "events-s3-test-secret-0123456789"


class S3Server:
    """A moto server on a fixed local port that can be stopped and started again."""

    def __init__(self) -> None:
        logging.getLogger("werkzeug").setLevel(logging.WARNING)  # a line per request
        self.port = free_port()
        # A fresh bucket name: Hadoop caches one S3AFileSystem per bucket in the shared JVM.
        self.s3 = LocalS3(f"http://127.0.0.1:{self.port}", f"events-{uuid.uuid4().hex[:12]}")
        self.bucket = self.s3.bucket
        self.server: Any = None

    def start(self) -> None:
        self.server = moto_server.ThreadedMotoServer(
            ip_address="127.0.0.1", port=self.port, verbose=False
        )
        self.server.start()
        client = self.client()
        # moto keeps its state in the process: a restarted server still has the bucket.
        if self.bucket not in {b["Name"] for b in client.list_buckets()["Buckets"]}:
            client.create_bucket(Bucket=self.bucket)

    def stop(self) -> None:
        self.server.stop()

    def settings(self) -> dict[str, Any]:
        return self.s3.settings()

    def client(self) -> Any:
        return self.s3.client()

    def events(self, prefix: str) -> list[dict[str, Any]]:
        """Every event line in the objects under `prefix/`."""
        client = self.client()
        listed = client.list_objects_v2(Bucket=self.bucket, Prefix=f"{prefix}/")
        return [
            json.loads(line)
            for obj in sorted(listed.get("Contents", []), key=lambda o: o["Key"])
            for line in client.get_object(Bucket=self.bucket, Key=obj["Key"])["Body"]
            .read()
            .decode()
            .splitlines()
        ]


@pytest.fixture
def s3() -> Iterator[S3Server]:
    server = S3Server()
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def serve(
    embedder: Embedder, s3: S3Server, tmp_path: Path
) -> Callable[[], tuple[ServerThread, Settings]]:
    """Builds the demo shard once; each call a service writing events to s3://bucket/events."""
    settings = Settings(
        data_dir=str(tmp_path),
        model_cache_dir=Settings().model_cache_dir,
        sync_mode="off",
        conversation_secret=SECRET,
        events_dir=f"s3://{s3.bucket}/events",
        events_segment_seconds=0.5,
        events_flush_seconds=0.1,
        **s3.settings(),
    )
    build_demo_shard(tmp_path / "build", embedder, settings, every=10)
    shutil.copytree(tmp_path / "build", tmp_path / "qdrant")
    return lambda: (ServerThread(settings), settings)


def post_events(client: httpx.Client, count: int, tag: str) -> set[str]:
    rid = client.post("/search", json={"query": "yoga mat"}).json()["recommendation_id"]
    r = client.post(
        "/events",
        json={
            "events": [
                {
                    "type": "click",
                    "product_id": 7,
                    "recommendation_id": rid,
                    "event_id": f"{tag}-{i}",
                }
                for i in range(count)
            ]
        },
    )
    assert r.status_code == 202, r.text
    return {*r.json()["event_ids"], rid}  # the clicks and the search's impression


def spooled(settings: Settings) -> list[Path]:
    return sorted(Path(settings.events_spool_dir).glob("*.jsonl"))


def metric(client: httpx.Client, name: str) -> float:
    for line in client.get("/metrics").text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return 0.0


def test_an_outage_of_the_store_loses_no_acknowledged_event(
    s3: S3Server, serve: Callable[[], tuple[ServerThread, Settings]]
) -> None:
    server, settings = serve()
    with server, httpx.Client(base_url=server.url, timeout=60) as client:
        before = post_events(client, 3, "up")
        wait_for(
            "the first events uploaded",
            lambda: {e["event_id"] for e in s3.events("events")} >= before,
            60,
        )
        failures = metric(client, "events_ship_failures_total")

        s3.stop()
        during = post_events(client, 4, "down")  # 202: fsynced in the spool
        wait_for("a closed segment waiting in the spool", lambda: spooled(settings), 60)
        wait_for(
            "the failed upload counted",
            lambda: metric(client, "events_ship_failures_total") > failures,
            60,
        )

        s3.start()  # the same endpoint again
        wait_for(
            "the spooled events uploaded once the store is back",
            lambda: {e["event_id"] for e in s3.events("events")} >= during,
            60,
        )
    ids = [e["event_id"] for e in s3.events("events")]
    assert sorted(ids) == sorted(set(ids)) and set(ids) == before | during, "each once"
    assert spooled(settings) == [], "every closed segment left the spool after its upload"


@pytest.mark.spark
def test_events_from_s3_into_the_interactions_table_once(
    spark: Any, s3: S3Server, serve: Callable[[], tuple[ServerThread, Settings]], tmp_path: Path
) -> None:
    from spark_jobs.ingest_events import run_ingest_events
    from spark_jobs.session import configure_s3a

    server, settings = serve()
    with server, httpx.Client(base_url=server.url, timeout=60) as client:
        acked = post_events(client, 5, "a") | post_events(client, 2, "b")
        # A retry of acknowledged ids: the table keeps each once.
        acked |= post_events(client, 5, "a")
    # The service stopped: its last segment is closed and shipped before shutdown ends.
    assert {e["event_id"] for e in s3.events("events")} >= acked
    assert spooled(settings) == []

    configure_s3a(spark, settings)
    table, checkpoint = tmp_path / "interactions", tmp_path / "checkpoint"
    first = run_ingest_events(spark, f"s3://{s3.bucket}/events", str(table), str(checkpoint))
    second = run_ingest_events(spark, f"s3://{s3.bucket}/events", str(table), str(checkpoint))
    assert first.files >= 1 and second.batches == 0

    hudi = HudiTableBuilder.from_base_uri(str(table)).build()
    rows = pa.Table.from_batches(hudi.read(HudiReadOptions())).to_pylist()
    ids = [r["event_id"] for r in rows]
    assert sorted(ids) == sorted(set(ids)), "each event once"
    assert set(ids) == acked
