"""One error root, one retry rule: transient failures back off by doubling, terminal ones
wait the longest delay at once (both sync loops use app.sync.backoff)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import pytest

from app.core.errors import RecommenderError, TerminalError, is_transient
from app.store import StoreDimensionError, StoreError, StoreLockedError
from app.sync.backoff import Backoff, RetryLoop, describe
from app.sync.engine import CycleCancelledError, CycleInProgressError
from app.sync.hudi_source import TableReadError
from app.sync.lock import SyncBusyError
from spark_jobs.errors import InputError


def test_every_domain_error_has_one_root_and_a_marker() -> None:
    transient = [
        StoreError("down", backend="b"),
        StoreLockedError("held", backend="b"),
        TableReadError("mid-write", table="t"),
        ValueError("an engine's own error"),
    ]
    terminal = [StoreDimensionError("384 vs 768", backend="b"), InputError("bad file")]
    assert all(isinstance(e, RecommenderError) for e in transient[:3] + terminal)
    assert all(is_transient(e) for e in transient)
    assert not any(is_transient(e) for e in terminal)
    assert all(isinstance(e, TerminalError) for e in terminal)
    assert issubclass(SyncBusyError, RecommenderError)


def test_transient_failures_double_terminal_ones_wait_the_longest() -> None:
    backoff = Backoff(interval=2, cap=60)
    blip = StoreError("restarting", backend="b")
    assert [backoff.failure(blip) for _ in range(5)] == [2, 4, 8, 16, 32]
    assert backoff.failure(blip) == 60
    assert backoff.success() == 2 and backoff.failures == 0
    wrong_model = StoreDimensionError("collection holds 768-d vectors", backend="b")
    assert backoff.failure(wrong_model) == 60
    assert describe(wrong_model).endswith("(terminal: needs a fix)")
    assert "terminal" not in describe(blip)


def test_the_retry_loop_backs_off_failures_not_a_busy_syncer_and_stops_on_shutdown(
    caplog: pytest.LogCaptureFixture,
) -> None:
    log = logging.getLogger("tests.retry")
    loop = RetryLoop(interval=2, logger=log, cap=60)

    def raising(error: Exception) -> Callable[[], None]:
        def cycle() -> None:
            raise error

        return cycle

    with caplog.at_level(logging.INFO, logger="tests.retry"):
        delays = [
            loop.step(raising(StoreError("restarting", backend="b"))),
            loop.step(raising(StoreError("restarting", backend="b"))),
            loop.step(raising(SyncBusyError(Path("/l"), "7"))),
            loop.step(raising(CycleInProgressError("a sync cycle is already running"))),
            loop.step(raising(StoreDimensionError("768-d", backend="b"))),
            loop.step(lambda: None),
            loop.step(raising(CycleCancelledError("stopped"))),
        ]
    assert delays == [2, 4, 2, 2, 60, 2, None]
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("ERROR", "sync cycle failed (StoreError: restarting (backend=b)); retry 1 in 2s"),
        ("ERROR", "sync cycle failed (StoreError: restarting (backend=b)); retry 2 in 4s"),
        ("WARNING", "another sync process (pid 7) holds /l; not syncing; retrying in 2s"),
        ("INFO", "a sync cycle is already running"),
        (
            "ERROR",
            "sync cycle failed (StoreDimensionError: 768-d (backend=b) (terminal: needs a fix)); "
            "retry 1 in 60s",
        ),
    ]
