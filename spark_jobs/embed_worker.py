"""What `spark_jobs.embed` runs inside Spark's Python workers: chunk rows, embed chunks.

Plain `rdd.mapPartitions` over rows, not `mapInArrow`/`mapInPandas`: PySpark 3.5 wants
pandas for those, which nothing else here needs; pickling rows costs little beside the
model (~5 ms of CPU a chunk).

Kept apart from the job's module so Spark ships these functions by reference: a function
defined in `__main__` (the job run as `python -m`) would be pickled by value with its own
globals, and the model cache below would be rebuilt for every task. Python workers are
reused across tasks (`spark.python.worker.reuse`, Spark's default), so each loads the model
once.

When the driver decided an ONNX engine (`EmbedConfig.onnx`, set by `spark_jobs.embed`), the
workers run that very export, shipped with the job, with the tokenizer it came with: no
torch, no sentence-transformers and no export on an executor, so a cluster's executors
need neither torch nor its CUDA libraries (spark_jobs/pack_env.py leaves them out). A
driver that picked OpenVINO bf16 ships the fp32 export: a worker on a CPU with AMX and
OpenVINO runs it so too, any other on ONNX Runtime in fp32 (the vector space bf16 shares).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.core.catalog import Product
from app.embedding import Embedder, load_embedder
from app.embedding.choice import EncoderChoice, wants_bf16
from app.embedding.onnx_encoder import OnnxEncoder, Session, Vectors, open_session
from app.embedding.openvino_session import open_openvino
from app.sync.apply import EMBED_GROUP
from app.sync.chunk_vectors import CONTENT_KEY, EMBEDDED_AT, MODEL_ID, VECTOR
from app.sync.chunking import ProductChunker
from spark_jobs.errors import JobError

if TYPE_CHECKING:
    from pyspark.sql import Row

TEXT = "text"
PartitionFunction = Callable[[Iterable["Row"]], Iterator[tuple[Any, ...]]]


@dataclass(frozen=True, slots=True)
class EmbedConfig:
    """The driver's settings that decide a chunk's text and vector, shipped to every worker.

    The same fields the sync builds its chunker and embedder from (app/sync/engine.py), and
    the engine the driver resolved (`encoder` is never "auto" here; `model_id` names the
    vector space it embeds into): every worker runs that one engine or fails the task.
    """

    model: str
    encoder: EncoderChoice
    model_id: str
    batch_size: int
    max_chunk_tokens: int
    overlap_tokens: int
    # ONNX Runtime threads per task: a task holds spark.task.cpus cores.
    threads: int = 1
    onnx: ShippedOnnx | None = None  # the driver's checked engine; None: load the model


@dataclass(frozen=True, slots=True)
class ShippedOnnx:
    """The ONNX export the driver chose and checked against torch, as the sync does."""

    path: str  # the driver's; a worker gets its copy by name (addFile -> SparkFiles.get)
    tokenizer: str  # the model's tokenizer as JSON, truncation and padding off
    max_seq_tokens: int
    # The driver runs this fp32 file on OpenVINO in bf16: workers that can, do too.
    bf16: bool = False


@dataclass(frozen=True, slots=True)
class ShippedEncoder:
    """What the worker functions use of an Embedder: its engine's names and `embed`."""

    onnx: OnnxEncoder
    model_id: str
    encoder: str

    def embed(self, texts: list[str]) -> Vectors:
        return self.onnx.embed(texts)


@lru_cache(maxsize=2)
def worker_model(config: EmbedConfig) -> tuple[Embedder | ShippedEncoder, ProductChunker]:
    """This worker's embedder and chunker, loaded on first use (one per Python worker)."""
    from app.core.config import get_settings

    if config.onnx is not None:
        return _shipped(config, config.onnx)

    # The export cache is the worker's own (DATA_DIR or MODEL_CACHE_DIR where it runs).
    embedder = load_embedder(
        config.model,
        "cpu",
        config.batch_size,
        config.encoder,
        get_settings().model_cache_dir,
        config.threads,
        1,
    )
    chunker = ProductChunker(
        embedder.tokenizer(),
        config.model_id,
        min(config.max_chunk_tokens, embedder.max_seq_tokens),
        config.overlap_tokens,
    )
    return embedder, chunker


def _shipped(config: EmbedConfig, onnx: ShippedOnnx) -> tuple[ShippedEncoder, ProductChunker]:
    from pyspark import SparkFiles
    from tokenizers import Tokenizer

    path = Path(SparkFiles.get(Path(onnx.path).name))
    session: Session
    if onnx.bf16 and wants_bf16("auto")[0]:  # this worker's CPU and install, as the driver's
        session = open_openvino(path, config.threads, 1)
    else:
        session = open_session(path, config.threads, spinning=False)
    # Two tokenizers: the encoder's truncates at the model's limit, the chunker's must not.
    encoder = OnnxEncoder(
        session,
        Tokenizer.from_str(onnx.tokenizer),
        onnx.max_seq_tokens + 2,  # with the two special tokens, as app.embedding.choice
        config.batch_size,
        path,
    )
    chunker = ProductChunker(
        Tokenizer.from_str(onnx.tokenizer),
        config.model_id,
        min(config.max_chunk_tokens, onnx.max_seq_tokens),
        config.overlap_tokens,
    )
    return ShippedEncoder(encoder, config.model_id, config.encoder), chunker


CHUNK_SCHEMA = f"{CONTENT_KEY} string, {TEXT} string"
VECTOR_SCHEMA = (
    f"{CONTENT_KEY} string, {MODEL_ID} string, {VECTOR} array<float>, {EMBEDDED_AT} long"
)


def chunk_rows(config: EmbedConfig) -> PartitionFunction:
    """Product rows -> one (content key, text) per chunk, for `rdd.mapPartitions`."""

    def run(rows: Iterable[Row]) -> Iterator[tuple[Any, ...]]:
        _, chunker = worker_model(config)
        for row in rows:
            for chunk in chunker.chunk(Product.from_row(row.asDict())):
                yield chunk.chunk_hash, chunk.text

    return run


def embed_rows(config: EmbedConfig) -> PartitionFunction:
    """Chunk rows -> (content key, model id, vector, ts), on the driver's engine only."""

    def run(rows: Iterable[Row]) -> Iterator[tuple[Any, ...]]:
        embedder, _ = worker_model(config)
        if embedder.model_id != config.model_id:
            # The engine's probe failed here (or ONNX is missing): its vectors would live
            # in another space than the keys say.
            raise JobError(
                f"this worker runs {embedder.model_id} ({embedder.encoder}), the driver "
                f"decided {config.model_id} ({config.encoder}): set --encoder to an engine "
                "every executor can run"
            )
        for group in _groups(rows, EMBED_GROUP):
            vectors = embedder.embed([str(r[TEXT]) for r in group])
            now = time.time_ns() // 1_000_000
            for row, vector in zip(group, vectors, strict=True):
                yield row[CONTENT_KEY], config.model_id, vector.tolist(), now

    return run


def _groups(rows: Iterable[Row], size: int) -> Iterator[list[Row]]:
    group: list[Row] = []
    for row in rows:
        group.append(row)
        if len(group) == size:
            yield group
            group = []
    if group:
        yield group
