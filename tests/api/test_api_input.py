"""No input yields a 500: hostile JSON at every route of the real app, served by uvicorn.

JVM-free: the index is the demo catalog written into an edge shard by the sync's own
applier (tests/demo_index.py), the service runs with SYNC_MODE=off and the real openai
client talks to the local stub. Bodies are generated as JSON *text*, so they can carry
what a Python str cannot always be encoded as: lone surrogate escapes (`"\\ud83d"`),
NaN/Infinity, numbers of thousands of digits, nesting thousands deep.
"""

from __future__ import annotations

import json
import logging
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from fastapi import Request
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from app.main import create_app
from app.store import SearchFilter
from tests.demo_index import DemoShard, demo_shard_fixture, replica_settings  # noqa: F401
from tests.live_server import ServerThread
from tests.openai_stub import OpenAIStub

API_KEY = "admin-secret"
MAX_BODY_BYTES = 16_384
PANIC_ROUTE = "/test/native-panic"


@dataclass
class Service:
    client: httpx.Client
    # (method, path template) of every API route in the OpenAPI document.
    routes: list[tuple[str, str]]


@pytest.fixture(scope="module")
def service(
    demo_shard: DemoShard, workdir: Path, openai_stub_server: OpenAIStub
) -> Iterator[Service]:
    app_settings = replica_settings(
        demo_shard,
        workdir,
        openai_api_key="test",
        openai_base_url=openai_stub_server.base_url,
        llm_timeout_seconds=1.0,
        llm_max_retries=0,
        api_key=API_KEY,
        max_body_bytes=MAX_BODY_BYTES,
        max_query_chars=200,
    )
    app = create_app(app_settings)

    # A real native failure no handler knows: the edge engine panics (pyo3 PanicException,
    # a BaseException) on a NaN range bound, which the request schema now refuses.
    @app.get(PANIC_ROUTE, include_in_schema=False)
    def native_panic(request: Request) -> None:
        store = request.app.state.services.store
        store.search_products(
            [1.0] + [0.0] * 383,
            limit=3,
            chunks_per_product=1,
            score_threshold=0.0,
            flt=SearchFilter(None, None, float("nan")),
        )

    with (
        ServerThread(app_settings, app) as server,
        httpx.Client(base_url=server.url, timeout=30, headers={"X-API-Key": API_KEY}) as c,
    ):
        paths = c.get("/openapi.json").json()["paths"]
        routes = [(m.upper(), p) for p, ops in paths.items() for m in ops]
        yield Service(c, routes)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("api-input")


def post(service: Service, path: str, content: bytes) -> httpx.Response:
    return service.client.post(path, content=content, headers={"content-type": "application/json"})


# --- the cases the drill found, exactly -----------------------------------------------------
@pytest.mark.parametrize("path", ["/recommend", "/search"])
@pytest.mark.parametrize(
    ("body", "detail"),
    [
        (
            rb'{"query": "kettle \ud83d"}',
            "query: Value error, contains a lone UTF-16 surrogate (U+D83D) at position 7",
        ),
        (rb'{"query": "\udc00"}', "contains a lone UTF-16 surrogate (U+DC00) at position 0"),
        (rb'{"query": "tent\u0000"}', "contains a control character (U+0000) at position 4"),
        (rb'{"query": "a\u001bb"}', "contains a control character (U+001B) at position 1"),
        (
            rb'{"query": "tent", "filters": {"category": "x\udfff"}}',
            "filters.category: Value error, contains a lone UTF-16 surrogate (U+DFFF)",
        ),
        (rb'{"query": "tent", "filters": {"max_price": NaN}}', "filters.max_price"),
        (rb'{"query": "tent", "filters": {"min_price": Infinity}}', "finite number"),
        (rb'{"query": "tent", "filters": {"max_price": 1e400}}', "finite number"),
    ],
    ids=["surrogate", "low-surrogate", "nul", "escape", "category", "nan", "inf", "1e400"],
)
def test_text_and_numbers_no_engine_can_take_are_a_422(
    service: Service, path: str, body: bytes, detail: str
) -> None:
    r = post(service, path, body)
    assert r.status_code == 422, r.text
    assert r.json()["success"] is False and detail in r.json()["detail"]


def test_a_pair_of_surrogates_is_one_character_and_fine(service: Service) -> None:
    r = post(service, "/search", rb'{"query": "kettle \ud83d\ude00", "top_k": 2}')
    assert r.status_code == 200, r.text
    assert r.json()["query"] == "kettle \U0001f600"
    assert "Kettle" in r.json()["products"][0]["name"]


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b'{"query": "tent", "top_k": ' + b"9" * 5000 + b"}", 400),
        (b'{"query": ' + b"[" * 5000 + b"]" * 5000 + b"}", 400),
        (b'{"query": "tent", "top_k": ' + b"9" * 40 + b"}", 422),
        (b'{"query": "tent"}\xff', 400),
    ],
    ids=["5000-digit-int", "nested-5000-deep", "40-digit-int", "invalid-utf8"],
)
def test_huge_numbers_deep_nesting_and_bad_bytes_are_a_4xx(
    service: Service, body: bytes, code: int
) -> None:
    r = post(service, "/recommend", body)
    assert r.status_code == code, r.text
    assert r.json()["success"] is False


# --- the last resort ------------------------------------------------------------------------
def test_an_unhandled_native_panic_is_a_json_500_with_a_request_id_logged_in_one_line(
    service: Service, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="app.api.errors")
    responses = [service.client.get(PANIC_ROUTE) for _ in range(3)]
    ids = set()
    for r in responses:
        assert r.status_code == 500
        assert r.headers["content-type"] == "application/json"
        body = r.json()
        assert body["success"] is False and body["request_id"] == r.headers["x-request-id"]
        assert body["detail"] == f"internal error (request_id {body['request_id']})"
        ids.add(body["request_id"])
    assert len(ids) == 3
    records = [r for r in caplog.records if r.name == "app.api.errors"]
    assert len(records) == 3  # one line per hit ...
    assert all(f"request_id={i}" in "".join(r.getMessage() for r in records) for i in ids)
    assert all("PanicException" in r.getMessage() for r in records)
    # ... with the traceback only the first time this error is seen on this route.
    assert [r.exc_info is not None for r in records] == [True, False, False]
    # The process and the engine still serve.
    ok = service.client.post("/search", json={"query": "coffee maker", "top_k": 2})
    assert ok.status_code == 200 and len(ok.json()["products"]) == 2


# --- /metrics labels every response with its route --------------------------------------------
def counter(text: str, **labels: str) -> float:
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == "http_requests_total" and s.labels == labels:
                return s.value
    return 0.0


def test_a_413_and_a_500_are_counted_under_their_route(service: Service) -> None:
    before = service.client.get("/metrics").text
    too_big = json.dumps({"query": "tent", "pad": "x" * MAX_BODY_BYTES}).encode()
    assert post(service, "/recommend", too_big).status_code == 413
    assert service.client.get(PANIC_ROUTE).status_code == 500
    assert service.client.get("/no/such/route").status_code == 404
    after = service.client.get("/metrics").text
    for labels in (
        {"method": "POST", "route": "/recommend", "status": "413"},
        {"method": "GET", "route": PANIC_ROUTE, "status": "500"},
        {"method": "GET", "route": "unmatched", "status": "404"},
    ):
        assert counter(after, **labels) == counter(before, **labels) + 1, labels


# --- property: arbitrary JSON at every route, never a 5xx -------------------------------------
ESCAPES = [r"\"", r"\\", r"\n", r"\u0000", r"\u001f", r"\ud83d", r"\udc00", r"\ud83d\ude00"]
json_strings = st.lists(
    st.one_of(
        st.characters(exclude_characters='"\\', exclude_categories=["Cc", "Cs"]),
        st.sampled_from(ESCAPES),
        st.integers(0, 0xFFFF).map(lambda c: f"\\u{c:04x}"),
    ),
    max_size=40,
).map(lambda parts: '"' + "".join(parts) + '"')
numbers = st.one_of(
    st.integers().map(str),
    st.floats().map(json.dumps),  # NaN, Infinity and -Infinity included
    st.integers(20, 6000).map(lambda n: "9" * n),
    st.sampled_from(["1e400", "-1e400", "1e-400", "-0", "0.0", "5", "2.5", "-1"]),
)
scalars = st.one_of(json_strings, numbers, st.sampled_from(["true", "false", "null"]))
keys = st.one_of(
    st.sampled_from(['"query"', '"top_k"', '"filters"', '"category"', '"min_price"']),
    st.sampled_from(['"max_price"', '"full"']),
    json_strings,
)


def _object(pairs: list[tuple[str, str]]) -> str:
    return "{" + ",".join(f"{k}:{v}" for k, v in pairs) + "}"


values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4).map(lambda xs: "[" + ",".join(xs) + "]"),
        st.lists(st.tuples(keys, inner), max_size=5).map(_object),
    ),
    max_leaves=20,
)
# Mostly request-shaped, so generation gets past the first field's check.
request_like = st.fixed_dictionaries(
    {'"query"': st.one_of(json_strings, values)},
    optional={
        '"top_k"': st.one_of(numbers, values),
        '"filters"': st.one_of(
            st.fixed_dictionaries(
                {},
                optional={
                    '"category"': st.one_of(json_strings, values),
                    '"min_price"': numbers,
                    '"max_price"': numbers,
                },
            ).map(lambda d: _object(list(d.items()))),
            values,
        ),
    },
).map(lambda d: _object(list(d.items())))
bodies = st.one_of(
    request_like,
    values,
    st.integers(1, 20_000).map(lambda n: '{"query": ' + "[" * n + "]" * n + "}"),
).map(str.encode) | st.binary(max_size=64)
path_params = st.one_of(
    st.integers().map(str), st.integers(20, 400).map(lambda n: "9" * n), st.text(max_size=20)
)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(body=bodies, param=path_params, query=st.dictionaries(st.text(max_size=8), st.text()))
def test_arbitrary_json_at_every_route_is_never_a_5xx(
    service: Service, body: bytes, param: str, query: dict[str, str]
) -> None:
    for method, template in service.routes:
        path = template
        while "{" in path:
            start, end = path.index("{"), path.index("}")
            path = path[:start] + urllib.parse.quote(param, safe="") + path[end + 1 :]
        if method == "GET":
            r = service.client.get(path, params=query)
        else:
            r = service.client.request(
                method,
                path,
                params=query,
                content=body,
                headers={"content-type": "application/json"},
            )
        if template == "/ready" and r.status_code == 503:
            # The probe's contract, whatever the input: this replica's shard was written
            # without a syncer, so it has no checkpoint.
            assert r.json()["detail"].startswith("not ready: no sync checkpoint")
            continue
        if template == "/sync/status" and r.status_code == 503:
            # SYNC_MODE=off reads the table for the lag; this shard has no table, so the
            # status is a 503 naming the table, whatever the input (a dependency down,
            # not an input the service failed on).
            assert "cannot open table" in r.json()["detail"]
            continue
        assert r.status_code < 500, (method, template, body[:200], r.status_code, r.text[:300])
        if r.status_code >= 400:
            assert r.json()["success"] is False
