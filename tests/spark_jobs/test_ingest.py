"""The landing job: files dropped in three rounds, a kill -9 mid-commit, a restart.

History of the table (COPY_ON_WRITE, made by create_table), one Spark batch per round:
- round 1 (batch 0, in-process `--once`): a.jsonl ids 1-4 plus a bad id and a malformed
  line; b.csv ids 5-6 with an extra column (colour) and missing ones (category, brand).
  One bulk_insert commit.
- round 2 (batch 1): c.jsonl ids 7-20 (generated) plus id 2 renamed and a row without a
  name; d.parquet ids 21-25; broken.parquet (not Parquet). The job runs as
  `python -m spark_jobs.ingest --continuous` in its own process group and the group (the
  Python driver and its JVM) gets SIGKILL while the upsert commit is inflight. The
  restart (in-process `--once`) re-runs batch 1 with the same files: one upsert commit.
- round 3 (batch 2): e.jsonl deletes ids 4 (`op: delete`) and 7 (`op: d`) and 999 (absent),
  adds id 26, and has a row with an unknown op. A delete commit, then an upsert commit.
- an idle `--once`: no new file, no batch, no commit.
Expected table: ids 1-3, 5, 6, 8-26 (24 rows), id 2 renamed; quarantine: 5 rows, once each.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hudi import HudiTableBuilder

from app.core.config import Settings
from app.retrieval import Retriever
from spark_jobs.create_table import create_table
from spark_jobs.generate_products import generate
from spark_jobs.ingest import IngestConfig, run_ingest
from spark_jobs.session import configure_s3a
from spark_jobs.upsert_products import upsert_files
from tests.e2e.test_s3 import LocalS3
from tests.e2e.test_s3 import local_s3 as local_s3
from tests.synctools import make_harness, product

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from app.embedding import Embedder

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]

CATALOG = {
    1: ("AquaBeat Swim Headset", "Waterproof bone-conduction headphones for lap swimming."),
    2: ("Barista Espresso Machine", "A 15-bar pump espresso maker with a steam wand."),
    3: ("Ridge Trail Running Shoe", "Grippy lugged outsole for muddy mountain trails."),
    4: ("Summit Two-Person Tent", "A light backpacking tent for two with a full rain fly."),
}


def _jsonl(path: Path, rows: list[Any]) -> None:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))


def _round_1(landing: Path) -> None:
    rows: list[Any] = [product(i, 100, name, text) for i, (name, text) in CATALOG.items()]
    _jsonl(landing / "a.jsonl", [*rows, {"id": "x", "name": "Bad Id"}, "{not json"])
    (landing / "b.csv").write_text(
        "product_id,title,description,price,colour\n"
        "5,Cast Iron Skillet,A pre-seasoned 12-inch pan.,39.5,black\n"
        "6,Bamboo Cutting Board,A thick end-grain board.,24,natural\n"
    )


def _round_2(landing: Path) -> None:
    generated = [dict(r, ts=200) for r in generate(14, seed=3, start_id=7)]
    renamed = product(2, 200, "Barista Pro Espresso Machine", CATALOG[2][1])
    _jsonl(landing / "c.jsonl", [*generated, renamed, {"id": 30, "name": ""}])
    pq.write_table(
        pa.table(
            {
                "id": list(range(21, 26)),
                "name": [f"Garden Hose {i}" for i in range(21, 26)],
                "price": [19.0] * 5,
            }
        ),
        landing / "d.parquet",
    )
    (landing / "broken.parquet").write_bytes(b"PAR1 not really parquet")


def _round_3(landing: Path) -> None:
    _jsonl(
        landing / "e.jsonl",
        [
            {"op": "delete", "id": 4},
            {"op": "d", "id": 7},
            {"op": "delete", "id": 999},
            product(26, 300, "Camp Lantern", "A rechargeable LED lantern."),
            {"op": "merge", "id": 27, "name": "Unknown Op"},
        ],
    )


def _timeline(table: Path) -> list[str]:
    return sorted(p.name for p in (table / ".hoodie" / "timeline").iterdir() if p.is_file())


def _pending(table: Path) -> set[str]:
    """Instants requested or inflight with no completed file (a commit in progress)."""
    names = _timeline(table)
    done = {n.split("_", 1)[0] for n in names if "_" in n.split(".", 1)[0]}
    return {n.split(".", 1)[0] for n in names if n.endswith(".inflight")} - done


def _commit_batches(table: Path) -> list[str]:
    """`_ingest.batch_id` of every completed commit, oldest first."""
    timeline = HudiTableBuilder.from_base_uri(str(table)).build().get_timeline()
    found = []
    for instant in timeline.get_completed_commits():
        meta = json.loads(timeline.get_instant_metadata_in_json(instant))
        found.append(meta.get("extraMetadata", {}).get("_ingest.batch_id"))
    return found


def _kill_mid_commit(table: Path, argv: list[str], seconds: float = 600) -> None:
    """Run the job in its own process group; SIGKILL the group once a commit is inflight."""
    before = _pending(table)
    proc = subprocess.Popen(
        [sys.executable, "-m", "spark_jobs.ingest", *argv],
        cwd=ROOT,
        env={**os.environ, "SPARK_CHECKPOINT_DIR": str(table.parent / "spark-checkpoints")},
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + seconds
    try:
        while not (_pending(table) - before):
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            assert time.monotonic() < deadline, "no commit started"
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL


def _quarantine(folder: Path) -> list[tuple[str, tuple[str, ...]]]:
    rows = [json.loads(x) for f in folder.glob("*/part-*") for x in f.read_text().splitlines()]
    return sorted((Path(r["source"]).name, tuple(r["reasons"])) for r in rows)


def _log_entries(folder: Path) -> list[str]:
    """The batch files of a Spark checkpoint log (Hadoop's `.N.crc` files left out)."""
    return sorted(p.name for p in folder.iterdir() if not p.name.startswith("."))


def _source_log_files(checkpoint: Path) -> list[str]:
    """Every file Spark's file source planned into a batch, as its checkpoint records them."""
    paths = []
    folder = checkpoint / "stream" / "sources" / "0"
    for log in _log_entries(folder):
        for line in (folder / log).read_text().splitlines()[1:]:  # first line: log version
            paths.append(Path(json.loads(line)["path"]).name)
    return paths


def test_landing_folder_is_ingested_exactly_once_across_kill9(
    spark: SparkSession, embedder: Embedder, tmp_path: Path
) -> None:
    table, landing, checkpoint, quarantine = (
        tmp_path / name for name in ("products", "landing", "checkpoint", "quarantine")
    )
    landing.mkdir()
    create_table(spark, str(table))
    config = IngestConfig(str(table), str(landing), str(checkpoint), str(quarantine))

    _round_1(landing)
    first = run_ingest(spark, config)
    assert (first.batches, first.files, first.upserted, first.quarantined) == (1, 2, 6, 2)

    _round_2(landing)
    argv = ["--landing", str(landing), "--checkpoint", str(checkpoint), "--table-path", str(table)]
    _kill_mid_commit(table, [*argv, "--quarantine", str(quarantine), "--continuous"])
    # Killed mid-batch: Spark planned batch 1 but never marked it done; Hudi has a
    # commit that never completed.
    assert _log_entries(checkpoint / "stream" / "offsets") == ["0", "1"]
    assert _log_entries(checkpoint / "stream" / "commits") == ["0"]
    assert _pending(table)

    restarted = run_ingest(spark, config)
    # The re-run of batch 1: 14 generated + id 2 + 5 Parquet rows written; a nameless row
    # and the broken file quarantined.
    assert (restarted.batches, restarted.files, restarted.upserted) == (1, 3, 20)
    assert restarted.quarantined == 2

    harness = make_harness(table, embedder)
    harness.cycle()
    assert harness.assert_mirror().products == 25
    retriever = Retriever(embedder, harness.store, harness.settings)
    assert retriever.retrieve("a tent for backpacking", top_k=3)[0].id == 4

    _round_3(landing)
    third = run_ingest(spark, config)
    assert (third.batches, third.files, third.upserted, third.deleted) == (1, 1, 1, 2)
    assert third.quarantined == 1

    commits = _commit_batches(table)
    idle = run_ingest(spark, config)
    assert (idle.batches, idle.files) == (0, 0)
    assert _commit_batches(table) == commits == ["0", "1", "2", "2"]

    # Every product once: Spark SQL over the table, by count and by id.
    spark.read.format("hudi").load(str(table)).createOrReplaceTempView("landed")
    counts = spark.sql("SELECT count(*) AS n, count(DISTINCT id) AS ids FROM landed").first()
    assert counts is not None and (counts["n"], counts["ids"]) == (24, 24)
    ids = [r["id"] for r in spark.sql("SELECT id FROM landed ORDER BY id").collect()]
    assert ids == [1, 2, 3, 5, 6, *range(8, 27)]
    rows = spark.sql("SELECT id, name FROM landed WHERE id IN (2, 5)").collect()
    names = {r["id"]: r["name"] for r in rows}
    assert names == {2: "Barista Pro Espresso Machine", 5: "Cast Iron Skillet"}

    # No file twice: each landed file is in exactly one batch of the source log.
    landed = ["a.jsonl", "b.csv", "broken.parquet", "c.jsonl", "d.parquet", "e.jsonl"]
    assert sorted(_source_log_files(checkpoint)) == landed

    # The quarantine holds each reject once, although batch 1 ran twice.
    assert _quarantine(quarantine) == [
        ("a.jsonl", ("id is not an integer: 'x'",)),
        ("a.jsonl", ("not a JSON object",)),
        ("broken.parquet", (_broken_reason(quarantine),)),
        ("c.jsonl", ("name is empty",)),
        ("e.jsonl", ("op must be upsert or delete: 'merge'",)),
    ]

    # The deletes reach the index: the tent (id 4) and id 7 are gone after the sync.
    report = harness.cycle()
    assert report.deleted > 0
    assert harness.assert_mirror().products == 24
    assert len(harness.store.chunks_for_products([4, 7])) == 0
    hits = [h.id for h in retriever.retrieve("a tent for backpacking", top_k=5)]
    assert 4 not in hits and 7 not in hits


def _broken_reason(quarantine: Path) -> str:
    """The one-line reason Spark gave for the broken Parquet file (its wording is Spark's)."""
    part = next((quarantine / "batch=1-files").glob("part-*"))
    reason = json.loads(part.read_text().splitlines()[0])["reasons"][0]
    assert reason.startswith("cannot read ") and "broken.parquet" in reason
    return str(reason)


# --- inputs on S3 (a local moto server): the upsert job and the landing job -------------


def test_both_jobs_read_inputs_and_write_quarantine_on_s3(
    spark: SparkSession,
    local_s3: LocalS3,
) -> None:
    import boto3

    configure_s3a(spark, Settings(**local_s3.settings()))
    s3 = boto3.client(
        "s3",
        endpoint_url=local_s3.endpoint,
        region_name=local_s3.settings()["aws_region"],
        aws_access_key_id=local_s3.settings()["aws_access_key_id"],
        aws_secret_access_key=local_s3.settings()["aws_secret_access_key"],
    )

    def put(key: str, body: str) -> None:
        s3.put_object(Bucket=local_s3.bucket, Key=key, Body=body.encode())

    def keys(prefix: str) -> list[str]:
        listed = s3.list_objects_v2(Bucket=local_s3.bucket, Prefix=prefix).get("Contents", [])
        return sorted(o["Key"] for o in listed)

    def rejects(prefix: str) -> list[tuple[str, list[str]]]:
        rows = []
        for key in keys(prefix):
            if Path(key).name.startswith("part-"):
                body = s3.get_object(Bucket=local_s3.bucket, Key=key)["Body"].read().decode()
                rows += [json.loads(x) for x in body.splitlines()]
        return sorted((Path(r["source"]).name, r["reasons"]) for r in rows)

    bucket = f"s3a://{local_s3.bucket}"
    table = f"{bucket}/products"
    create_table(spark, table)

    put("in/a.jsonl", json.dumps(product(1, 100, "Kettle", "A kettle.")) + "\n{broken\n")
    put("in/b.csv", "id,name,price,colour\n2,Grinder,59,red\n3,,1,blue\n")
    result = upsert_files(spark, table, [f"{bucket}/in/"], quarantine_path=f"{bucket}/q-upsert")
    assert (result.read, result.upserted, result.quarantined) == (4, 2, 2)
    assert rejects("q-upsert/") == [
        ("a.jsonl", ["not a JSON object"]),
        ("b.csv", ["name is empty"]),
    ]

    put("landing/c.jsonl", json.dumps(product(4, 100, "Teapot", "A teapot.")) + "\n")
    put("landing/d.jsonl", '{"op": "delete", "id": 1}\n{"id": 5, "name": ""}\n')
    config = IngestConfig(table, f"{bucket}/landing", f"{bucket}/checkpoint", f"{bucket}/q-land")
    totals = run_ingest(spark, config)
    assert (totals.files, totals.upserted, totals.deleted, totals.quarantined) == (2, 1, 1, 1)
    assert rejects("q-land/") == [("d.jsonl", ["name is empty"])]
    assert keys("checkpoint/ingest/") == ["checkpoint/ingest/batch-0.ts"]
    again = run_ingest(spark, config)
    assert (again.batches, again.files) == (0, 0)

    rows = spark.read.format("hudi").load(table).select("id", "name").orderBy("id").collect()
    assert [(r["id"], r["name"]) for r in rows] == [(2, "Grinder"), (4, "Teapot")]
