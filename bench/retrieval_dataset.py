"""`bench/retrieval.py --dataset DIR`: a judged dev set served by the real service.

For each size (the first N products of the dataset's products.jsonl; default all of them):
index the catalog as the sync does (`app.eval.index.build_chunk_index`: the sync's chunks,
REAL dense embeddings, cached by model and text under --cache-dir exactly as
`python -m app.eval` caches them, so a run after it embeds nothing) in an embedded
qdrant-edge shard; then do what a syncer's cycle does after it: build the HNSW index once
OPTIMIZE_AFTER_UNINDEXED chunks await it and write the checkpoint an API replica with
SYNC_MODE=off needs before /ready answers 200. (A syncer also rolls the index every
ROLL_AFTER_POINTS during a bootstrap: not done here, the dev sets are below that.)

Then one service per retrieval mode (dense-only as the baseline, then the configured
service ranking, RETRIEVAL_MODE, default hybrid; with `--model MODEL_DIR` also that ranking
with that LEARNED_MODEL, its ranker re-ordering, shown as `+ranker`), each on its own copy
of the shard, all running at once; POST /search and POST /recommend (offline extractive
generator: no OPENAI_API_KEY) are driven with the dataset's own query texts, one client
(p50, p99) and C clients (throughput), each with the service process's CPU seconds per
request. Every phase goes round the services in turn, `--rounds` times, so load that drifts
during the run hits each alike; each figure is the median over the rounds, compared as a
ratio to dense-only. With two or more sizes, the one-client p50s of the largest are also
divided by those of the smallest (the catalog-size cost of a request).
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.core.catalog import Product
from app.core.config import Settings, get_settings
from app.embedding import embedder_for
from app.eval.data import PRODUCTS_FILE, QUERIES_FILE, load_products, load_queries
from app.eval.index import build_chunk_index, chunker_for, seal_chunk_index
from app.eval.vector_cache import CachedEmbedder
from app.sync.chunking import PAYLOAD_FORMAT
from app.sync.engine import OPTIMIZE_AFTER_UNINDEXED
from bench.service_process import Phase, ServiceProcess, measure

logger = logging.getLogger("bench.retrieval")

ENDPOINTS = ("/search", "/recommend")
# A mode's suffix for the service run with --model's LEARNED_MODEL.
RANKED = "+ranker"
WARMUP_REQUESTS = 32
# HNSW build time per point, for the ETA only (~70-100 s at 100k points, DESIGN.md).
OPTIMIZE_S_PER_POINT = 0.001


@dataclass(frozen=True)
class Cell:
    """One endpoint in one mode: the medians over the rounds of its one-client phase (p50,
    p99, CPU ms per request) and of its C-client phase (req/s, CPU ms per request)."""

    p50: float
    p99: float
    cpu_single: float
    rps: float
    cpu_many: float
    rounds: int

    @classmethod
    def median_of(cls, phases: list[tuple[Phase, Phase]]) -> Cell:
        def median(figure: Callable[[Phase, Phase], float]) -> float:
            return statistics.median(figure(single, many) for single, many in phases)

        return cls(
            median(lambda single, _: single.pct(50)),
            median(lambda single, _: single.pct(99)),
            median(lambda single, _: single.cpu_ms_per_request),
            median(lambda _, many: many.rps),
            median(lambda _, many: many.cpu_ms_per_request),
            len(phases),
        )


@dataclass
class SizeRun:
    size: int
    chunks: int
    load_before: tuple[float, float, float]
    cells: dict[tuple[str, str], Cell]  # (mode, endpoint) -> phases
    load_after: tuple[float, float, float] = (0.0, 0.0, 0.0)


def _table_path(shard: Path) -> Path:
    # SYNC_MODE=off never reads the table for /search or /recommend; the checkpoint names
    # the same path the service is given, as a syncer's would.
    return shard.parent / f"{shard.name}-no-table"


def _build_shard(
    shard: Path,
    products: list[Product],
    settings: Settings,
    embedder: CachedEmbedder,
) -> int:
    """Index `products` into `shard` as a syncer would leave it; returns the chunk count."""
    started = time.perf_counter()
    print(f"indexing {len(products)} products into {shard} ...", file=sys.stderr, flush=True)
    store = build_chunk_index(products, settings, embedder, path=str(shard))
    try:
        chunks = store.count()
        print(
            f"indexed {len(products)} products as {chunks} chunks in "
            f"{time.perf_counter() - started:.1f}s",
            file=sys.stderr,
        )
        unindexed = chunks
        if chunks >= OPTIMIZE_AFTER_UNINDEXED:  # as SyncEngine._cycle does after a bootstrap
            t = time.perf_counter()
            print(
                f"building the HNSW index (the syncer does at >= {OPTIMIZE_AFTER_UNINDEXED} "
                f"new chunks), ETA ~{chunks * OPTIMIZE_S_PER_POINT:.0f}s",
                file=sys.stderr,
                flush=True,
            )
            store.optimize()
            unindexed = 0
            print(f"HNSW index built in {time.perf_counter() - t:.1f}s", file=sys.stderr)
        seal_chunk_index(store, settings, embedder, str(_table_path(shard)), unindexed=unindexed)
    finally:
        store.close()
    return chunks


def _shard_for(
    root: Path,
    dataset: Path,
    products: list[Product],
    settings: Settings,
    embedder: CachedEmbedder,
) -> tuple[Path, int]:
    """The shard of `products` under `root`, reused when built alike (--shard)."""
    shard = root / f"{dataset.name}-{len(products)}"
    marker = root / f"{shard.name}.built"
    built_as = (
        f"{dataset.resolve()} {len(products)} {chunker_for(settings, embedder).signature} "
        f"{PAYLOAD_FORMAT} {settings.max_chunk_tokens} {settings.chunk_overlap_tokens}"
    )
    if marker.exists() and (shard / "sync_state.json").exists():
        recorded, _, count = marker.read_text().rpartition(" chunks=")
        if recorded == built_as:
            print(f"reusing the shard in {shard}", file=sys.stderr)
            return shard, int(count)
    shutil.rmtree(shard, ignore_errors=True)
    marker.unlink(missing_ok=True)
    chunks = _build_shard(shard, products, settings, embedder)
    marker.write_text(f"{built_as} chunks={chunks}")
    return shard, chunks


def _drive(
    service: ServiceProcess,
    path: str,
    bodies: list[dict[str, Any]],
    args: argparse.Namespace,
    tag: str,
) -> tuple[Phase, Phase]:
    """One round of `path` on `service`: the one-client phase, then the C-client one."""
    cap = args.max_seconds
    single = measure(
        service, path, bodies, 1, args.single_requests, max_seconds=cap, label=f"{tag} 1c"
    )
    many = measure(
        service, path, bodies, args.clients, args.requests, max_seconds=cap, label=f"{tag} C"
    )
    print(
        f"{tag:<52} 1 client: p50 {single.pct(50):8.2f} ms  p99 {single.pct(99):8.2f} ms"
        f"  CPU {single.cpu_ms_per_request:7.2f} ms/req  (n={len(single.latencies)})\n"
        f"{'':<52} {args.clients} clients: {many.rps:8.1f} req/s"
        f"  CPU {many.cpu_ms_per_request:7.2f} ms/req  (n={len(many.latencies)})",
        flush=True,
    )
    return single, many


def _serve_all(
    shard: Path,
    modes: list[str],
    queries: list[str],
    args: argparse.Namespace,
    label: str,
) -> dict[tuple[str, str], Cell]:
    """(mode, endpoint) -> Cell: a service per mode, each on its own copy of `shard`, all
    running at once, every phase going round them `args.rounds` times."""
    bodies: list[dict[str, Any]] = [{"query": q, "top_k": args.top_k} for q in queries]
    runs: dict[tuple[str, str], list[tuple[Phase, Phase]]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-shards-") as copies, ExitStack() as stack:
        services: dict[str, ServiceProcess] = {}
        for i, mode in enumerate(modes):
            own = shard
            if i:  # one process per shard: the engine holds its folder
                own = Path(copies) / f"{shard.name}-{i}"
                shutil.copytree(shard, own)
            learned = str(args.model) if mode.endswith(RANKED) else ""
            services[mode] = stack.enter_context(
                ServiceProcess(
                    own,
                    mode.removesuffix(RANKED),
                    table_path=_table_path(shard),
                    learned_model=learned,
                )
            )
        for service in services.values():
            for path in ENDPOINTS:
                # Warm-up from the end of the query list: the measured phases start at its top.
                measure(service, path, bodies[-WARMUP_REQUESTS:], 1, WARMUP_REQUESTS)
        for r in range(args.rounds):
            print(
                f"[{label}] round {r + 1}/{args.rounds}, load {os.getloadavg()[0]:.1f}; "
                f"{len(modes) * len(ENDPOINTS) * 2} phases of at most {args.max_seconds:.0f}s",
                file=sys.stderr,
                flush=True,
            )
            for path in ENDPOINTS:
                for mode, service in services.items():
                    tag = f"{label} {mode} POST {path} r{r + 1}"
                    runs.setdefault((mode, path), []).append(
                        _drive(service, path, bodies, args, tag)
                    )
    return {key: Cell.median_of(phases) for key, phases in runs.items()}


def _ratio(a: float, b: float) -> str:
    return f"{a / b:5.2f}x" if b else "  n/a"


def _print_size(run: SizeRun, modes: list[str], clients: int, total: int) -> None:
    base = modes[0]
    print(
        f"\n{run.size} of {total} products ({run.chunks} chunks); "
        f"load average {' '.join(f'{x:.2f}' for x in run.load_before)} before, "
        f"{' '.join(f'{x:.2f}' for x in run.load_after)} after; medians of "
        f"{next(iter(run.cells.values())).rounds} rounds"
    )
    print(
        f"{'endpoint':<11}{'mode':<14}{'1c p50 ms':>11}{'1c p99 ms':>11}{'CPU ms/req':>12}"
        f"{f'{clients}c req/s':>11}{'CPU ms/req':>12}"
    )
    for path in ENDPOINTS:
        for mode in modes:
            c = run.cells[mode, path]
            print(
                f"{path:<11}{mode:<14}{c.p50:11.2f}{c.p99:11.2f}"
                f"{c.cpu_single:12.2f}{c.rps:11.1f}{c.cpu_many:12.2f}"
            )
        d = run.cells[base, path]
        for mode in modes[1:]:
            c = run.cells[mode, path]
            print(
                f"{'':<11}{f'{mode}/{base}':<14}"
                f"{_ratio(c.p50, d.p50):>11}"
                f"{_ratio(c.p99, d.p99):>11}"
                f"{_ratio(c.cpu_single, d.cpu_single):>12}"
                f"{_ratio(c.rps, d.rps):>11}"
                f"{_ratio(c.cpu_many, d.cpu_many):>12}"
            )


def _print_scaling(small: SizeRun, large: SizeRun, modes: list[str]) -> None:
    print(
        f"\none-client p50, {large.size} products / first {small.size} "
        "(same run; the acceptance check is the service ranking's POST /recommend <= 1.5):"
    )
    for path in ENDPOINTS:
        for mode in modes:
            a = large.cells[mode, path].p50
            b = small.cells[mode, path].p50
            check = ""
            if path == "/recommend" and mode == modes[-1]:
                check = "  ok (<= 1.5)" if a / b <= 1.5 else "  OVER 1.5"
            print(f"  POST {path:<11} {mode:<7} {a:8.2f} / {b:8.2f} ms = {_ratio(a, b)}{check}")


def run_dataset(args: argparse.Namespace) -> int:
    settings = get_settings()
    dataset: Path = args.dataset
    try:
        catalog = load_products(dataset / PRODUCTS_FILE)
        queries = [q.query for q in load_queries(dataset / QUERIES_FILE)]
    except (OSError, ValueError, KeyError) as e:
        print(f"error: cannot read {dataset}: {e}", file=sys.stderr)
        return 2
    sizes = sorted(args.sizes or [len(catalog)])
    if sizes[0] < 1 or sizes[-1] > len(catalog):
        print(f"error: --sizes must be between 1 and {len(catalog)}", file=sys.stderr)
        return 2
    modes: list[str] = list(dict.fromkeys(["dense", settings.retrieval_mode]))
    if args.model is not None:
        modes.append(settings.retrieval_mode + RANKED)
    embedder = CachedEmbedder.wrap(embedder_for(settings), args.cache_dir)
    print(
        f"{dataset.name}: {len(catalog)} products, {len(queries)} queries; sizes {sizes}; "
        f"modes {modes} (service = {settings.retrieval_mode}); top_k {args.top_k}; "
        f"model {embedder.model_id}, vector cache {embedder.path}"
    )
    runs: list[SizeRun] = []
    with tempfile.TemporaryDirectory(prefix="bench-retrieval-") as tmp:
        root: Path = args.shard or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        shards: list[tuple[int, Path, int]] = []
        try:
            for size in sizes:
                shard, chunks = _shard_for(root, dataset, catalog[:size], settings, embedder)
                shards.append((size, shard, chunks))
        finally:
            embedder.save()
        print(
            f"\nservice phases: {args.single_requests} requests at 1 client, "
            f"{args.requests} at {args.clients} clients, each at most {args.max_seconds:.0f}s"
        )
        for size, shard, chunks in shards:
            run = SizeRun(size, chunks, os.getloadavg(), {})
            run.cells = _serve_all(shard, modes, queries, args, f"{size}")
            run.load_after = os.getloadavg()
            runs.append(run)
    print(f"\n=== {dataset.name}: ratios to {modes[0]}-only measured in the same run ===")
    for run in runs:
        _print_size(run, modes, args.clients, len(catalog))
    if len(runs) > 1:
        _print_scaling(runs[0], runs[-1], modes)
    return 0
