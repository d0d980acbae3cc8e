"""The process's event log: JSON-line segments under EVENTS_DIR, closed atomically.

One writer thread per process owns the open segment (`EVENTS_DIR/_open/<name>.jsonl`,
held with an exclusive `flock`). Callers hand it lines:
- `record` (impressions): never blocks or fails the answer; written and fsynced within
  EVENTS_FLUSH_SECONDS; a full queue or a refusing disk counts the loss in /metrics.
- `record_durable` (POST /events): returns once the lines are fsynced (group commit:
  one fsync for everything waiting), so a 202 means the events survive a kill -9.
A segment is closed after EVENTS_SEGMENT_SECONDS (or at shutdown): fsynced, renamed to
`EVENTS_DIR/<name>.jsonl` and the folder fsynced. Readers (`spark_jobs.ingest_events`)
see only closed segments: Spark's file source skips `_`-prefixed folders.

With EVENTS_DIR=s3://…, `folder` is a local spool and a `SegmentShipper` uploads each
closed segment (app/events/shipping.py).

A process killed with an open segment leaves it in `_open/` with its lock released; every
live writer sweeps `_open/` at start and at each rotation and closes such orphans (a
partial last line, cut by the kill, is dropped: it was never acknowledged).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import fcntl
import logging
import os
import socket
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Protocol

from prometheus_client import Counter

from app.core.errors import RecommenderError
from app.events.records import Interaction

logger = logging.getLogger(__name__)

OPEN_DIR = "_open"
SUFFIX = ".jsonl"
# Past this many lines waiting for the writer, impressions are dropped (and counted) and
# durable writes refused: memory must not follow a stalled disk.
MAX_PENDING = 100_000

EVENTS_RECORDED = Counter(
    "events_recorded", "Events written to a segment (fsynced), by type.", ["type"]
)
EVENTS_LOST = Counter(
    "events_lost",
    "Impressions not recorded (the answer went out regardless), by reason.",
    ["reason"],
)


class Shipper(Protocol):
    """Takes closed segments elsewhere (app/events/shipping.py's SegmentShipper)."""

    def wake(self) -> None: ...

    def close(self) -> None: ...


class EventLogError(RecommenderError):
    """Events could not be stored durably; the client may retry."""


@dataclass
class _Pending:
    items: Sequence[Interaction]
    done: concurrent.futures.Future[None] | None  # None: an impression, nobody waits


@dataclass
class _Segment:
    name: str
    file: BinaryIO
    opened: float
    size: int = 0
    types: dict[str, int] = field(default_factory=dict)


class EventLog:
    """Args:
    folder: EVENTS_DIR (created if missing).
    flush_seconds: longest an impression waits before it is written and fsynced.
    segment_seconds: how long a segment stays open before it is closed for ingestion.
    shipper: uploads closed segments to object storage (closed with the log); None: they
        stay in `folder`.
    """

    def __init__(
        self,
        folder: Path,
        flush_seconds: float,
        segment_seconds: float,
        shipper: Shipper | None = None,
    ) -> None:
        self.folder = folder
        self.shipper = shipper
        self.flush_seconds = flush_seconds
        self.segment_seconds = segment_seconds
        self.source = f"{socket.gethostname()}:{os.getpid()}"
        (folder / OPEN_DIR).mkdir(parents=True, exist_ok=True)
        self._cond = threading.Condition()
        self._queue: list[_Pending] = []
        self._queued_lines = 0
        self._urgent = False
        self._stopping = False
        self._seq = 0
        self._segment: _Segment | None = None
        self._last_sweep = 0.0
        self._thread = threading.Thread(target=self._run, name="event-log", daemon=True)
        self.sweep_orphans()
        self._thread.start()

    # --- callers -----------------------------------------------------------------------
    def record(self, items: Sequence[Interaction]) -> None:
        """Queue events nobody waits for (impressions); never raises."""
        with self._cond:
            if self._stopping or self._queued_lines + len(items) > MAX_PENDING:
                EVENTS_LOST.labels(reason="queue_full").inc(len(items))
                return
            # Serialised by the writer thread: the answer's path only queues.
            self._queue.append(_Pending(items, None))
            self._queued_lines += len(items)
            if len(self._queue) == 1:
                self._cond.notify()  # the writer may be asleep until the next rotation

    async def record_durable(self, items: Sequence[Interaction]) -> None:
        """Return once `items` are fsynced in a segment.

        Raises:
            EventLogError: the queue is full, the log is closing, or the disk refused.
        """
        done: concurrent.futures.Future[None] = concurrent.futures.Future()
        with self._cond:
            if self._stopping:
                raise EventLogError("the event log is closing")
            if self._queued_lines + len(items) > MAX_PENDING:
                raise EventLogError("the event log is behind; retry shortly")
            self._queue.append(_Pending(items, done))
            self._queued_lines += len(items)
            self._urgent = True
            self._cond.notify()
        await asyncio.wrap_future(done)

    def close(self) -> None:
        """Write what is queued, close the open segment, stop the writer."""
        with self._cond:
            self._stopping = True
            self._cond.notify()
        self._thread.join()
        if self.shipper is not None:
            self.shipper.close()

    # --- the writer thread -----------------------------------------------------------
    def _run(self) -> None:
        while True:
            with self._cond:
                if not self._queue and not self._stopping:
                    self._cond.wait(timeout=self._wait_seconds())
                elif self._queue and not self._urgent and not self._stopping:
                    # Impressions only: let more join this write, up to the flush interval.
                    self._cond.wait(timeout=self.flush_seconds)
                batch, self._queue = self._queue, []
                self._queued_lines = 0
                self._urgent = False
                stopping = self._stopping
            if batch:
                self._write(batch)
            now = time.monotonic()
            if self._segment is not None and (
                stopping or now - self._segment.opened >= self.segment_seconds
            ):
                self._close_segment()
            if now - self._last_sweep >= self.segment_seconds:
                self.sweep_orphans()
            if stopping:
                with self._cond:
                    if not self._queue:
                        return

    def _wait_seconds(self) -> float:
        if self._segment is None:
            return self.segment_seconds
        return max(0.05, self.segment_seconds - (time.monotonic() - self._segment.opened))

    def _write(self, batch: list[_Pending]) -> None:
        data = b"".join(item.to_line() for p in batch for item in p.items)
        try:
            segment = self._segment or self._open_segment()
            segment.file.write(data)
            segment.file.flush()
            os.fsync(segment.file.fileno())
            segment.size += len(data)
        except OSError as e:
            logger.error("event log: writing %d bytes to %s failed: %s", len(data), self.folder, e)
            self._abandon_segment()
            for p in batch:
                if p.done is None:
                    EVENTS_LOST.labels(reason="disk").inc(len(p.items))
                else:
                    p.done.set_exception(EventLogError(f"events not stored: {e}"))
            return
        for p in batch:
            for item in p.items:
                EVENTS_RECORDED.labels(type=item.type).inc()
            if p.done is not None:
                p.done.set_result(None)

    def _open_segment(self) -> _Segment:
        self._seq += 1
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
        host = socket.gethostname().replace("-", "_")
        name = f"{stamp}-{host}-{os.getpid()}-{self._seq:06d}{SUFFIX}"
        file = open(self.folder / OPEN_DIR / name, "ab")  # noqa: SIM115 - held across writes
        fcntl.flock(file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        self._segment = _Segment(name, file, time.monotonic())
        return self._segment

    def _close_segment(self) -> None:
        segment, self._segment = self._segment, None
        if segment is None:
            return
        try:
            os.fsync(segment.file.fileno())
            os.rename(self.folder / OPEN_DIR / segment.name, self.folder / segment.name)
            _fsync_dir(self.folder)
            _fsync_dir(self.folder / OPEN_DIR)
            if self.shipper is not None:
                self.shipper.wake()
        except OSError as e:
            logger.error("event log: closing %s failed (the sweep retries): %s", segment.name, e)
        finally:
            segment.file.close()  # releases the lock: a sweep may now close it if we failed

    def _abandon_segment(self) -> None:
        if self._segment is not None:
            self._segment.file.close()
            self._segment = None

    def sweep_orphans(self) -> int:
        """Close segments whose writer died (their lock is free); returns how many."""
        self._last_sweep = time.monotonic()
        closed = 0
        own = self._segment.name if self._segment is not None else None
        for path in sorted((self.folder / OPEN_DIR).glob(f"*{SUFFIX}")):
            if path.name == own:
                continue
            try:
                closed += _close_orphan(path, self.folder / path.name)
            except OSError as e:
                logger.warning("event log: orphan %s not closed yet: %s", path.name, e)
        if closed:
            logger.info("event log: closed %d segments of stopped processes", closed)
            if self.shipper is not None:
                self.shipper.wake()
        return closed


def _close_orphan(path: Path, final: Path) -> int:
    try:
        file = open(path, "r+b")  # noqa: SIM115 - closed below on every path
    except FileNotFoundError:
        return 0  # another sweeper closed it
    try:
        try:
            fcntl.flock(file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return 0  # its writer is alive
        try:
            if os.stat(path).st_ino != os.fstat(file.fileno()).st_ino:
                return 0  # renamed by another sweeper between our open and our lock
        except FileNotFoundError:
            return 0
        data = file.read()
        keep = data.rfind(b"\n") + 1  # a line cut by the kill was never acknowledged
        if keep == 0:
            os.unlink(path)
            return 0
        if keep < len(data):
            file.truncate(keep)
        os.fsync(file.fileno())
        os.rename(path, final)
        _fsync_dir(final.parent)
        return 1
    finally:
        file.close()


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
