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
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import socket
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

from app.embedding import load_embedder  # noqa: E402
from app.eval.data import DEFAULT_QUERIES, load_queries  # noqa: E402
from app.store.base import ChunkPoint  # noqa: E402
from app.store.edge_store import EdgeStore  # noqa: E402
from app.sync.chunking import PAYLOAD_FORMAT  # noqa: E402
from bench.rawhttp import Pool  # noqa: E402

CHUNKS_PER_PRODUCT = 2
SAMPLES_PER_CATEGORY = 24
NOISE = 0.035  # per-dimension sigma on a unit 384-d vector: cos to its base ~0.8


def generate(n: int, seed: int, out: Path) -> list[dict[str, Any]]:
    cmd = [sys.executable, "-m", "spark_jobs.generate_products", "--count", str(n)]
    subprocess.run([*cmd, "--seed", str(seed), "--output", str(out)], check=True, cwd=ROOT)
    return [json.loads(line) for line in out.open()]


def derive_vectors(rows: list[dict[str, Any]], seed: int) -> np.ndarray:
    embedder = load_embedder()
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


def load_shard(path: Path, rows: list[dict[str, Any]], matrix: np.ndarray, optimize: bool) -> None:
    store = EdgeStore(path)
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
    store.save_state({"completed": "0", "requested": "0", "table_path": "bench", "signature": ""})
    store.close()


def start_service(shard: Path, port: int, mode: str) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "RETRIEVAL_MODE": mode,
        "SYNC_MODE": "off",
        "QDRANT_PATH": str(shard),
        "QDRANT_URL": "",
        "HUDI_TABLE_PATH": str(shard.parent / "no-table"),
        "OPENAI_API_KEY": "",
        "LOG_LEVEL": "WARNING",
        "HF_HUB_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }
    env.pop("QDRANT_URL")
    cmd = [sys.executable, "-m", "uvicorn", "app.main:app", "--host", "127.0.0.1"]
    proc = subprocess.Popen(
        [*cmd, "--port", str(port), "--log-level", "warning"], cwd=ROOT, env=env
    )
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/ready", timeout=2).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        if proc.poll() is not None:
            raise SystemExit("service exited during startup")
        time.sleep(0.5)
    proc.terminate()
    raise SystemExit("service not ready in 180 s")


def drive(
    url: str, bodies: list[dict[str, Any]], clients: int, requests: int
) -> tuple[list[float], float]:
    """`clients` closed-loop clients sharing `requests` POST /search calls.

    On bench.rawhttp (keep-alive asyncio streams), not httpx: the client shares the 2
    cores with the service, and its cost lands in the one-client p50. Measured here
    against a trivial server: httpx.Client 0.52 ms of CPU per request, this 0.05 ms.
    """
    host, port = url.removeprefix("http://").split(":")
    encoded = [json.dumps(b).encode() for b in bodies]

    async def run() -> tuple[list[float], float]:
        pool = Pool(host, int(port))
        latencies: list[float] = []
        counter = iter(range(requests))

        async def client() -> None:
            for n in counter:
                t = time.perf_counter()
                status, raw = await pool.request("POST", "/search", encoded[n % len(encoded)])
                elapsed = time.perf_counter() - t
                if status != 200:
                    raise SystemExit(f"POST /search answered {status}: {raw[:200]!r}")
                latencies.append(elapsed)

        started = time.perf_counter()
        await asyncio.gather(*(client() for _ in range(clients)))
        wall = time.perf_counter() - started
        await pool.close()
        return latencies, wall

    return asyncio.run(run())


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


def pct(values: list[float], p: float) -> float:
    return sorted(values)[min(len(values) - 1, round(p / 100 * (len(values) - 1)))] * 1000


def report(label: str, lat: list[float], wall: float) -> tuple[float, float]:
    """Print one phase; returns (p50 ms, req/s)."""
    print(
        f"{label:<36} p50 {pct(lat, 50):7.2f} ms  p95 {pct(lat, 95):7.2f} ms  "
        f"p99 {pct(lat, 99):7.2f} ms  {len(lat) / wall:8.1f} req/s"
    )
    return pct(lat, 50), len(lat) / wall


def serve_and_drive(
    shard: Path, mode: str, phases: dict[str, list[dict[str, Any]]], clients: int, requests: int
) -> dict[tuple[str, int], tuple[float, float]]:
    """(phase, clients) -> (p50 ms, req/s) of the service in RETRIEVAL_MODE=mode."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = start_service(shard, port, mode)
    url = f"http://127.0.0.1:{port}"
    out: dict[tuple[str, int], tuple[float, float]] = {}
    try:
        print(f"\n[{mode}] service POST /search, {clients} clients, {requests} requests per phase")
        drive(url, phases["unfiltered"], clients, 64)  # warm-up
        for label, bodies in phases.items():
            out[label, clients] = report(label, *drive(url, bodies, clients, requests))
        # One client: the latency of a request with no queue in front of it.
        single = min(requests, 300)
        print(f"[{mode}] service POST /search, 1 client, {single} requests per phase")
        for label, bodies in phases.items():
            out[label, 1] = report(label, *drive(url, bodies, 1, single))
    finally:
        proc.terminate()
        proc.wait(30)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--products", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--requests", type=int, default=2000, help="per phase")
    ap.add_argument("--top-k", type=int, default=5)
    ap.add_argument("--optimize", action="store_true", help="build HNSW before serving")
    ap.add_argument(
        "--shard",
        type=Path,
        help="keep the shard in this folder and reuse it on the next run with the same "
        "--products/--seed/--optimize (the HNSW build is minutes; the phases are seconds)",
    )
    args = ap.parse_args()
    random.seed(args.seed)
    print(
        f"{args.products} products x {CHUNKS_PER_PRODUCT} chunks, derived vectors (see docstring)"
    )
    with tempfile.TemporaryDirectory(prefix="bench-retrieval-") as tmp:
        rows = generate(args.products, args.seed, Path(tmp) / "products.jsonl")
        started = time.perf_counter()
        matrix = derive_vectors(rows, args.seed)
        print(f"derived {len(matrix)} vectors in {time.perf_counter() - started:.1f}s")
        shard = args.shard or Path(tmp) / "qdrant"
        marker = shard.parent / f"{shard.name}.built"
        # The payload format too: a shard written before `chunk_count` searches differently.
        built_as = f"{args.products} {args.seed} {args.optimize} {PAYLOAD_FORMAT}"
        if marker.exists() and marker.read_text() == built_as:
            print(f"reusing the shard in {shard} ({built_as})")
        else:
            shutil.rmtree(shard, ignore_errors=True)
            load_shard(shard, rows, matrix, args.optimize)
            marker.write_text(built_as)

        queries = [q.query for q in load_queries(DEFAULT_QUERIES)]
        categories = sorted({r["category"] for r in rows})
        flt = [
            {"category": categories[i % len(categories)], "min_price": 20.0, "max_price": 200.0}
            for i in range(len(queries))
        ]
        phases = {
            "unfiltered": [{"query": q, "top_k": args.top_k} for q in queries],
            "filtered (category+price)": [
                {"query": q, "top_k": args.top_k, "filters": f}
                for q, f in zip(queries, flt, strict=True)
            ],
        }
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
            report(label + " (search only)", lat, time.perf_counter() - t0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
