"""One error root, one retry rule: transient failures back off by doubling, terminal ones
wait the longest delay at once (both sync loops use app.sync.backoff)."""

from __future__ import annotations

from app.core.errors import RecommenderError, TerminalError, is_transient
from app.store import StoreDimensionError, StoreError, StoreLockedError
from app.sync.backoff import Backoff, describe
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
