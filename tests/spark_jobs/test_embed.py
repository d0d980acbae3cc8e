"""The Spark embed job against the sync: same vectors, loaded instead of embedded; a
second run after an edit embeds the new texts only and drops the vectors no chunk uses.

One table of 31 products (ten with long descriptions of several chunks each at the
harness's 64-token chunks, one repeating another's text), embedded once by
`spark_jobs.embed` on the shared session. Both sides run the fp32 ONNX engine: it gives a
text the same vector whatever it is batched with, so "equal" can be held to cosine 0.9999.
The int8 engine quantizes activations per batch: two batchings of the same chunk differ by
up to ~0.007 in cosine in the sync itself (bench/spark_embed.py, BENCHMARKS.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from app.core.catalog import Product
from app.core.config import Settings
from app.embedding import Embedder, load_embedder
from app.embedding.choice import EncoderChoice, cpu_flags
from app.embedding.openvino_session import BF16_FLAG
from app.sync.chunk_vectors import ChunkVectorSource
from spark_jobs.create_table import create_table
from spark_jobs.embed import EmbedResult, config_from, embed_table
from spark_jobs.upsert_products import upsert_rows
from tests.synctools import long_text, make_harness, product

pytestmark = pytest.mark.spark

ENCODER: EncoderChoice = "onnx-fp32"


@dataclass
class Embedded:
    table: Path
    rows: list[dict[str, object]]
    embedder: Embedder
    result: EmbedResult


def _rows() -> list[dict[str, object]]:
    rows = []
    for i in range(1, 31):
        text = long_text(f"kettle {i}", 8) if i % 3 == 0 else f"A compact kettle, model {i}."
        rows.append(product(i, 1_000 + i, f"Kettle {i}", text, price=10.0 + i))
    # Two products with the same text share their chunks' content keys (one vector row).
    rows.append(product(31, 2_000, "Kettle 3", str(rows[2]["description"]), price=99.0))
    return rows


@pytest.fixture(scope="module")
def embedded(spark: object, tmp_path_factory: pytest.TempPathFactory) -> Embedded:
    from pyspark.sql import SparkSession

    assert isinstance(spark, SparkSession)
    table = tmp_path_factory.mktemp("embed") / "products"
    create_table(spark, str(table))
    rows = _rows()
    upsert_rows(spark, str(table), rows)
    # The harness's chunking (tests/synctools.py), as the sync's settings would give it.
    settings = Settings(hudi_table_path=str(table), max_chunk_tokens=64, chunk_overlap_tokens=8)
    # One task: one Python worker loads the model (the test's CPU, not its point).
    result = embed_table(spark, str(table), config_from(settings, ENCODER), partitions=1)
    embedder = load_embedder(
        settings.embedding_model,
        "cpu",
        settings.embedding_batch_size,
        ENCODER,
        settings.model_cache_dir,
    )
    assert embedder.encoder == ENCODER
    return Embedded(table, rows, embedder, result)


def test_job_vectors_equal_the_syncs_own(embedded: Embedded, tmp_path: Path) -> None:
    # Without a vectors table the sync runs as it always did: every chunk embedded.
    h = make_harness(embedded.table, embedded.embedder, vectors_table_path=str(tmp_path / "absent"))
    boot = h.cycle()
    assert (boot.loaded, boot.embedded) == (0, h.store.count())
    h.assert_mirror()

    chunks = {
        c.chunk_hash: c.text
        for r in embedded.rows
        for c in h.engine.chunker.chunk(Product.from_row(r))
    }
    assert h.store.count() > len(chunks) > 50  # product 31 repeats product 3's chunks
    result = embedded.result
    assert (result.chunks, result.embedded, result.present) == (len(chunks), len(chunks), 0)
    assert result.dropped == 0
    assert result.engines == {embedded.embedder.model_id: len(chunks)}
    assert result.vectors_path == f"{embedded.table}_chunk_vectors"

    source = ChunkVectorSource(
        Settings(vectors_table_path=f"{embedded.table}_chunk_vectors"), embedded.embedder.dim
    )
    source.start_cycle()
    keys = sorted(chunks)
    found = source.lookup([*keys, "0" * 32, "f" * 32])  # two keys the job never wrote
    assert sorted(found) == keys
    own = embedded.embedder.embed([chunks[k] for k in keys])
    cosine = np.sum(np.stack([found[k] for k in keys]) * own, axis=1)
    assert cosine.min() >= 0.9999, cosine.min()


def test_a_bf16_driver_ships_its_engine_and_the_workers_write_the_fp32_space(
    spark: object, embedded: Embedded, tmp_path: Path
) -> None:
    """A driver on OpenVINO bf16 ships the fp32 export marked bf16: the workers' vectors are
    keyed in fp32's space and meet the fp32 engine's at bf16's rounding (bf16 where the
    worker's CPU has AMX, fp32 on ONNX Runtime elsewhere)."""
    from pyspark.sql import SparkSession

    assert isinstance(spark, SparkSession)
    settings = Settings(
        hudi_table_path=str(embedded.table), max_chunk_tokens=64, chunk_overlap_tokens=8
    )
    config = config_from(settings, "openvino-bf16")
    assert config.onnx is not None and config.onnx.bf16
    assert config.model_id == embedded.embedder.model_id == "all-MiniLM-L6-v2"
    vectors = str(tmp_path / "bf16_vectors")
    result = embed_table(spark, str(embedded.table), config, vectors_path=vectors, partitions=1)
    assert result.engines == {config.model_id: result.chunks}

    h = make_harness(embedded.table, embedded.embedder, vectors_table_path=vectors)
    chunks = {
        c.chunk_hash: c.text
        for r in embedded.rows
        for c in h.engine.chunker.chunk(Product.from_row(r))
    }
    source = ChunkVectorSource(Settings(vectors_table_path=vectors), embedded.embedder.dim)
    source.start_cycle()
    keys = sorted(chunks)
    found = source.lookup(keys)
    source.release()
    assert sorted(found) == keys
    own = embedded.embedder.embed([chunks[k] for k in keys])
    cosine = np.sum(np.stack([found[k] for k in keys]) * own, axis=1)
    assert cosine.min() >= 0.9995, cosine.min()
    if BF16_FLAG in cpu_flags():
        # Not fp32's numbers to float noise: the worker ran bf16 on OpenVINO, as the driver.
        assert float(np.abs(np.stack([found[k] for k in keys]) - own).max()) > 1e-4


def test_bootstrap_after_the_job_embeds_nothing_and_an_edit_is_embedded(
    spark: object, embedded: Embedded
) -> None:
    from pyspark.sql import SparkSession

    assert isinstance(spark, SparkSession)
    h = make_harness(embedded.table, embedded.embedder)  # vectors beside the table
    boot = h.cycle()
    assert boot.mode == "bootstrap"
    assert (boot.embedded, boot.loaded) == (0, h.store.count())
    h.assert_mirror()
    assert h.engine.totals.loaded == boot.loaded

    # An edit after the job: its new chunks are embedded, the kept ones stay.
    before = {c.point_id for c in h.engine.chunker.chunk(Product.from_row(embedded.rows[5]))}
    edited = {**embedded.rows[5], "ts": 9_000, "description": long_text("new steel kettle", 6)}
    upsert_rows(spark, str(embedded.table), [edited])
    after = [c.point_id for c in h.engine.chunker.chunk(Product.from_row(edited))]
    new = [p for p in after if p not in before]
    assert new
    cycle = h.cycle()
    assert (cycle.mode, cycle.embedded, cycle.loaded) == ("incremental", len(new), 0)
    h.assert_mirror()

    # The job again: the edit's chunks are embedded, the old texts' vectors dropped, and
    # the table holds exactly the live chunks' vectors.
    rows = [edited if r["id"] == edited["id"] else r for r in embedded.rows]
    live = {c.chunk_hash for r in rows for c in h.engine.chunker.chunk(Product.from_row(r))}
    old = {c.chunk_hash for c in h.engine.chunker.chunk(Product.from_row(embedded.rows[5]))}
    settings = Settings(
        hudi_table_path=str(embedded.table), max_chunk_tokens=64, chunk_overlap_tokens=8
    )
    again = embed_table(spark, str(embedded.table), config_from(settings, ENCODER), partitions=1)
    assert (again.chunks, again.embedded) == (len(live), len(live - embedded_keys(embedded)))
    assert again.dropped == len(old - live) > 0
    source = ChunkVectorSource(settings, embedded.embedder.dim)
    source.start_cycle()
    assert sorted(source.lookup(sorted(live | old))) == sorted(live)
    source.release()


def embedded_keys(embedded: Embedded) -> set[str]:
    """The content keys the first job run wrote (every chunk of the first rows)."""
    h = make_harness(embedded.table, embedded.embedder)
    return {
        c.chunk_hash for r in embedded.rows for c in h.engine.chunker.chunk(Product.from_row(r))
    }
