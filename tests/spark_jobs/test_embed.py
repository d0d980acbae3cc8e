"""The Spark embed job against the sync: same vectors, loaded instead of embedded.

One table of 30 products (ten with long descriptions of several chunks each at the
harness's 64-token chunks), embedded once by `python -m spark_jobs.embed` (its `main`, in
this process, on the shared session). Both sides run the fp32 ONNX engine: it gives a text
the same vector whatever it is batched with, so "equal" can be held to cosine 0.9999. The
int8 engine quantizes activations per batch: two batchings of the same chunk differ by up
to ~0.007 in cosine in the sync itself (its figures are in BENCHMARKS.md).
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from app.core.catalog import Product
from app.core.config import Settings, get_settings
from app.embedding import Embedder, load_embedder
from app.sync.chunk_vectors import ChunkVectorSource
from spark_jobs.create_table import create_table
from spark_jobs.embed import main as embed_main
from spark_jobs.upsert_products import upsert_rows
from tests.synctools import long_text, make_harness, product

pytestmark = pytest.mark.spark

ENCODER = "onnx-fp32"


@dataclass
class Embedded:
    table: Path
    rows: list[dict[str, object]]
    embedder: Embedder
    output: str


def _rows() -> list[dict[str, object]]:
    rows = []
    for i in range(1, 31):
        text = long_text(f"kettle {i}", 8) if i % 3 == 0 else f"A compact kettle, model {i}."
        rows.append(product(i, 1_000 + i, f"Kettle {i}", text, price=10.0 + i))
    # Two products with the same text share their chunks' content keys (one vector row).
    rows.append(product(31, 2_000, "Kettle 3", str(rows[2]["description"]), price=99.0))
    return rows


@pytest.fixture(scope="module")
def embedded(spark: object, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Embedded]:
    from pyspark.sql import SparkSession

    assert isinstance(spark, SparkSession)
    table = tmp_path_factory.mktemp("embed") / "products"
    create_table(spark, str(table))
    rows = _rows()
    upsert_rows(spark, str(table), rows)
    env = {"MAX_CHUNK_TOKENS": "64", "CHUNK_OVERLAP_TOKENS": "8", "EMBEDDING_ENCODER": ENCODER}
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as m:
        for name, value in env.items():
            m.setenv(name, value)
        get_settings.cache_clear()
        try:
            with contextlib.redirect_stdout(out):
                assert embed_main(["--table-path", str(table)]) == 0
        finally:
            get_settings.cache_clear()
    s = Settings()
    embedder = load_embedder(
        s.embedding_model, "cpu", s.embedding_batch_size, ENCODER, s.model_cache_dir
    )
    assert embedder.encoder == ENCODER
    yield Embedded(table, rows, embedder, out.getvalue())


def _lines(output: str) -> dict[str, str]:
    return dict(line.split(" ", 1) for line in output.splitlines() if " " in line)


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
    printed = _lines(embedded.output)
    assert printed["chunks"] == printed["embedded"] == str(len(chunks))
    assert printed["present"] == "0"
    assert printed["engine"] == f"{embedded.embedder.model_id} {len(chunks)}"

    source = ChunkVectorSource(
        Settings(vectors_table_path=f"{embedded.table}_chunk_vectors"), embedded.embedder.dim
    )
    source.start_cycle()
    keys = sorted(chunks)
    found = source.lookup(keys)
    assert sorted(found) == keys
    own = embedded.embedder.embed([chunks[k] for k in keys])
    cosine = np.sum(np.stack([found[k] for k in keys]) * own, axis=1)
    assert cosine.min() >= 0.9999, cosine.min()


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
