"""Shared fixtures. One SparkSession (local[2]) for the whole run: a JVM start costs ~10 s."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from app.core.config import ROOT
from tests import qdrant_server
from tests.jvm_archive import conf_dir, jvm_options

# Tests write only under tmp dirs. Every path Settings derives from DATA_DIR (sync locks,
# the conversation key, an index nobody named) goes to a folder of this process, and the
# processes tests start inherit it; the model exports ./scripts/bootstrap.sh cached in
# the checkout's data/models are still read from there. pytest_sessionfinish checks it.
CHECKOUT_DATA = ROOT / "data"
_RUN_DATA = tempfile.mkdtemp(prefix="tests-data-")
atexit.register(shutil.rmtree, _RUN_DATA, ignore_errors=True)
os.environ["DATA_DIR"] = _RUN_DATA
os.environ.setdefault("MODEL_CACHE_DIR", str(CHECKOUT_DATA / "models"))


def _checkout_data_files() -> set[Path]:
    # data/models is the bootstrap's export cache: a test may fill in a missing export.
    models = CHECKOUT_DATA / "models"
    return {p for p in CHECKOUT_DATA.rglob("*") if p.is_file() and models not in p.parents}


_DATA_BEFORE = _checkout_data_files()

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Every test JVM (the shared session below and each Spark job a test runs as its own process,
# ./uvicorn.sh's in the demo test included) runs C1 only, with the serial GC: its work is
# many small Hudi commits, for which C2 compilation and G1's threads cost more CPU than they
# save (tests/sync/test_sync.py on the shared 2-core box: JVM CPU 76-82 s -> 48 s, wall
# 64-70 s -> 58 s). Same semantics, only the JIT differs; the jobs themselves keep the
# JVM's defaults. spark-submit puts SPARK_SUBMIT_OPTS on the driver's command line. Each
# also maps the class archive ./test.sh dumped (tests/jvm_archive.py), which needs the
# archive's empty SPARK_CONF_DIR.
os.environ.setdefault("SPARK_SUBMIT_OPTS", jvm_options())
if (_conf := conf_dir()) is not None:
    os.environ.setdefault("SPARK_CONF_DIR", str(_conf))

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from app.embedding import Embedder


# Longest test files first (each file's total of `./test.sh --durations=0`, 2026-11-28:
# every file over 14 s): with whole files per worker, a long file picked up last leaves the
# other workers idle. Unlisted files follow.
LONGEST_FIRST = (
    "tests/e2e/test_spark_cluster.py",
    "tests/sync/test_sync_removals.py",
    "tests/spark_jobs/test_ingest.py",
    "tests/sync/test_sync_aged.py",
    "tests/e2e/test_demo_e2e.py",
    "tests/api/test_model_switch_http.py",
    "tests/sync/test_sync.py",
    "tests/learn/test_learn_encoder.py",
    "tests/sync/test_sync_recovery.py",
    "tests/sync/test_sync_fence.py",
    "tests/sync/test_sync_two_syncers.py",
    "tests/sync/test_sync_delete_paths.py",
    "tests/spark_jobs/test_spark_jobs.py",
    "tests/events/test_events_lakehouse.py",
    "tests/spark_jobs/test_embed.py",
    "tests/sync/test_sync_timeline.py",
    "tests/sync/test_sync_cluster.py",
    "tests/embedding/test_embedding.py",
    "tests/sync/test_model_switch.py",
    "tests/sync/test_sync_service.py",
    "tests/web/test_web_e2e.py",
    "tests/sync/test_sync_kill.py",
    "tests/embedding/test_exported.py",
    "tests/api/test_api_fuzz.py",
    "tests/e2e/test_s3.py",
    "tests/store/test_store_contract.py",
    "tests/query/test_query_category.py",
    "tests/spark_jobs/test_rules_jar.py",
    "tests/api/test_api_processes.py",
    "tests/sync/test_sync_fixture_tables.py",
    "tests/spark_jobs/test_product_validation.py",
    "tests/events/test_events_s3.py",
    "tests/ranking/test_learned_ranker.py",
    "tests/api/test_api_input.py",
    "tests/sync/test_sync_lease.py",
    "tests/api/test_api.py",
    "tests/sync/test_sync_hybrid.py",
    "tests/query/test_budget_phrasings.py",
    "tests/store/test_server_search.py",
    "tests/api/test_recommend_stream.py",
    "tests/api/test_api_pressure.py",
    "tests/embedding/test_onnx_query.py",
    "tests/sync/test_sync_sparse_format.py",
    "tests/llm/test_llm.py",
)


SERVER_TIER_NOT_RUN = (
    "server tier NOT RUN: the tests marked `server` need a Qdrant server ({reason}); set "
    "QDRANT_SERVER_BIN (a binary) or QDRANT_TEST_URL (.ci/run does)"
)
# Set by .ci/run: the server tier must run there, so a missing or broken server is an error.
REQUIRE_SERVER_TIER = "REQUIRE_SERVER_TIER"


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get(REQUIRE_SERVER_TIER) == "1":
        reason = qdrant_server.problem()
        if reason is not None:
            raise pytest.UsageError(
                f"the server tier is required ({REQUIRE_SERVER_TIER}=1, set by .ci/run) and "
                f"cannot run: {reason}"
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


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if hasattr(session.config, "workerinput"):
        return  # an xdist worker: the controller checks once, after every worker
    gained = sorted(_checkout_data_files() - _DATA_BEFORE)
    if gained:
        session.config.stash[_GAINED] = gained
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


_GAINED = pytest.StashKey[list[Path]]()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    gained = terminalreporter.config.stash.get(_GAINED, [])
    if gained:
        terminalreporter.write_line(
            f"FAILED: tests wrote {len(gained)} file(s) into the checkout's data/ (tests "
            f"write only under tmp dirs): {', '.join(str(p) for p in gained[:10])}",
            red=True,
            bold=True,
        )
    # Decided from the environment, not from collection: with xdist the workers collect.
    reason = qdrant_server.problem()
    if reason is not None:
        terminalreporter.write_line(
            SERVER_TIER_NOT_RUN.format(reason=reason), yellow=True, bold=True
        )


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkSession]:
    from app.core.config import Settings
    from spark_jobs.session import get_spark

    session = get_spark(Settings(spark_master="local[2]"), app_name="tests")
    # The jobs' reliable checkpoints (spark_jobs/table.py `materialize`), not in data/.
    session.sparkContext.setCheckpointDir(str(tmp_path_factory.mktemp("spark-checkpoints")))
    yield session
    session.stop()


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    """The model loaded with sentence-transformers as `embedder_for` loads it with default
    settings (cached per settings), with the exports in data/models that
    ./scripts/bootstrap.sh made. The tests' own services serve those exports without torch
    (app/embedding/exported.py): the same vectors (tests/embedding/test_exported.py)."""
    from app.core.config import Settings
    from app.embedding import embedder_for

    return embedder_for(Settings())


# The local OpenAI-compatible server (`openai_stub`, `openai_stub_server`) and the session's
# Qdrant server (`qdrant_server`) for every module.
from tests.openai_stub import openai_stub_fixture, openai_stub_server_fixture  # noqa: E402, F401
from tests.qdrant_server import qdrant_server_fixture  # noqa: E402, F401
