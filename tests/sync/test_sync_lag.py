"""The lag's rule on a committed Spark-written table (no JVM): which commit is waiting, and
when it completed in the table's timeline time zone.

`cow_aged` (tests/fixtures/tables/make_tables.py) has archived commits, and its timeline is
in UTC (`hoodie.table.timeline.timezone=UTC`); the zone tests rewrite that property in a copy.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.core.catalog import TIMELINE_TIMEZONE_KEY
from app.core.config import Settings
from app.sync.hudi_source import TableSnapshot
from app.sync.state import SyncTotals
from tests.fixtures.tables.make_tables import HERE
from tests.synctools import utc_instant_epoch


@pytest.fixture
def cow(tmp_path: Path) -> Path:
    dest = tmp_path / "cow_aged"
    shutil.copytree(HERE / "cow_aged", dest)
    return dest


def _snapshot(path: Path) -> TableSnapshot:
    return TableSnapshot(Settings(hudi_table_path=str(path)))


def test_the_oldest_commit_after_the_checkpoint_is_the_one_waiting(cow: Path) -> None:
    table = _snapshot(cow)
    first, second, *_, latest = table.instants
    # The oldest completed write still on the active timeline (older ones were archived).
    listed = sorted(
        p.name.split(".")[0].split("_")[1]
        for p in (cow / ".hoodie" / "timeline").iterdir()
        if p.suffix == ".commit" and "_" in p.name
    )
    assert first.completed == listed[0] and latest.completed == listed[-1]
    assert (cow / ".hoodie" / "timeline" / "history").is_dir()

    assert table.oldest_unsynced(None) == first  # no checkpoint: nothing is searchable
    assert table.oldest_unsynced("20000101000000000") == first  # checkpoint archived past
    assert table.oldest_unsynced(first.completed) == second
    assert table.oldest_unsynced(latest.completed) is None  # covers the newest commit


@pytest.fixture
def india(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This process's local zone is UTC+05:30 (a POSIX TZ rule: no tz database needed)."""
    monkeypatch.setenv("TZ", "IST-05:30")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.mark.parametrize("zone", ["UTC", "LOCAL", None])
def test_commit_times_are_read_in_the_timeline_zone(
    cow: Path, india: None, zone: str | None
) -> None:
    props = cow / ".hoodie" / "hoodie.properties"
    lines = [x for x in props.read_text().splitlines() if not x.startswith(TIMELINE_TIMEZONE_KEY)]
    if zone is not None:
        lines.append(f"{TIMELINE_TIMEZONE_KEY}={zone}")
    props.write_text("\n".join(lines) + "\n")

    table = _snapshot(cow)
    first = table.instants[0]
    # Hudi's writers use the local zone unless told UTC (no key: LOCAL, whatever hudi-rs's
    # `HudiTable.timezone` says); local here is 5 h 30 min ahead of UTC.
    expected = utc_instant_epoch(first.completed) - (0 if zone == "UTC" else 5.5 * 3600)
    assert table.completed_at(first) == pytest.approx(expected, abs=1e-6)


def test_lag_is_counted_from_the_waiting_commit_when_asked() -> None:
    totals = SyncTotals()
    assert totals.lag_seconds(now=1000.0) == 0.0  # nothing waiting
    totals.unsynced_since = 940.0
    assert totals.lag_seconds(now=1000.0) == 60.0
    assert totals.lag_seconds(now=1030.0) == 90.0  # grows with the clock, not per cycle
    assert totals.lag_seconds(now=900.0) == 0.0  # a writer's clock ahead of this one
