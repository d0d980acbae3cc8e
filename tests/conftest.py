"""Shared fixtures. One SparkSession (local[2]) for the whole run: a JVM start costs ~10 s."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from tests import qdrant_server

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Every test JVM (the shared session below and each Spark job a test runs as its own process,
# ./uvicorn.sh's in the demo test included) runs C1 only, with the serial GC: its work is
# many small Hudi commits, for which C2 compilation and G1's threads cost more CPU than they
# save (tests/sync/test_sync.py on the shared 2-core box: JVM CPU 76-82 s -> 48 s, wall
# 64-70 s -> 58 s). Same semantics, only the JIT differs; the jobs themselves keep the
# JVM's defaults. spark-submit puts SPARK_SUBMIT_OPTS on the driver's command line.
os.environ.setdefault("SPARK_SUBMIT_OPTS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from app.embedding import Embedder


# Test files that take longest (seconds summed over their tests, setup included, from a
# `./test.sh --durations=0` run on 2026-11-26), run first. With two workers and whole files
# per worker (--dist loadfile), a long file picked up last leaves the other worker idle for
# its length: xdist's default order (most tests first) put the demo's single 60 s test at
# the end. Longest-first keeps both workers busy to the end. Only the order changes; a file
# missing here (renamed, new) runs after these, in collection order.
LONGEST_FIRST = (
    "tests/e2e/test_spark_cluster.py",  # minutes: a standalone cluster, five spark-submits
    "tests/sync/test_sync_two_syncers.py",  # 60 s (server tier: two syncer processes)
    "tests/sync/test_sync_aged.py",  # 88 s
    "tests/sync/test_sync_removals.py",  # 86 s
    "tests/spark_jobs/test_ingest.py",  # 79 s
    "tests/e2e/test_demo_e2e.py",  # 74 s
    "tests/sync/test_sync.py",  # 64 s
    "tests/sync/test_sync_recovery.py",  # 53 s
    "tests/spark_jobs/test_spark_jobs.py",  # 49 s
    "tests/api/test_api.py",  # 48 s
    "tests/sync/test_sync_timeline.py",  # 41 s
    "tests/sync/test_sync_delete_paths.py",  # 32 s
    "tests/embedding/test_embedding.py",  # 29 s
    "tests/sync/test_sync_service.py",  # 28 s
    "tests/spark_jobs/test_embed.py",  # 28-45 s: Spark's Python workers load the model
    "tests/api/test_api_engines.py",  # 35 s (three services, one per engine)
    "tests/api/test_api_input.py",  # 22 s
    "tests/web/test_web_e2e.py",  # 19 s
    "tests/api/test_recommend_stream.py",  # 15 s
    "tests/spark_jobs/test_rules_jar.py",  # 15 s: Maven (rules/), measured 2026-11-27
    "tests/e2e/test_s3.py",  # 13 s
    "tests/spark_jobs/test_product_validation.py",  # 13 s
    "tests/llm/test_llm.py",  # 11 s
    "tests/sync/test_sync_lock.py",  # 10 s
    "tests/sync/test_sync_kill.py",  # 9 s
    "tests/api/test_api_pressure.py",  # 9 s
    "tests/sync/test_sync_fixture_tables.py",  # 9 s
    "tests/sync/test_sync_hybrid.py",  # 8 s
)


SERVER_TIER_NOT_RUN = (
    "server tier NOT RUN: the tests marked `server` need a Qdrant server; set "
    "QDRANT_SERVER_BIN (a binary) or QDRANT_TEST_URL (.ci/run does)"
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not qdrant_server.configured():
        # Left out of the run, not skipped inside it: the summary says so (below).
        server = [item for item in items if item.get_closest_marker("server")]
        if server:
            config.hook.pytest_deselected(items=server)
            items[:] = [item for item in items if not item.get_closest_marker("server")]
    rank = {path: i for i, path in enumerate(LONGEST_FIRST)}
    # A stable sort: tests keep their order within a file.
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    # Decided from the environment, not from collection: with xdist the workers collect.
    if not qdrant_server.configured():
        terminalreporter.write_line(SERVER_TIER_NOT_RUN, yellow=True, bold=True)


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    from app.core.config import Settings
    from spark_jobs.session import get_spark

    session = get_spark(Settings(spark_master="local[2]"), app_name="tests")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    """The model as a service with default settings loads it: the same cached object the
    tests' own services get (`embedder_for` is cached per settings), and the exports in
    data/models that ./scripts/bootstrap.sh made."""
    from app.core.config import Settings
    from app.embedding import embedder_for

    return embedder_for(Settings())


# The local OpenAI-compatible server (`openai_stub`, `openai_stub_server`) and the session's
# Qdrant server (`qdrant_server`) for every module.
from tests.openai_stub import openai_stub_fixture, openai_stub_server_fixture  # noqa: E402, F401
from tests.qdrant_server import qdrant_server_fixture  # noqa: E402, F401
