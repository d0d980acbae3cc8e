"""Chunk and embed the products table on Spark, into a Hudi table of vectors by content key.

    python -m spark_jobs.embed --table-path T [--vectors-path V] [--begin I [--end I]]
        [--encoder auto|onnx-int8|onnx-fp32|torch] [--partitions N] [--hoodie-conf K=V ...]

The sync's work, spread over executors: the driver chooses the engine as the sync would (an
ONNX export checked against torch) and ships that export with the job; each Python worker
loads it once and runs the sync's own chunker and that encoder on the rows (the table's
snapshot, or the commits of a window with `--begin`/`--end`); the vectors go to V (default
`<T>_chunk_vectors`, where the sync looks: VECTORS_TABLE_PATH), keyed by content key. The
sync then loads these vectors instead of embedding them. Content already in V is not
embedded again, so a re-run or a window embeds only what is new.

The content key names the engine (`all-MiniLM-L6-v2+int8` for the int8 export), so the sync
only loads vectors from the engine it runs itself. `--encoder` defaults to
EMBEDDING_ENCODER (auto: int8 where the driver's CPU has VNNI/AMX): where the syncer's CPU
differs from the driver's, set it to the engine the syncer logs at start-up.
"""

from __future__ import annotations

import argparse
import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, get_args

from app.core.catalog import COLUMN_NAMES
from app.core.config import Settings, default_vectors_path, get_settings
from app.embedding import load_embedder
from app.embedding.choice import EncoderChoice
from app.sync.chunk_vectors import CONTENT_KEY, EMBEDDED_AT, MODEL_ID
from spark_jobs import cli
from spark_jobs.embed_worker import (
    CHUNK_SCHEMA,
    TEXT,
    VECTOR_SCHEMA,
    EmbedConfig,
    ShippedOnnx,
    chunk_rows,
    embed_rows,
)
from spark_jobs.errors import JobError
from spark_jobs.table import (
    has_completed_writes,
    normalize_table_path,
    parse_hoodie_conf,
    read_snapshot,
    read_table_properties,
    require_table,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

logger = logging.getLogger(__name__)

VECTORS_TABLE_NAME = "chunk_vectors"
# Chunks per embedding task: enough to amortise a task, few enough that progress moves and
# the last tasks of the stage finish close together.
CHUNKS_PER_TASK = 2_000


@dataclass(frozen=True, slots=True)
class EmbedResult:
    chunks: int  # distinct chunk contents in the rows read
    present: int  # ... already in the vectors table (not embedded)
    embedded: int
    engines: dict[str, int]  # model id (engine) -> vectors written by it
    vectors_path: str
    embed_seconds: float  # chunking and embedding, the write excluded
    seconds: float

    @property
    def chunks_per_second(self) -> float:
        return self.embedded / self.seconds if self.seconds else 0.0


def config_from(settings: Settings, encoder: EncoderChoice | None = None) -> EmbedConfig:
    """The chunking and embedding settings the sync would use, for the workers."""
    return EmbedConfig(
        model=settings.embedding_model,
        encoder=encoder or settings.embedding_encoder,
        batch_size=settings.embedding_batch_size,
        max_chunk_tokens=settings.max_chunk_tokens,
        overlap_tokens=settings.chunk_overlap_tokens,
    )


def embed_table(
    spark: SparkSession,
    table_path: str,
    config: EmbedConfig,
    *,
    vectors_path: str | None = None,
    begin: str | None = None,
    end: str | None = None,
    partitions: int | None = None,
    overrides: dict[str, str] | None = None,
) -> EmbedResult:
    """Embed the chunks of the table (or of a window of its commits) that V lacks."""
    started = time.monotonic()
    table_path = normalize_table_path(table_path)
    vectors_path = normalize_table_path(vectors_path or default_vectors_path(table_path))
    require_table(spark, table_path)
    config = ship_engine(spark, config)
    parallelism = partitions or spark.sparkContext.defaultParallelism
    # A table of a few files reads as a few partitions: spread the rows over every core.
    rows = _read(spark, table_path, begin, end).repartition(parallelism)
    # The chunk stage: one row per distinct content, materialised once (it is counted,
    # anti-joined and embedded from here).
    chunks = (
        spark.createDataFrame(rows.rdd.mapPartitions(chunk_rows(config)), CHUNK_SCHEMA)
        .dropDuplicates([CONTENT_KEY])
        .localCheckpoint(eager=True)
    )
    total = chunks.count()
    if chunks.select(MODEL_ID).distinct().count() > 1:
        # Workers on CPUs that picked different engines keyed one text twice; the embed
        # stage keys each by the engine that embeds it, which makes the two rows equal.
        chunks = chunks.dropDuplicates([TEXT]).localCheckpoint(eager=True)
        total = chunks.count()
    props = read_table_properties(spark, vectors_path)
    exists = props is not None and has_completed_writes(spark, vectors_path)
    todo = chunks
    if exists:
        held = (
            spark.read.format("hudi")
            .option("hoodie.enable.data.skipping", "false")
            .load(vectors_path)
            .select(CONTENT_KEY)
        )
        todo = chunks.join(held, CONTENT_KEY, "left_anti")
    count = todo.count() if exists else total
    logger.info(
        "%d distinct chunks, %d to embed into %s (%.1fs)",
        total,
        count,
        vectors_path,
        time.monotonic() - started,
    )
    engines: dict[str, int] = {}
    embed_seconds = time.monotonic() - started
    if count:
        n = partitions or max(parallelism, -(-count // CHUNKS_PER_TASK))
        with _progress(spark, "embed", count, n):
            vectors = spark.createDataFrame(
                todo.repartition(n).rdd.mapPartitions(embed_rows(config)), VECTOR_SCHEMA
            ).localCheckpoint(eager=True)
        embed_seconds = time.monotonic() - started
        engines = {
            str(r[MODEL_ID]): int(r["count"]) for r in vectors.groupBy(MODEL_ID).count().collect()
        }
        logger.info("embedded %d chunks (%.1fs)", count, embed_seconds)
        _write(vectors, vectors_path, props if exists else None, overrides)
        logger.info("written to %s (%.1fs)", vectors_path, time.monotonic() - started)
    return EmbedResult(
        chunks=total,
        present=total - count,
        embedded=count,
        engines=engines,
        vectors_path=vectors_path,
        embed_seconds=embed_seconds,
        seconds=time.monotonic() - started,
    )


def ship_engine(spark: SparkSession, config: EmbedConfig) -> EmbedConfig:
    """Choose the engine here, as the sync would, and ship its ONNX export to the workers.

    The driver loads the model and checks the export against torch once; the workers run
    the export alone (embed_worker.ShippedOnnx), so executors need no torch. Under torch
    (`--encoder torch`, or an export that failed its check) each worker loads the model.
    """
    if config.onnx is not None:
        return config
    embedder = load_embedder(
        config.model,
        "cpu",
        config.batch_size,
        config.encoder,
        get_settings().model_cache_dir,
        config.threads,
        1,
    )
    if embedder.onnx is None:
        logger.info("engine %s: every worker loads the model", embedder.encoder)
        return config
    path = embedder.onnx.model_path
    spark.sparkContext.addFile(str(path))
    logger.info("engine %s: the workers run %s", embedder.model_id, path.name)
    shipped = ShippedOnnx(
        path.name, embedder.model_id, embedder.tokenizer().to_str(), embedder.max_seq_tokens
    )
    return replace(config, onnx=shipped)


def _read(spark: SparkSession, table_path: str, begin: str | None, end: str | None) -> DataFrame:
    if begin is None:
        return read_snapshot(spark, table_path)
    reader = (
        spark.read.format("hudi")
        .option("hoodie.datasource.query.type", "incremental")
        .option("hoodie.datasource.read.begin.instanttime", begin)
    )
    if end is not None:
        reader = reader.option("hoodie.datasource.read.end.instanttime", end)
    return reader.load(table_path).select(*COLUMN_NAMES)


def _write(
    vectors: DataFrame,
    vectors_path: str,
    props: dict[str, str] | None,
    overrides: dict[str, str] | None,
) -> None:
    """One commit: into a new table a bulk_insert, else an upsert."""
    options = {
        "hoodie.table.name": props["hoodie.table.name"] if props else VECTORS_TABLE_NAME,
        "hoodie.datasource.write.table.type": "COPY_ON_WRITE",
        "hoodie.datasource.write.operation": "upsert" if props else "bulk_insert",
        "hoodie.datasource.write.recordkey.field": CONTENT_KEY,
        "hoodie.datasource.write.precombine.field": EMBEDDED_AT,
        "hoodie.datasource.write.partitionpath.field": "",
        "hoodie.datasource.write.keygenerator.class": (
            "org.apache.hudi.keygen.NonpartitionedKeyGenerator"
        ),
        **(overrides or {}),
    }
    vectors.write.format("hudi").options(**options).mode("append").save(vectors_path)


@contextmanager
def _progress(spark: SparkSession, label: str, chunks: int, tasks: int) -> Iterator[None]:
    """Log the running stage's finished tasks, a rate and an ETA every 10 s (driver side)."""
    tracker: Any = spark.sparkContext.statusTracker()
    done = threading.Event()
    started = time.monotonic()

    def report() -> None:
        while not done.wait(10.0):
            infos = [tracker.getStageInfo(s) for s in tracker.getActiveStageIds()]
            stage = max((i for i in infos if i is not None), key=lambda i: i.numTasks, default=None)
            if stage is None or stage.numTasks != tasks:
                continue
            elapsed = time.monotonic() - started
            finished = stage.numCompletedTasks
            if not finished:
                logger.info("%s: 0/%d tasks after %.0fs", label, tasks, elapsed)
                continue
            rate = chunks * finished / tasks / elapsed
            eta = (tasks - finished) * elapsed / finished
            logger.info(
                "%s: %d/%d tasks, ~%.0f chunks/s, ETA %.0fs", label, finished, tasks, rate, eta
            )

    thread = threading.Thread(target=report, name="embed-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="spark_jobs.embed", description=__doc__)
    parser.add_argument("--table-path", default=None, help="default: HUDI_TABLE_PATH")
    parser.add_argument("--vectors-path", default=None, help="default: <table path>_chunk_vectors")
    parser.add_argument("--begin", default=None, metavar="INSTANT", help="embed a window only")
    parser.add_argument("--end", default=None, metavar="INSTANT")
    parser.add_argument(
        "--encoder",
        choices=get_args(EncoderChoice),
        default=None,
        help="default: EMBEDDING_ENCODER",
    )
    parser.add_argument(
        "--partitions",
        type=int,
        default=None,
        help="tasks per stage (default: every core; embedding: one per ~2,000 chunks)",
    )
    parser.add_argument("--hoodie-conf", action="append", metavar="KEY=VALUE")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    cli.configure_logging(args.verbose)

    def job() -> None:
        from spark_jobs.session import get_spark

        if args.end is not None and args.begin is None:
            raise JobError("--end needs --begin")
        settings = get_settings()
        table = args.table_path or settings.hudi_table_path
        # VECTORS_TABLE_PATH names the vectors of HUDI_TABLE_PATH; another table's are
        # beside that table (the sync's default for it too).
        own = normalize_table_path(table) == normalize_table_path(settings.hudi_table_path)
        result = embed_table(
            get_spark(settings, app_name="embed"),
            table,
            config_from(settings, args.encoder),
            vectors_path=args.vectors_path or (settings.vectors_table_path if own else None),
            begin=args.begin,
            end=args.end,
            partitions=args.partitions,
            overrides=parse_hoodie_conf(args.hoodie_conf),
        )
        print(f"chunks {result.chunks}")
        print(f"present {result.present}")
        print(f"embedded {result.embedded}")
        for engine, n in sorted(result.engines.items()):
            print(f"engine {engine} {n}")
        print(f"vectors_path {result.vectors_path}")
        print(f"seconds {result.seconds:.1f}")
        print(f"chunks_per_second {result.chunks_per_second:.1f}")

    return cli.run(job, verbose=args.verbose)


if __name__ == "__main__":
    raise SystemExit(main())
