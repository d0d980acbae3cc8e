"""Restarts, crashes and timeline surprises: each ends with the mirror invariant holding."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from app.store.base import VectorStore
from app.sync import apply as apply_module
from spark_jobs.create_table import create_table
from spark_jobs.delete_products import delete_ids
from spark_jobs.upsert_products import upsert_rows
from tests.synctools import long_text, make_harness, product, sync_cli_in_process

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def table(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A COW table with two commits: 6 products, then 2 edits."""
    path = str(tmp_path_factory.mktemp("recovery") / "products")
    create_table(spark, path)
    upsert_rows(
        spark,
        path,
        [product(i, 100, f"Product {i}", long_text(f"item {i}", 1 + i % 3)) for i in range(1, 7)],
    )
    upsert_rows(spark, path, [product(1, 200, "Product 1b", long_text("edited item", 4))])
    return path


def test_restart_resumes_from_the_stored_checkpoint_and_embeds_nothing(
    table: str,
    embedder: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    qdrant = str(tmp_path / "qdrant")
    first = make_harness(table, embedder, qdrant_path=qdrant)
    boot = first.cycle()
    assert boot.mode == "bootstrap" and boot.embedded > 0
    first.assert_mirror()
    checkpoint = first.engine.checkpoint()
    first.store.close()

    # A second *process* on the same on-disk store: resumes, embeds nothing, still a mirror.
    env = {
        "HUDI_TABLE_PATH": table,
        "QDRANT_PATH": qdrant,
        "MAX_CHUNK_TOKENS": "64",
        "CHUNK_OVERLAP_TOKENS": "8",
        "HF_HUB_OFFLINE": "1",
    }
    once = _run_sync(["--once"], {**os.environ, **env})
    assert once.returncode == 0, once.stderr
    assert "mode noop" in once.stdout and "embedded 0" in once.stdout
    assert f"checkpoint {checkpoint.completed}" in once.stdout  # type: ignore[union-attr]

    # --verify and --full: the same CLI, in this process (the resume above is the part that
    # needs a second process).
    code, verify = sync_cli_in_process(["--verify"], env, monkeypatch, capsys)
    assert code == 0 and "missing 0\nstale 0\nextra 0" in verify, verify

    # Forcing a full reconciliation re-embeds nothing either: every chunk is keyed by content.
    code, full = sync_cli_in_process(["--full"], env, monkeypatch, capsys)
    assert code == 0 and "mode full" in full and "embedded 0" in full, full


def _run_sync(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app.sync", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


class Boom(RuntimeError):
    pass


def test_crash_after_upsert_before_checkpoint(
    spark: Any, embedder: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(tmp_path / "products")
    create_table(spark, path)
    upsert_rows(spark, path, [product(i, 1, f"P{i}", long_text(f"p{i}", 2)) for i in range(3)])
    h = make_harness(path, embedder)
    h.cycle()
    h.assert_mirror()

    upsert_rows(spark, path, [product(0, 2, "P0 new", "Short now.")])
    delete_ids(spark, path, [1])

    def fail_save(state: dict[str, Any]) -> None:
        raise Boom("crash between the vector upsert and the checkpoint write")

    with monkeypatch.context() as m:
        m.setattr(h.store, "save_state", fail_save)
        with pytest.raises(Boom):
            h.cycle()
    assert h.engine.totals.last_error and "Boom" in h.engine.totals.last_error

    # The checkpoint did not move, so the same window is read again; nothing is lost.
    again = h.cycle()
    assert again.mode == "incremental" and again.embedded == 0  # landed before the crash
    h.assert_mirror()


def test_crash_mid_batch(
    spark: Any, embedder: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(tmp_path / "products")
    create_table(spark, path)
    upsert_rows(spark, path, [product(i, 1, f"P{i}", long_text(f"p{i}", 3)) for i in range(8)])
    h = make_harness(path, embedder)
    monkeypatch.setattr(apply_module, "UPSERT_BATCH", 4)

    real_upsert = h.store.upsert
    calls = {"n": 0}

    def flaky(points: Any) -> None:
        calls["n"] += 1
        if calls["n"] == 3:
            raise Boom("store went away mid-batch")
        real_upsert(points)

    with monkeypatch.context() as m:
        m.setattr(h.store, "upsert", flaky)
        with pytest.raises(Boom):
            h.cycle()
    partial = h.store.count()
    assert partial > 0  # two batches landed, no checkpoint

    boot = h.cycle()
    assert boot.mode == "bootstrap" and boot.skipped == partial
    h.assert_mirror()


def test_recreated_table_and_archived_checkpoint_trigger_full_reconciliation(
    spark: Any, embedder: Any, tmp_path: Path
) -> None:
    path = str(tmp_path / "products")
    create_table(spark, path)
    upsert_rows(spark, path, [product(i, 1, f"Old {i}", f"Old product {i}.") for i in range(4)])
    h = make_harness(path, embedder)
    h.cycle()
    h.assert_mirror()

    # The table is dropped and re-created with other rows: the checkpoint's instant is gone.
    shutil.rmtree(path)
    create_table(spark, path, "MERGE_ON_READ")
    upsert_rows(spark, path, [product(i, 1, f"New {i}", f"New product {i}.") for i in (2, 3, 9)])
    report = h.cycle()
    assert report.mode == "full" and "not on the active timeline" in report.reason
    assert h.engine.totals.full_reconciliations == 2  # bootstrap + this one
    mirror = h.assert_mirror()
    assert mirror.products == 3

    # A checkpoint whose instant was archived (older than the active timeline): same path.
    state = h.store.load_state()
    assert state is not None
    h.store.save_state(
        {**state, "requested": "20000101000000000", "completed": "20000101000001000"}
    )
    report = h.cycle()
    assert report.mode == "full" and report.embedded == 0
    h.assert_mirror()


def test_store_can_be_any_backend(embedder: Any, table: str, tmp_path: Path) -> None:
    """In-memory and on-disk stores end with identical point sets for the same table."""
    mem = make_harness(table, embedder)
    disk = make_harness(table, embedder, qdrant_path=str(tmp_path / "edge"))
    mem.cycle()
    disk.cycle()
    assert _ids(mem.store) == _ids(disk.store)


def _ids(store: VectorStore) -> set[str]:
    return {c.id for c in store.iter_chunks()}
