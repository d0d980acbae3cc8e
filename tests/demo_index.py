"""A searchable index of the demo catalog without a JVM, for tests of the HTTP API.

The chunks are made, embedded and written by the sync's own `ChunkApplier` (the real
chunker, the real model, the real embedded qdrant-edge engine); only the Hudi table is
skipped, since the API reads the index and never the table. A service started on it with
`SYNC_MODE=off` is a read replica, as in production with `python -m app.sync --loop`.
"""

from __future__ import annotations

import contextlib
import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.core.catalog import COLUMN_NAMES, Product
from app.core.config import ROOT, Settings
from app.embedding import Embedder
from app.store import open_store
from app.sync.engine import SyncEngine
from tests.live_server import ServerThread

DEMO_PRODUCTS = ROOT / "data/demo/products.jsonl"


def demo_products(every: int = 1) -> list[Product]:
    """Every `every`-th product of the demo catalog, in file order."""
    rows = [json.loads(line) for line in DEMO_PRODUCTS.open()][::every]
    return [Product(**{k: r.get(k) for k in COLUMN_NAMES}) for r in rows]


def build_demo_shard(shard: Path, embedder: Embedder, settings: Settings, every: int = 1) -> int:
    """Write the demo products' chunks into an edge shard at `shard`; returns the point count."""
    return write_shard(shard, embedder, settings, demo_products(every))


def write_shard(
    shard: Path, embedder: Embedder, settings: Settings, products: list[Product]
) -> int:
    """Write `products`' chunks into an edge shard at `shard`; returns the point count."""
    store = open_store(settings.model_copy(update={"qdrant_path": str(shard)}))
    try:
        engine = SyncEngine(settings, store, embedder)
        engine.applier.apply(products, {})
        return store.count()
    finally:
        store.close()


@dataclass(frozen=True)
class DemoShard:
    path: Path
    points: int
    products: list[Product]


# Every 3rd product (115): enough for filters and ranking, ~5 s to embed.
DEMO_EVERY = 3


# Imported by the test modules that need it (the name differs from the fixture's, as in
# tests/openai_stub.py, so the import does not trip ruff's F811).
@pytest.fixture(scope="session", name="demo_shard")
def demo_shard_fixture(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> DemoShard:
    """An edge shard holding the demo catalog's chunks (built once per test run)."""
    root = tmp_path_factory.mktemp("demo-shard")
    settings = Settings(sync_lock_dir=str(root))
    points = build_demo_shard(root / "qdrant", embedder, settings, every=DEMO_EVERY)
    return DemoShard(root / "qdrant", points, demo_products(DEMO_EVERY))


def replica_settings(demo_shard: DemoShard, workdir: Path, **settings: Any) -> Settings:
    """Settings of a read replica (`SYNC_MODE=off`) over a copy of the demo shard in
    `workdir` (the edge engine is single-process: a copy per service), plus `settings`."""
    shutil.copytree(demo_shard.path, workdir / "qdrant")
    return Settings(
        qdrant_path=str(workdir / "qdrant"),
        sync_mode="off",
        sync_lock_dir=str(workdir),
        **settings,
    )


@contextlib.contextmanager
def replica_client(demo_shard: DemoShard, workdir: Path) -> Iterator[httpx.Client]:
    """A client of a real uvicorn serving a read replica over a copy of the demo shard
    (`replica_settings` with the defaults: the offline answer, no API key)."""
    settings = replica_settings(demo_shard, workdir)
    with ServerThread(settings) as server, httpx.Client(base_url=server.url, timeout=30) as c:
        yield c


@contextlib.contextmanager
def catalog_client(
    embedder: Embedder, workdir: Path, products: list[Product], **settings: Any
) -> Iterator[httpx.Client]:
    """A client of a real uvicorn serving `products` alone from an edge shard of its own
    (`SYNC_MODE=off`), with `settings` (a test's own small catalog)."""
    served = Settings(
        qdrant_path=str(workdir / "qdrant"),
        sync_mode="off",
        sync_lock_dir=str(workdir),
        **settings,
    )
    write_shard(workdir / "build", embedder, served, products)
    shutil.copytree(workdir / "build", workdir / "qdrant")
    with ServerThread(served) as server, httpx.Client(base_url=server.url, timeout=30) as c:
        yield c


# A module's client of one replica (imported as `demo_client_fixture`, used as `demo_client`).
@pytest.fixture(scope="module", name="demo_client")
def demo_client_fixture(
    demo_shard: DemoShard, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[httpx.Client]:
    with replica_client(demo_shard, tmp_path_factory.mktemp("demo-replica")) as c:
        yield c
