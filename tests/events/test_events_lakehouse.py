"""Shoppers' events into the lakehouse and back, with the real parts: two API processes
(uvicorn subprocesses) write events into one EVENTS_DIR, one is killed with SIGKILL while
its client is sending; `ingest_events --once` runs twice (Spark, Hudi); the interactions
table (read with hudi-rs) holds every acknowledged event exactly once and nothing of a
rejected request. `product_signals` then writes decayed counts into the products table and
one sync cycle mirrors them as payload: 0 embeddings, `--verify` 0/0/0.
"""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pytest
from hudi import HudiReadOptions, HudiTableBuilder
from pyspark.sql import functions as F

from app.core.config import Settings
from app.events.records import COLUMNS
from app.store import open_store
from spark_jobs.create_table import create_table
from spark_jobs.events_retention import drop_expired
from spark_jobs.ingest_events import run_ingest_events
from spark_jobs.interactions import utc_day, write
from spark_jobs.product_signals import run_product_signals
from spark_jobs.upsert_products import upsert_rows
from tests.hudi_writes import spark_rows
from tests.live_server import ApiProcess, ServerThread
from tests.synctools import product, sync_cli_in_process

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SECRET = "lakehouse-events-secret-0123456789"
PRODUCTS = [
    product(1, 100, "Trail Running Shoes", "Grippy shoes for muddy trails.", category="sports"),
    product(2, 100, "Road Running Shoes", "Light shoes for road races.", category="sports"),
    product(3, 100, "Swim Headphones", "Waterproof headphones for lap swimming.", price=59.0),
    product(4, 100, "Gooseneck Kettle", "A pour-over kettle.", category="kitchen"),
]


class Sender(threading.Thread):
    """Posts batches of three clicks with client event ids until stopped or cut off."""

    def __init__(self, api: ApiProcess, name: str, rid: str, product_ids: list[int]) -> None:
        super().__init__(daemon=True)
        self.api, self.name, self.rid, self.product_ids = api, name, rid, product_ids
        self.acked: set[str] = set()
        self.unanswered: set[str] = set()  # sent, no answer: stored or not, both are right
        self.stop = threading.Event()
        self.sent = 0

    def run(self) -> None:
        with httpx.Client(base_url=self.api.url, timeout=30) as client:
            while not self.stop.is_set():
                ids = [f"{self.name}-{self.sent}-{i}" for i in range(3)]
                batch = [
                    {
                        "type": "click" if i < 2 else "purchase",
                        "product_id": self.product_ids[(self.sent + i) % len(self.product_ids)],
                        "recommendation_id": self.rid,
                        "event_id": eid,
                    }
                    for i, eid in enumerate(ids)
                ]
                self.sent += 1
                try:
                    r = client.post("/events", json={"events": batch})
                except httpx.TransportError:
                    self.unanswered.update(f"c:{e}" for e in ids)
                    return
                assert r.status_code == 202, r.text
                self.acked.update(r.json()["event_ids"])


def read_interactions(path: Path) -> list[dict[str, Any]]:
    table = HudiTableBuilder.from_base_uri(str(path)).build()
    rows: list[dict[str, Any]] = pa.Table.from_batches(table.read(HudiReadOptions())).to_pylist()
    return rows


@pytest.fixture
def lakehouse(spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> Any:
    table = tmp_path / "products"
    create_table(spark, str(table))
    upsert_rows(spark, str(table), PRODUCTS)
    env = {
        "DATA_DIR": str(tmp_path / "data"),
        "HUDI_TABLE_PATH": str(table),
        "QDRANT_PATH": str(tmp_path / "edge"),
        "MODEL_CACHE_DIR": Settings().model_cache_dir,
    }
    code, out = sync_cli_in_process(["--once"], env, monkeypatch, capsys)
    assert code == 0 and "embedded 4" in out, out
    return table, env


def test_events_exactly_once_into_the_lakehouse_and_back_as_signals(
    spark: Any,
    lakehouse: tuple[Path, dict[str, str]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: Any,
) -> None:
    table, sync_env = lakehouse
    events_dir = tmp_path / "events"
    apis = []
    for name in ("a", "b"):
        shutil.copytree(tmp_path / "edge", tmp_path / f"edge-{name}")
        env = {
            "DATA_DIR": str(tmp_path / f"data-{name}"),
            "HUDI_TABLE_PATH": str(table),
            "QDRANT_PATH": str(tmp_path / f"edge-{name}"),
            "MODEL_CACHE_DIR": Settings().model_cache_dir,
            "SYNC_MODE": "off",
            "EVENTS_DIR": str(events_dir),
            "EVENTS_SEGMENT_SECONDS": "1",
            "CONVERSATION_SECRET": SECRET,
            "HF_HUB_OFFLINE": "1",
            "OPENAI_API_KEY": "",
        }
        apis.append(ApiProcess(env, tmp_path / f"api-{name}.log"))
    try:
        for api in apis:
            api.wait("/ready", 900)
        answers = [
            httpx.post(api.url + "/recommend", json={"query": "running shoes"}, timeout=60).json()
            for api in apis
        ]
        rids = [a["recommendation_id"] for a in answers]
        # Sold through b, credited to a's answer: ids are checked by signature, any replica.
        senders = [
            Sender(api, name, rids[0], [1, 2, 3]) for api, name in zip(apis, "ab", strict=True)
        ]
        for s in senders:
            s.start()
        while min(s.sent for s in senders) < 15:
            time.sleep(0.05)
        apis[0].proc.kill()  # SIGKILL while its sender is mid-stream
        apis[0].proc.wait(30)
        senders[0].join(30)
        while senders[1].sent < senders[0].sent + 10:
            time.sleep(0.05)
        senders[1].stop.set()
        senders[1].join(30)
        with httpx.Client(base_url=apis[1].url, timeout=30) as b:
            # A client retry of events already acknowledged: stored once.
            retried = sorted(senders[1].acked)[:3]
            again = [
                {"type": "click", "product_id": 1, "event_id": e.removeprefix("c:")}
                for e in retried
            ]
            assert b.post("/events", json={"events": again}).status_code == 202
            # Sales the shop feeds back from its own systems (no answer to name).
            sales = [{"type": "purchase", "product_id": 2} for _ in range(6)]
            sold = b.post("/events", json={"events": sales})
            assert sold.status_code == 202
            senders[1].acked.update(sold.json()["event_ids"])
            # A rejected request: nothing of it is kept.
            bad = [
                {"type": "click", "product_id": 1, "event_id": "rejected-1"},
                {"type": "click", "product_id": 1, "recommendation_id": rids[1][:-3] + "xyz"},
            ]
            assert b.post("/events", json={"events": bad}).status_code == 422
            # b's writer closes a's orphaned segment at its next rotation.
            deadline = time.monotonic() + 60
            while any(
                p.name.count(f"-{apis[0].proc.pid}-") for p in (events_dir / "_open").iterdir()
            ):
                assert time.monotonic() < deadline, "a's orphaned segment was never closed"
                time.sleep(0.2)
    finally:
        for api in apis:
            api.stop()
    assert not list((events_dir / "_open").iterdir()), "a clean stop closes its segment"

    interactions = tmp_path / "interactions"
    checkpoint = tmp_path / "ingest-checkpoint"
    first = run_ingest_events(spark, str(events_dir), str(interactions), str(checkpoint))
    second = run_ingest_events(spark, str(events_dir), str(interactions), str(checkpoint))
    assert first.batches >= 1 and first.files >= 2  # a's closed orphan, b's segments
    assert (second.batches, second.files, second.events) == (0, 0, 0)

    rows = read_interactions(interactions)
    ids = [r["event_id"] for r in rows]
    assert len(ids) == len(set(ids)), "one row per event_id"
    acked = senders[0].acked | senders[1].acked
    shopper = {r["event_id"] for r in rows if r["type"] != "impression"}
    assert acked <= shopper, f"acknowledged but missing: {sorted(acked - shopper)[:5]}"
    assert shopper - acked <= senders[0].unanswered, "only in-flight events may be extra"
    assert "c:rejected-1" not in shopper
    assert {r["event_id"] for r in rows if r["type"] == "impression"} == set(rids)
    # One day partition: the day the events were stamped (the test may cross midnight UTC).
    days = {time.strftime("%Y-%m-%d", time.gmtime(time.time() - back)) for back in (0, 86_400)}
    assert len({r["day"] for r in rows}) == 1 and {r["day"] for r in rows} <= days

    updated = run_product_signals(spark, str(interactions), str(table))
    assert updated == 3  # products 1-3 were shown or clicked; 4 never
    stored = {r["id"]: r for r in spark_rows(spark, str(table))}
    clicks_1 = sum(1 for r in rows if r["type"] == "click" and r["product_id"] == 1)
    assert stored[1]["clicks"] == pytest.approx(clicks_1, rel=1e-3)  # a few seconds of decay
    assert stored[4]["clicks"] is None
    assert 0 < stored[1]["ctr"] < 1

    code, out = sync_cli_in_process(["--once"], sync_env, monkeypatch, capsys)
    assert code == 0 and "embedded 0" in out, out
    code, out = sync_cli_in_process(["--verify"], sync_env, monkeypatch, capsys)
    assert code == 0 and "missing 0" in out and "stale 0" in out and "extra 0" in out, out
    store = open_store(Settings(qdrant_path=sync_env["QDRANT_PATH"]))
    try:
        payload = store.chunks_for_products([1])[0].payload
    finally:
        store.close()
    assert payload["clicks"] == pytest.approx(stored[1]["clicks"])
    assert payload["purchases"] == pytest.approx(stored[1]["purchases"])

    # What shoppers did, as GET /analytics reads it with hudi-rs; then "best sellers".
    served = Settings(
        data_dir=str(tmp_path / "served"),
        model_cache_dir=Settings().model_cache_dir,
        qdrant_path=sync_env["QDRANT_PATH"],
        hudi_table_path=str(table),
        sync_mode="off",
        interactions_table_path=str(interactions),
    )
    with ServerThread(served) as server, httpx.Client(base_url=server.url, timeout=60) as c:
        # Today and yesterday: a run across midnight UTC read 0 answers for today alone.
        stats = c.get("/analytics", params={"days": 2}).json()
        assert stats["answers"] == 2
        assert stats["clicks"] == sum(1 for r in rows if r["type"] == "click")
        assert stats["purchases"] == sum(1 for r in rows if r["type"] == "purchase")
        assert stats["top_queries"][0]["query"] == "running shoes"
        first = next(p for p in stats["ctr_by_position"] if p["position"] == 1)
        assert first["impressions"] == 2 and first["clicks"] > 0
        best = c.post("/search", json={"query": "best sellers running shoes", "top_k": 2})
        assert [f["field"] for f in best.json()["filters_applied"]] == ["popularity_preference"]
        assert best.json()["products"][0]["id"] == 2  # six more sales

    # Retention drops whole days: an event of 40 days ago goes, today's stay.
    old = spark.createDataFrame(
        [("c:old", "click", int(time.time() * 1000) - 40 * 86_400_000, 1)],
        "event_id string, type string, ts long, product_id long",
    )
    old = old.select(
        *(old[c] if c in old.columns else F.lit(None).cast(t).alias(c) for c, t in COLUMNS)
    )
    write(old.withColumn("day", utc_day(F.col("ts"))), str(interactions))
    assert "c:old" in {r["event_id"] for r in read_interactions(interactions)}
    assert len(drop_expired(spark, str(interactions), keep_days=30)) == 1
    kept = {r["event_id"] for r in read_interactions(interactions)}
    assert "c:old" not in kept and kept == set(ids)

    # A seller's edit afterwards keeps the shop's signals.
    upsert_rows(spark, str(table), [{**PRODUCTS[0], "ts": 900, "price": 12.5}])
    after = {r["id"]: r for r in spark_rows(spark, str(table))}
    assert after[1]["price"] == 12.5 and after[1]["clicks"] == stored[1]["clicks"]
