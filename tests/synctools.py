"""Helpers for sync tests: a table in tmp, an engine over an in-memory store, the invariant."""

from __future__ import annotations

import calendar
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from app.core.config import Settings, get_settings
from app.embedding import Embedder
from app.store import StoreError, VectorStore, open_store
from app.sync.engine import SyncEngine
from app.sync.state import CycleReport
from app.sync.verify import MirrorReport, mirror_verify

# The engines a sync or API scenario runs on: qdrant-client's local mode in memory, the
# embedded qdrant-edge shard on disk, and a real Qdrant server (marked `server`: the tier
# tests/conftest.py leaves out, and says so, when none is configured).
ENGINES = ["memory", "edge", pytest.param("server", marks=pytest.mark.server)]


def engine_settings(engine: str, request: pytest.FixtureRequest, folder: Path) -> dict[str, Any]:
    """Settings fields that point a harness or a service at `engine`: an edge shard in
    `folder`, or a collection of its own on the session's server."""
    if engine == "server":
        url = request.getfixturevalue("qdrant_server")
        return {"qdrant_url": url, "qdrant_collection": f"t_{uuid.uuid4().hex[:12]}"}
    path = ":memory:" if engine == "memory" else str(folder / "edge")
    return {"qdrant_url": None, "qdrant_path": path}


def product(pid: int, ts: int, name: str, description: str, **kw: Any) -> dict[str, Any]:
    return {
        "id": pid,
        "ts": ts,
        "name": name,
        "description": description,
        "category": kw.get("category", "electronics"),
        "brand": kw.get("brand", "Acme"),
        "price": kw.get("price", 10.0),
    }


def utc_instant_epoch(instant: str) -> float:
    """A Hudi instant time (yyyyMMddHHmmssSSS) read as UTC, apart from the code under test."""
    return calendar.timegm(time.strptime(instant[:14], "%Y%m%d%H%M%S")) + int(instant[14:17]) / 1e3


def wait_for(what: str, check: Callable[[], Any], timeout: float, *logs: Path) -> Any:
    """`check()`'s first truthy answer within `timeout` seconds; else fail with the tail of
    each process log, which is where a subprocess's reason for not getting there is."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := check():
            return found
        time.sleep(0.2)
    tails = "\n".join(f"--- {log.name}\n{log.read_text(errors='replace')[-3000:]}" for log in logs)
    raise AssertionError(f"timed out waiting for {what}\n{tails}")


def watch_failures(store: VectorStore, method: str, *, iterates: bool = False) -> list[str]:
    """Watch one of the store's reads (the real one runs): the list grows by the error of
    each call that raised StoreError. `iterates`: the method returns an iterator, which
    raises while it is read."""
    failed: list[str] = []
    real = getattr(store, method)

    def called(*args: Any, **kwargs: Any) -> Any:
        try:
            return real(*args, **kwargs)
        except StoreError as e:
            failed.append(str(e))
            raise

    def iterated(*args: Any, **kwargs: Any) -> Iterator[Any]:
        try:
            yield from real(*args, **kwargs)
        except StoreError as e:
            failed.append(str(e))
            raise

    setattr(store, method, iterated if iterates else called)
    return failed


def long_text(topic: str, sentences: int) -> str:
    return " ".join(
        f"Sentence {i} explains how the {topic} handles situation number {i} with care, "
        f"using durable materials and a thoughtful design that shoppers appreciate."
        for i in range(sentences)
    )


@dataclass
class Harness:
    settings: Settings
    store: VectorStore
    engine: SyncEngine

    def cycle(self, **kw: Any) -> CycleReport:
        return self.engine.run_cycle(**kw)

    def verify(self) -> MirrorReport:
        return mirror_verify(self.settings, self.store, self.engine.chunker)

    def assert_mirror(self) -> MirrorReport:
        report = self.verify()
        assert (report.missing, report.stale, report.extra) == (0, 0, 0), report
        assert report.stored_chunks == report.expected_chunks
        return report


def make_harness(
    table_path: Path | str, embedder: Embedder, qdrant_path: str = ":memory:", **kw: Any
) -> Harness:
    settings = Settings(
        hudi_table_path=str(table_path),
        qdrant_path=qdrant_path,
        max_chunk_tokens=64,
        chunk_overlap_tokens=8,
        **kw,
    )
    store = open_store(settings)
    return Harness(settings, store, SyncEngine(settings, store, embedder))


def sync_cli_in_process(
    args: list[str],
    env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> tuple[int, str]:
    """`python -m app.sync *args` with `env`, run in this process: (exit code, stdout).

    The same `main` as the CLI; a fresh interpreter would cost a torch import and a model
    load (~10-25 s on a shared 2-core box). Use a real subprocess where a second process
    is the point (resuming an on-disk store, the sync lock)."""
    from app.sync import __main__ as sync_cli

    capsys.readouterr()  # drop what the test printed before
    with monkeypatch.context() as m:
        for name, value in env.items():
            m.setenv(name, value)
        get_settings.cache_clear()
        try:
            code = sync_cli.main(args)
        finally:
            get_settings.cache_clear()
    return code, capsys.readouterr().out
