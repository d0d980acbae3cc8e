"""Chunk and embed the products table on Spark, into a Hudi table of vectors by content key.

    python -m spark_jobs.embed --table-path T [--vectors-path V] [--begin I [--end I]]
        [--encoder auto|openvino-bf16|onnx-int8|onnx-fp32|torch] [--partitions N]
        [--hoodie-conf K=V ...]

The sync's work, spread over executors: the driver decides the engine as the sync would (an
ONNX export checked against torch) and ships that export with the job; each Python worker
loads it once and runs the sync's own chunker and that encoder on the rows (the table's
snapshot, or the commits of a window with `--begin`/`--end`); the vectors go to V (default
`<T>_chunk_vectors`, where the sync looks: VECTORS_TABLE_PATH), keyed by content key. The
sync then loads these vectors instead of embedding them. Content already in V is not
embedded again, so a re-run or a window embeds only what is new. A run over the whole
snapshot (no `--begin`) also deletes from V the vectors no live chunk uses (an edited or
deleted product's old texts), in one more commit: V follows the catalog, not its history,
and so does the sync's lookup index.

The content key names the engine (`all-MiniLM-L6-v2+int8` for the int8 export), so the sync
only loads vectors from the engine it runs itself. The engine is decided once, on the
driver (`--encoder`, default EMBEDDING_ENCODER; auto: int8 where the driver's CPU has
AVX2/VNNI/AMX), and every worker runs that engine or fails its task: where the executors' CPUs
differ from the syncer's, set `--encoder` to the engine the syncer logs at start-up. An
ONNX engine runs on the executors from the shipped export alone, so they need no torch
(spark_jobs/pack_env.py leaves it out); under torch each worker loads the model.

Fault tolerance: the chunk stage and the vectors are kept with a reliable checkpoint
(`SPARK_CHECKPOINT_DIR`, spark_jobs/session.py), not `localCheckpoint`, whose blocks live on
the executors and are lost with one; on a cluster that folder must be shared storage.
"""

from __future__ import annotations

import argparse
import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, get_args

from app.core.config import Settings, default_vectors_path, get_settings
from app.embedding import load_embedder
from app.embedding.choice import EncoderChoice
from app.sync.chunk_vectors import CONTENT_KEY, EMBEDDED_AT, MODEL_ID, VECTOR
from spark_jobs import cli
from spark_jobs.embed_worker import (
    CHUNK_SCHEMA,
    VECTOR_SCHEMA,
    EmbedConfig,
    ShippedOnnx,
    chunk_rows,
    embed_rows,
)
from spark_jobs.errors import JobError
from spark_jobs.table import (
    has_completed_writes,
    materialize,
    normalize_table_path,
    parse_hoodie_conf,
    product_columns,
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
    dropped: int  # vectors no live chunk uses, deleted (a run over the whole snapshot)
    engines: dict[str, int]  # model id (engine) -> vectors written by it
    vectors_path: str
    embed_seconds: float  # chunking and embedding, the write excluded
    seconds: float

    @property
    def chunks_per_second(self) -> float:
        return self.embedded / self.seconds if self.seconds else 0.0


# The engine an Embedder reports, as the choice that makes a worker run exactly it. bf16
# documents are the fp32 file on OpenVINO: a worker without AMX or OpenVINO runs that file
# on ONNX Runtime, the same vector space (embed_worker._shipped).
_ENGINES: dict[str, EncoderChoice] = {
    "onnx-int8": "onnx-int8",
    "onnx-fp32": "onnx-fp32",
    "openvino-bf16": "onnx-fp32",
}


def config_from(settings: Settings, encoder: EncoderChoice | None = None) -> EmbedConfig:
    """The chunking and embedding settings the sync would use, with the engine decided
    here on the driver (the model is loaded once to decide it) for every worker."""
    embedder = load_embedder(
        settings.embedding_model,
        "cpu",
        settings.embedding_batch_size,
        encoder or settings.embedding_encoder,
        settings.model_cache_dir,
    )
    engine = _ENGINES.get(embedder.encoder, "torch")
    logger.info("embedding with %s (%s) on every worker", embedder.model_id, engine)
    shipped = None
    if embedder.onnx is not None:
        # The export this driver checked, with its tokenizer: the workers run it alone.
        shipped = ShippedOnnx(
            str(embedder.onnx.model_path),
            embedder.tokenizer().to_str(),
            embedder.max_seq_tokens,
            bf16=embedder.encoder == "openvino-bf16",
        )
    return EmbedConfig(
        model=settings.embedding_model,
        encoder=engine,
        model_id=embedder.model_id,
        batch_size=settings.embedding_batch_size,
        max_chunk_tokens=settings.max_chunk_tokens,
        overlap_tokens=settings.chunk_overlap_tokens,
        onnx=shipped,
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
    if config.onnx is not None:
        spark.sparkContext.addFile(config.onnx.path)
    parallelism = partitions or spark.sparkContext.defaultParallelism
    # A table of a few files reads as a few partitions: spread the rows over every core.
    rows = _read(spark, table_path, begin, end).repartition(parallelism)
    # The chunk stage: one row per distinct content, kept once (it is counted, anti-joined
    # and embedded from here).
    chunks = materialize(
        spark.createDataFrame(
            rows.rdd.mapPartitions(chunk_rows(config)), CHUNK_SCHEMA
        ).dropDuplicates([CONTENT_KEY])
    )
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
    dropped = 0
    if exists and begin is None:
        assert props is not None
        dropped = _drop_dead(spark, vectors_path, chunks, props, overrides)
    logger.info(
        "%d distinct chunks, %d to embed into %s (%.1fs)",
        total,
        count,
        vectors_path,
        time.monotonic() - started,
    )
    embed_seconds = time.monotonic() - started
    if count:
        n = partitions or max(parallelism, -(-count // CHUNKS_PER_TASK))
        with _progress(spark, "embed", count, n):
            # Kept before the write: Hudi's upsert reads its input more than once.
            vectors = materialize(
                spark.createDataFrame(
                    todo.repartition(n).rdd.mapPartitions(embed_rows(config)), VECTOR_SCHEMA
                )
            )
        embed_seconds = time.monotonic() - started
        logger.info("embedded %d chunks (%.1fs)", count, embed_seconds)
        _write(vectors, vectors_path, props if exists else None, overrides, "upsert")
        logger.info("written to %s (%.1fs)", vectors_path, time.monotonic() - started)
    return EmbedResult(
        chunks=total,
        present=total - count,
        embedded=count,
        dropped=dropped,
        engines={config.model_id: count} if count else {},
        vectors_path=vectors_path,
        embed_seconds=embed_seconds,
        seconds=time.monotonic() - started,
    )


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
    return product_columns(reader.load(table_path))


def _drop_dead(
    spark: SparkSession,
    vectors_path: str,
    live: DataFrame,
    props: dict[str, str],
    overrides: dict[str, str] | None,
) -> int:
    """Delete the vectors whose key no chunk of the snapshot has; returns how many."""
    from pyspark.sql import functions as F

    stored = (
        spark.read.format("hudi")
        .option("hoodie.enable.data.skipping", "false")
        .load(vectors_path)
        .select(CONTENT_KEY, MODEL_ID, VECTOR, EMBEDDED_AT)
    )
    now = time.time_ns() // 1_000_000
    # A delete must not lose the merge to the stored row's (event-time) ts.
    dead = materialize(
        stored.join(live.select(CONTENT_KEY), CONTENT_KEY, "left_anti").withColumn(
            EMBEDDED_AT, F.greatest(F.col(EMBEDDED_AT), F.lit(now))
        )
    )
    dropped = dead.count()
    if dropped:
        logger.info("dropping %d vectors no live chunk uses from %s", dropped, vectors_path)
        _write(dead, vectors_path, props, overrides, "delete")
    return dropped


def _write(
    vectors: DataFrame,
    vectors_path: str,
    props: dict[str, str] | None,
    overrides: dict[str, str] | None,
    operation: Literal["upsert", "delete"],
) -> None:
    """One commit: into a new table a bulk_insert, else `operation`."""
    options = {
        "hoodie.table.name": props["hoodie.table.name"] if props else VECTORS_TABLE_NAME,
        "hoodie.datasource.write.table.type": "COPY_ON_WRITE",
        "hoodie.datasource.write.operation": operation if props else "bulk_insert",
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
        print(f"dropped {result.dropped}")
        for engine, n in sorted(result.engines.items()):
            print(f"engine {engine} {n}")
        print(f"vectors_path {result.vectors_path}")
        print(f"seconds {result.seconds:.1f}")
        print(f"chunks_per_second {result.chunks_per_second:.1f}")

    return cli.run(job, verbose=args.verbose)


if __name__ == "__main__":
    raise SystemExit(main())
