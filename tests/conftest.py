"""Shared fixtures. One SparkSession (local[2]) for the whole run: a JVM start costs ~10 s."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from app.embedding import Embedder


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


# The local OpenAI-compatible server (`openai_stub`, `openai_stub_server`) for every module.
from tests.openai_stub import openai_stub_fixture, openai_stub_server_fixture  # noqa: E402, F401
