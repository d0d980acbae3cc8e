"""A cross-process lock so two syncers never write the same collection at once.

An advisory `flock` on a file named after the store location and collection. It covers
processes on one host or sharing a volume (the compose deployment); across hosts, run a
single `python -m app.sync --loop` service and set SYNC_MODE=off on the API replicas.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

from app.core.config import Settings
from app.core.errors import RecommenderError


class SyncBusyError(RecommenderError):
    """Another process is running a sync cycle on the same collection."""

    def __init__(self, path: Path, holder: str) -> None:
        super().__init__(f"another sync process (pid {holder or '?'}) holds {path}; not syncing")
        self.path = path


class SyncLock:
    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def for_settings(cls, settings: Settings) -> SyncLock | None:
        """None for an in-memory store: it is private to its process, nothing to share."""
        if settings.qdrant_urls:
            # A cluster is one location however its nodes are listed.
            location = ",".join(sorted(u.rstrip("/").lower() for u in settings.qdrant_urls))
        elif settings.qdrant_path == ":memory:":
            return None
        else:
            # One folder, one lock, however it is spelled (relative, trailing slash, link).
            location = os.path.realpath(os.path.expanduser(settings.qdrant_path))
        key = hashlib.sha256(f"{location}|{settings.qdrant_collection}".encode()).hexdigest()[:16]
        return cls(Path(settings.sync_lock_dir) / f"sync-{key}.lock")

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        """Hold the lock for the block; raise SyncBusyError at once if someone else has it."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 32, 0).decode(errors="replace").strip()
                raise SyncBusyError(self.path, holder) from None
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode(), 0)
            try:
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
