"""Two syncers on the same collection never run at once: the second is told and waits."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from app.core.config import Settings
from app.sync.lock import SyncBusyError, SyncLock


def test_second_holder_is_refused_with_the_first_ones_pid(tmp_path: Path) -> None:
    settings = Settings(qdrant_path=str(tmp_path / "q"), sync_lock_dir=str(tmp_path))
    lock = SyncLock.for_settings(settings)
    assert lock is not None
    # Another *process* holds it (flock is per open file, so use a real second process).
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import sys, time
                from pathlib import Path
                from app.sync.lock import SyncLock
                with SyncLock(Path({str(lock.path)!r})).hold():
                    print("held", flush=True)
                    sys.stdin.read()
                """
            ),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(SyncBusyError, match=rf"pid {holder.pid}"), lock.hold():
            pass
    finally:
        holder.communicate("", timeout=30)
    with lock.hold():  # released when the holder exits
        pass


def test_in_memory_stores_need_no_lock() -> None:
    assert SyncLock.for_settings(Settings(qdrant_path=":memory:")) is None
    other = Settings(qdrant_path=":memory:", qdrant_url="http://qdrant:6333")
    assert SyncLock.for_settings(other) is not None


# slow: a fresh interpreter imports the whole app (~25 s on a shared machine).
@pytest.mark.slow
def test_sync_cli_exits_with_a_clear_message_while_another_syncer_runs(tmp_path: Path) -> None:
    settings = Settings(qdrant_path=str(tmp_path / "q"), sync_lock_dir=str(tmp_path))
    lock = SyncLock.for_settings(settings)
    assert lock is not None
    env = {
        "PATH": "/usr/bin:/bin",
        "HF_HUB_OFFLINE": "1",
        "QDRANT_PATH": settings.qdrant_path,
        "SYNC_LOCK_DIR": str(tmp_path),
        "HUDI_TABLE_PATH": str(tmp_path / "no-table-needed"),
    }
    with lock.hold():
        run = subprocess.run(
            [sys.executable, "-m", "app.sync", "--once"],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            cwd=Path(__file__).resolve().parents[2],
        )
    assert run.returncode == 3, run.stderr
    assert "another sync process" in run.stderr and "not syncing" in run.stderr


def test_one_store_location_is_one_lock_however_it_is_spelled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "data" / "qdrant").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "data")
    monkeypatch.chdir(tmp_path)
    spellings = [
        str(tmp_path / "data" / "qdrant"),
        "data/qdrant",
        "./data/qdrant/",
        "data/../data/qdrant",
        "link/qdrant",
    ]
    paths = {
        SyncLock.for_settings(Settings(qdrant_path=p, sync_lock_dir=str(tmp_path))).path  # type: ignore[union-attr]
        for p in spellings
    }
    assert len(paths) == 1
    urls = ["http://Qdrant:6333", "http://qdrant:6333/", " http://qdrant:6333"]
    locks = {SyncLock.for_settings(Settings(qdrant_url=u)).path for u in urls}  # type: ignore[union-attr]
    assert len(locks) == 1
