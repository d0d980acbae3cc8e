"""Retrieval latency of the running service at shop scale: dense-only vs hybrid, and numpy.

Generates N products (spark_jobs.generate_products), writes 2 chunks per product into an
embedded qdrant-edge shard (dense + BM25 vectors, as the sync writes them), then starts the
real service on it (uvicorn subprocess, SYNC_MODE=off) once per retrieval mode
(RETRIEVAL_MODE=dense, then hybrid, same shard) and drives `POST /search` (retrieval only:
query embedding + grouped search) with C concurrent clients and with one, unfiltered and
filtered (a lean keep-alive client, bench/rawhttp.py, so that the client's own CPU does
not count as the service's latency); hybrid figures are printed as ratios to dense-only
from the same run. It also
times an exact numpy search over the same vectors (dot products + top-k + grouping).

Vectors are *derived*, not embedded (embedding 200k chunks takes ~45 min here): a sample
of products per category is embedded with the real model, and every chunk gets the vector
of a sampled product of its own category plus Gaussian noise (cos ~0.8 to it). Queries are
real embeddings of the labelled eval queries, so scores and the threshold behave as in use.

    .venv/bin/python bench/retrieval.py                      # 100k products, 16 clients
    .venv/bin/python bench/retrieval.py --products 20000 --optimize
    .venv/bin/python bench/retrieval.py --products 20000 --optimize --store server

`--store server` serves the same points from a Qdrant server too (QDRANT_URL, or a server
started from QDRANT_SERVER_BIN): one API process per `--transports` entry (REST, gRPC),
and `--server-workers` API processes (app/api/serve.py) over each, all running at once;
every phase goes round them `--rounds` times, and each median is printed as server / edge
for hybrid retrieval. It adds a phase with each query's own category (that of its best
unfiltered match) and the same price bounds, beside the categories given in turn.

With `--dataset DIR` it serves a judged dev set instead, with real embeddings, through
POST /search and POST /recommend, one-client latency, C-client throughput and the
service's CPU per request, its services interleaved `--rounds` times as well
(bench/retrieval_dataset.py):

    .venv/bin/python bench/retrieval.py --dataset ../shared/eval/homedepot-dev --sizes 5000,54667
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from qdrant_client import QdrantClient, models  # noqa: E402

from app.core.config import Settings  # noqa: E402
from app.core.logging import configure_logging  # noqa: E402
from app.embedding import Embedder, load_embedder  # noqa: E402
from app.eval.data import DEFAULT_QUERIES, PRODUCTS_FILE, QUERIES_FILE, load_queries  # noqa: E402
from app.eval.vector_cache import DEFAULT_CACHE_DIR  # noqa: E402
from app.store import VectorStore, open_store  # noqa: E402
from app.store.base import ChunkPoint  # noqa: E402
from app.store.edge_store import EdgeStore  # noqa: E402
from app.sync.chunking import PAYLOAD_FORMAT  # noqa: E402
from app.sync.state import SyncCheckpoint  # noqa: E402
from bench.retrieval_dataset import run_dataset  # noqa: E402
from bench.service_process import (  # noqa: E402
    Phase,
    QdrantServerProcess,
    ServiceProcess,
    checkout_env,
    drive,
)

CHUNKS_PER_PRODUCT = 2
FILTERED_PHASE = "filtered (category+price)"
OWN_PHASE = "own category + price"
SAMPLES_PER_CATEGORY = 24
NOISE = 0.035  # per-dimension sigma on a unit 384-d vector: cos to its base ~0.8


def generate(n: int, seed: int, out: Path) -> list[dict[str, Any]]:
    cmd = [sys.executable, "-m", "spark_jobs.generate_products", "--count", str(n)]
    subprocess.run(
        [*cmd, "--seed", str(seed), "--output", str(out)], check=True, cwd=ROOT, env=checkout_env()
    )
    return [json.loads(line) for line in out.open()]


def derive_vectors(rows: list[dict[str, Any]], seed: int, embedder: Embedder) -> np.ndarray:
    rng = np.random.default_rng(seed)
    by_cat: dict[str, list[int]] = {}
    for i, r in enumerate(rows):
        by_cat.setdefault(r["category"], []).append(i)
    bases: dict[str, np.ndarray] = {}
    for cat, idx in by_cat.items():
        picked = rng.choice(idx, size=min(SAMPLES_PER_CATEGORY, len(idx)), replace=False)
        texts = [f"{rows[i]['name']}\n{rows[i]['description']}" for i in picked]
        bases[cat] = embedder.embed(texts)
    matrix = np.empty((len(rows) * CHUNKS_PER_PRODUCT, embedder.dim), dtype=np.float32)
    for i, r in enumerate(rows):
        base = bases[r["category"]]
        for c in range(CHUNKS_PER_PRODUCT):
            matrix[i * CHUNKS_PER_PRODUCT + c] = base[rng.integers(len(base))]
    matrix += rng.normal(scale=NOISE, size=matrix.shape).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix


def load_shard(
    path: Path, rows: list[dict[str, Any]], matrix: np.ndarray, optimize: bool, model_id: str
) -> None:
    fill(EdgeStore(path), rows, matrix, optimize, model_id)


def fill(
    store: VectorStore,
    rows: list[dict[str, Any]],
    matrix: np.ndarray,
    optimize: bool,
    model_id: str,
) -> None:
    """Write the points as the sync would, a checkpoint after them (naming the encoder of
    `matrix`, so the service queries with it); closes the store."""
    store.ensure_collection(matrix.shape[1])
    started = time.perf_counter()
    batch: list[ChunkPoint] = []
    for i, r in enumerate(rows):
        header = f"{r['name']} by {r['brand']} ({r['category']})"
        sentences = r["description"].split(". ")
        half = max(1, len(sentences) // 2)
        pieces = [". ".join(sentences[:half]), ". ".join(sentences[half:]) or r["description"]]
        for c, piece in enumerate(pieces):
            payload = {
                "product_id": r["id"],
                "chunk_hash": f"{r['id']}-{c}",
                "chunk_index": c,
                "chunk_count": len(pieces),
                "text": f"{header}\n{piece}",
                "name": r["name"],
                "category": r["category"],
                "brand": r["brand"],
                "price": r["price"],
            }
            vec = matrix[i * CHUNKS_PER_PRODUCT + c]
            batch.append(
                ChunkPoint(str(uuid.UUID(int=i * CHUNKS_PER_PRODUCT + c + 1)), vec, payload)
            )
        if len(batch) >= 8192:
            store.upsert(batch)
            batch = []
    store.upsert(batch)
    print(f"loaded {store.count()} points in {time.perf_counter() - started:.1f}s")
    if optimize:
        started = time.perf_counter()
        store.optimize()
        print(f"optimize (HNSW build) {time.perf_counter() - started:.1f}s")
    # SYNC_MODE=off serves once a checkpoint exists: write one as the syncer would.
    checkpoint = SyncCheckpoint("0", "0", "bench", signature="", model_id=model_id)
    store.save_state(checkpoint.to_dict())
    store.close()


def numpy_search(
    matrix: np.ndarray, pids: np.ndarray, q: np.ndarray, mask: np.ndarray | None, k: int
) -> list[int]:
    scores = matrix @ q
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    top = np.argpartition(-scores, k * 4)[: k * 4]
    out: list[int] = []
    for i in top[np.argsort(-scores[top])]:
        if pids[i] not in out:
            out.append(int(pids[i]))
        if len(out) == k:
            break
    return out


def report(label: str, phase: Phase) -> tuple[float, float]:
    """Print one phase; returns (p50 ms, req/s)."""
    print(
        f"{label:<36} p50 {phase.pct(50):7.2f} ms  p95 {phase.pct(95):7.2f} ms  "
        f"p99 {phase.pct(99):7.2f} ms  {phase.rps:8.1f} req/s"
    )
    return phase.pct(50), phase.rps


def serve_and_drive(
    shard: Path,
    mode: str,
    phases: dict[str, list[dict[str, Any]]],
    clients: int,
    requests: int,
    *,
    server: tuple[str, str] | None = None,
    label: str = "",
    workers: int = 1,
    env: dict[str, str] | None = None,
) -> dict[tuple[str, int], tuple[float, float]]:
    """(phase, clients) -> (p50 ms, req/s) of the service in RETRIEVAL_MODE=mode, on the
    shard or on `server` (url, collection), with `workers` API processes and `env`."""
    out: dict[tuple[str, int], tuple[float, float]] = {}
    url, collection = server or (None, None)
    with ServiceProcess(
        shard,
        mode,
        table_path=shard.parent / "no-table",
        qdrant_url=url,
        collection=collection,
        workers=workers,
        env=env,
    ) as service:
        url = service.url
        if label:
            mode = f"{mode}, {label}"
        print(f"\n[{mode}] service POST /search, {clients} clients, {requests} requests per phase")
        drive(url, "/search", phases["unfiltered"], clients, 64)  # warm-up
        for label, bodies in phases.items():
            out[label, clients] = report(label, drive(url, "/search", bodies, clients, requests))
        # One client: the latency of a request with no queue in front of it.
        single = min(requests, 300)
        print(f"[{mode}] service POST /search, 1 client, {single} requests per phase")
        for label, bodies in phases.items():
            out[label, 1] = report(label, drive(url, "/search", bodies, 1, single))
    return out


def run_generated(args: argparse.Namespace) -> int:
    random.seed(args.seed)
    print(
        f"{args.products} products x {CHUNKS_PER_PRODUCT} chunks, derived vectors (see docstring)"
    )
    with tempfile.TemporaryDirectory(prefix="bench-retrieval-") as tmp:
        rows = generate(args.products, args.seed, Path(tmp) / "products.jsonl")
        started = time.perf_counter()
        embedder = load_embedder()
        matrix = derive_vectors(rows, args.seed, embedder)
        print(f"derived {len(matrix)} vectors in {time.perf_counter() - started:.1f}s")
        shard = args.shard or Path(tmp) / "qdrant"
        marker = shard.parent / f"{shard.name}.built"
        # The payload format too: a shard written before `chunk_count` searches differently.
        built_as = (
            f"{args.products} {args.seed} {args.optimize} {PAYLOAD_FORMAT} {embedder.model_id}"
        )
        if marker.exists() and marker.read_text() == built_as:
            print(f"reusing the shard in {shard} ({built_as})")
        else:
            shutil.rmtree(shard, ignore_errors=True)
            load_shard(shard, rows, matrix, args.optimize, embedder.model_id)
            marker.write_text(built_as)

        queries = [q.query for q in load_queries(DEFAULT_QUERIES)]
        categories = sorted({r["category"] for r in rows})
        flt = [
            {"category": categories[i % len(categories)], "min_price": 20.0, "max_price": 200.0}
            for i in range(len(queries))
        ]
        phases = {
            "unfiltered": [{"query": q, "top_k": args.top_k} for q in queries],
            FILTERED_PHASE: [
                {"query": q, "top_k": args.top_k, "filters": f}
                for q, f in zip(queries, flt, strict=True)
            ],
        }
        if args.store == "server":
            return compare_server(args, Path(tmp), shard, rows, matrix, phases, embedder.model_id)
        dense = serve_and_drive(shard, "dense", phases, args.clients, args.requests)
        hybrid = serve_and_drive(shard, "hybrid", phases, args.clients, args.requests)
        print("\nhybrid / dense-only, same run:")
        for (label, clients), (p50, rps) in hybrid.items():
            d50, drps = dense[label, clients]
            print(
                f"  {label:<28} {clients:>2} client(s): p50 {p50:6.2f} / {d50:6.2f} ms "
                f"= {p50 / d50:4.2f}x   throughput {rps:6.1f} / {drps:6.1f} req/s "
                f"= {rps / drps:4.2f}x"
            )

        embedder = load_embedder()
        qv = embedder.embed(queries)
        t = time.perf_counter()
        for q in queries * 4:
            embedder.embed([q])
        embed_ms = (time.perf_counter() - t) / (len(queries) * 4) * 1000
        pids = np.repeat(np.array([r["id"] for r in rows]), CHUNKS_PER_PRODUCT)
        cats = np.repeat(np.array([r["category"] for r in rows]), CHUNKS_PER_PRODUCT)
        prices = np.repeat(np.array([r["price"] for r in rows]), CHUNKS_PER_PRODUCT)
        print(
            f"\nin-process, 1 client: torch query embedding {embed_ms:.2f} ms "
            "(for reference: the service embeds queries with the ONNX export by default)"
        )
        for label, use_filter in (("numpy unfiltered", False), ("numpy filtered", True)):
            lat = []
            t0 = time.perf_counter()
            for i in range(200):
                f = flt[i % len(flt)]
                mask = (
                    (cats == f["category"]) & (prices >= 20.0) & (prices <= 200.0)
                    if use_filter
                    else None
                )
                t = time.perf_counter()
                numpy_search(matrix, pids, qv[i % len(qv)], mask, args.top_k)
                lat.append(time.perf_counter() - t)
            report(label + " (search only)", Phase(lat, time.perf_counter() - t0))
    return 0


def compare_server(
    args: argparse.Namespace,
    tmp: Path,
    shard: Path,
    rows: list[dict[str, Any]],
    matrix: np.ndarray,
    phases: dict[str, list[dict[str, Any]]],
    model_id: str,
) -> int:
    """The service (hybrid) on the edge shard and on a Qdrant server holding the same points
    (QDRANT_URL, or a server started from QDRANT_SERVER_BIN): one API process per
    transport, and `--server-workers` processes over each. All of them run at once and
    every phase goes round them in turn, `--rounds` times (so load that drifts during the
    run hits each alike); each figure is the median over the rounds, as a ratio to the
    edge's."""
    url = os.environ.get("QDRANT_URL")
    binary = os.environ.get("QDRANT_SERVER_BIN")
    if not url and not binary:
        raise SystemExit("--store server needs QDRANT_URL or QDRANT_SERVER_BIN")
    grpc_port = os.environ.get("QDRANT_GRPC_PORT", "6334")
    with contextlib.ExitStack() as stack:
        if not url:
            started_server = stack.enter_context(
                QdrantServerProcess(str(binary), tmp / "qdrant-server")
            )
            url, grpc_port = started_server.url, str(started_server.grpc_port)
        collection = f"bench_{args.products}_{args.seed}_{uuid.uuid4().hex[:6]}"
        started = time.perf_counter()
        client = QdrantClient(url=url, check_compatibility=False)
        stack.callback(client.close)
        print(f"server {client.info().version} at {url}, collection {collection}")
        server = open_store(Settings(qdrant_url=url, qdrant_collection=collection))
        fill(server, rows, matrix, False, model_id)
        stack.callback(client.delete_collection, collection)
        # The server builds its HNSW index in the background: measure it built, as the shard.
        while client.get_collection(collection).status != models.CollectionStatus.GREEN:
            time.sleep(1)
        print(f"server loaded and indexed in {time.perf_counter() - started:.1f}s")
        configs = [(transport, 1) for transport in args.transports]
        if args.server_workers > 1:
            configs += [(transport, args.server_workers) for transport in args.transports]
        services = {
            "edge": stack.enter_context(
                ServiceProcess(shard, "hybrid", table_path=shard.parent / "no-table")
            )
        }
        for transport, n in configs:
            label = f"server {transport}" + (f", {n} API processes" if n > 1 else "")
            services[label] = stack.enter_context(
                ServiceProcess(
                    shard,
                    "hybrid",
                    table_path=shard.parent / "no-table",
                    qdrant_url=url,
                    collection=collection,
                    workers=n,
                    env={"QDRANT_TRANSPORT": transport, "QDRANT_GRPC_PORT": grpc_port},
                )
            )
        for service in services.values():
            drive(service.url, "/search", phases["unfiltered"], args.clients, 64)  # warm-up
        phases = {**phases, OWN_PHASE: own_category_phase(services["edge"].url, phases)}
        # (service, phase, clients) -> [(p50 ms, req/s) per round]
        runs: dict[tuple[str, str, int], list[tuple[float, float]]] = {}
        for r in range(args.rounds):
            print(f"\nround {r + 1}/{args.rounds}, load {os.getloadavg()[0]:.1f}")
            for phase, bodies in phases.items():
                # One client: the latency of a request with no queue in front of it.
                for clients, n in ((args.clients, args.requests), (1, min(args.requests, 300))):
                    for name, service in services.items():
                        got = drive(service.url, "/search", bodies, clients, n)
                        runs.setdefault((name, phase, clients), []).append(
                            report(f"{name}, {phase}, {clients} client(s)", got)
                        )
    median = {key: (_median(v, 0), _median(v, 1)) for key, v in runs.items()}
    for name in services:
        if name == "edge":
            continue
        print(f"\n{name} / edge (one process), hybrid, medians of {args.rounds} rounds:")
        for phase in phases:
            for clients in (args.clients, 1):
                p50, rps = median[name, phase, clients]
                e50, erps = median["edge", phase, clients]
                print(
                    f"  {phase:<28} {clients:>2} client(s): p50 {p50:6.2f} / {e50:6.2f} ms "
                    f"= {p50 / e50:4.2f}x   throughput {rps:6.1f} / {erps:6.1f} req/s "
                    f"= {rps / erps:4.2f}x"
                )
    return 0


def own_category_phase(url: str, phases: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The filtered phase's bodies with each query's own category, the category of its best
    unfiltered match on `url`, as a shopper's filter names what they are after. The
    filtered phase gives the queries the categories in turn, so half its pages are empty
    (headphones among books): two searches each, and nothing to show (BENCHMARKS.md)."""
    own = []
    with httpx.Client(base_url=url, timeout=60) as client:
        for plain, filtered in zip(phases["unfiltered"], phases[FILTERED_PHASE], strict=True):
            found = client.post("/search", json={**plain, "top_k": 1}).json()["products"]
            category = found[0]["category"] if found else None
            own.append({**filtered, "filters": {**filtered["filters"], "category": category}})
    return own


def _median(figures: list[tuple[float, float]], i: int) -> float:
    return statistics.median(f[i] for f in figures)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--products", type=int, default=100_000, help="generated catalog size")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--requests", type=int, default=2000, help="per phase (per C-client phase)")
    ap.add_argument("--top-k", type=int, help="default 5; 10 with --dataset")
    ap.add_argument("--optimize", action="store_true", help="build HNSW before serving")
    ap.add_argument(
        "--store",
        choices=["edge", "server"],
        default="edge",
        help="server: the service (hybrid) on the edge shard and then on a Qdrant server with "
        "the same points (QDRANT_URL, or one started from QDRANT_SERVER_BIN), compared",
    )
    ap.add_argument(
        "--transports",
        type=lambda t: [x.strip() for x in t.split(",") if x.strip()],
        # REST first: the service's default transport, and the faster one measured quiet.
        default=["rest", "grpc"],
        help="--store server: QDRANT_TRANSPORT values to serve with, one API process each "
        "(default %(default)s), and --server-workers processes each",
    )
    ap.add_argument(
        "--server-workers",
        type=int,
        default=2,
        help="--store server: also serve with this many API processes (WEB_CONCURRENCY)",
    )
    ap.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="--store server and --dataset: every phase goes round all the services this "
        "many times; the figures are the medians",
    )
    ap.add_argument(
        "--shard",
        type=Path,
        help="keep the shard in this folder and reuse it on the next run with the same "
        "--products/--seed/--optimize (the HNSW build is minutes; the phases are seconds); "
        "with --dataset, a folder of one shard per size",
    )
    ds = ap.add_argument_group("a judged dataset served by the real service (retrieval_dataset)")
    ds.add_argument(
        "--dataset",
        type=Path,
        help=f"folder with {PRODUCTS_FILE} and {QUERIES_FILE} (e.g. ../shared/eval/homedepot-dev)",
    )
    ds.add_argument(
        "--sizes",
        type=_sizes,
        help="comma-separated catalog sizes, each the first N products (default: all), "
        "e.g. 5000,54667: also prints the largest's one-client p50 / the smallest's",
    )
    ds.add_argument(
        "--cache-dir",
        type=Path,
        default=DEFAULT_CACHE_DIR,
        help="dense vector cache, as python -m app.eval's (default %(default)s)",
    )
    ds.add_argument("--single-requests", type=int, default=300, help="per one-client phase")
    ds.add_argument(
        "--model", type=Path, help="also serve with this LEARNED_MODEL (its ranker): +ranker"
    )
    ds.add_argument(
        "--max-seconds", type=float, default=60.0, help="no request starts later in a phase"
    )
    args = ap.parse_args()
    if args.dataset is None:
        args.top_k = args.top_k or 5
        return run_generated(args)
    args.top_k = args.top_k or 10
    configure_logging("INFO")  # index progress and ETA on stderr
    return run_dataset(args)


def _sizes(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of sizes: {text}") from e


if __name__ == "__main__":
    sys.exit(main())
