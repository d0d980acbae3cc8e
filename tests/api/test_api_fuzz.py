"""Schemathesis, a property-based API fuzzer nobody here wrote, against the live app.

The real app (uvicorn, real HTTP) serves the committed Hudi fixture table
(tests/fixtures/tables, no JVM) synced in process into the embedded engine, with an
API key and the real openai client talking to the local stub. Schemathesis reads the
app's own /openapi.json and generates requests for every operation, valid and invalid
(its positive and negative modes, and the schema's examples): no response may be a 5xx.
/recommend is also called with `Accept: text/event-stream` for every case, its stream
read to the end. Seeded and bounded: SEED and MAX_EXAMPLES make the run repeatable and
keep it inside the suite (docs/development.md). Schemathesis' own pytest integration
(`from_fixture`) fails on pytest 9.2 (it sets `Function._nodeid`), so the cases are
drawn here with hypothesis from its strategies.
"""

from __future__ import annotations

import contextlib
import shutil
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis.errors import Unsatisfiable
from hypothesis.strategies import SearchStrategy
from schemathesis import Case
from schemathesis.config import SchemathesisConfig
from schemathesis.core.result import Ok
from schemathesis.generation import GenerationMode

from app.core.config import Settings
from app.embedding import Embedder
from tests.fixtures.tables.make_tables import HERE
from tests.live_server import ServerThread, wait_ready
from tests.openai_stub import OpenAIStub

SEED = 34
# Cases per operation and per generation mode (positive, negative), plus the schema's
# examples: 8 operations x 2 x 25 = 400 generated requests, /recommend's twice.
MAX_EXAMPLES = 25
API_KEY = "fuzz-admin-secret"
EVENT_STREAM = "text/event-stream"

# Responses seen, by (method, path template, status): the summary test reads it.
SEEN: Counter[tuple[str, str, int]] = Counter()


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, openai_stub_server: OpenAIStub, embedder: Embedder
) -> Iterator[str]:
    root = tmp_path_factory.mktemp("api-fuzz")
    table = root / "products"
    shutil.copytree(HERE / "cow_aged", table)
    settings = Settings(
        data_dir=str(root),
        # The model exports ./scripts/bootstrap.sh made (read only): the service gets the
        # session's cached `embedder`.
        model_cache_dir=Settings().model_cache_dir,
        hudi_table_path=str(table),
        qdrant_path=str(root / "qdrant"),
        sync_mode="embedded",
        sync_interval_seconds=3600,
        api_key=API_KEY,
        openai_api_key="test",
        openai_base_url=openai_stub_server.base_url,
        llm_timeout_seconds=1.0,
        llm_max_retries=0,
    )
    with ServerThread(settings) as server:
        wait_ready(server.url, 300)
        yield server.url


def test_no_request_is_a_server_error(served: str) -> None:
    config = SchemathesisConfig.from_dict({"seed": SEED, "headers": {"X-API-Key": API_KEY}})
    schema = schemathesis.openapi.from_url(f"{served}/openapi.json", config=config)
    failures: list[str] = []
    results = list(schema.get_all_operations())
    assert all(isinstance(r, Ok) for r in results), results  # the schema itself is valid
    operations = [r.ok() for r in results if isinstance(r, Ok)]
    for operation in operations:
        strategies = [
            *(operation.as_strategy(mode) for mode in GenerationMode),
            *schema.get_strategies_from_examples(operation),
        ]
        for strategy in strategies:
            _fuzz(strategy, failures)
    # Every route was fuzzed, the stream with every /recommend case.
    routes = {(o.method.upper(), o.path) for o in operations}
    assert {(m, p) for m, p, _ in SEEN if not p.endswith("(stream)")} == routes
    assert sum(n for (_, p, _), n in SEEN.items() if p == "/recommend (stream)") == sum(
        n for (_, p, _), n in SEEN.items() if p == "/recommend"
    )
    # Not vacuous: valid requests reached retrieval, invalid ones were refused, as a
    # stream too.
    for label in ("/recommend", "/recommend (stream)", "/search"):
        assert {200, 422} <= {code for (_, p, code) in SEEN if p == label}, (label, SEEN)
    assert failures == [], "\n".join(failures[:10])


def _fuzz(strategy: SearchStrategy[Case[Any]], failures: list[str]) -> None:
    # No shrinking: every 5xx is collected and reported, not the first one minimised.
    @settings(
        max_examples=MAX_EXAMPLES,
        deadline=None,
        database=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @seed(SEED)
    @given(case=strategy)
    def fuzz(case: Case[Any]) -> None:
        _call(case, {"X-API-Key": API_KEY}, case.path, failures)
        if case.path == "/recommend":
            stream = {"X-API-Key": API_KEY, "Accept": EVENT_STREAM}
            _call(case, stream, "/recommend (stream)", failures)

    # No invalid request exists in negative mode for a route without parameters.
    with contextlib.suppress(Unsatisfiable):
        fuzz()


def _call(case: Case[Any], headers: dict[str, str], label: str, failures: list[str]) -> None:
    response = case.call(headers=headers)
    SEEN[(case.method.upper(), label, response.status_code)] += 1
    if response.status_code >= 500:
        failures.append(
            f"{response.status_code} {case.as_curl_command(headers)}: {response.text[:300]}"
        )
