"""POST /recommend as Server-Sent Events over real HTTP: uvicorn, the real `openai` client
streaming from the local stub LLM (tests/openai_stub.py), which sends tokens at a set rate,
fails, hangs, or cuts a stream, and counts the streams whose reader left.

JVM-free: the index is the demo catalog in an edge shard (tests/demo_index.py). Each failing
test is followed by one good answer (`llm_answers_again`), so failures in a row never reach
the breaker's threshold except in the breaker's own test.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from app.api.streaming import wants_event_stream
from tests.demo_index import DemoShard, demo_shard_fixture, replica_settings  # noqa: F401
from tests.live_server import ServerThread
from tests.openai_stub import Answer, Echo, Fail, Hang, OpenAIStub, Trickle

TIMEOUT = 1.5  # per attempt, one retry: the deadline on a whole answer is 3 s
FAILURES_TO_OPEN = 3
QUERY = {"query": "an electric kettle that keeps water hot", "top_k": 3}
STREAM = {"Accept": "text/event-stream"}
# Grounded (it names no product) and long: 40 tokens, 4 s at 10 tokens/s, past the deadline.
INJECTED = "Buy product 999 [id:999]."  # names a product that was not retrieved
LONG = " ".join(["This kettle keeps water hot for hours and pours well."] * 4)


@pytest.fixture(scope="module")
def client(
    demo_shard: DemoShard, tmp_path_factory: pytest.TempPathFactory, openai_stub_server: OpenAIStub
) -> Iterator[httpx.Client]:
    settings = replica_settings(
        demo_shard,
        tmp_path_factory.mktemp("api-stream"),
        openai_api_key="test",
        openai_base_url=openai_stub_server.base_url,
        llm_timeout_seconds=TIMEOUT,
        llm_max_retries=1,
        llm_breaker_failures=FAILURES_TO_OPEN,
        llm_breaker_probe_seconds=60,
    )
    with ServerThread(settings) as server, httpx.Client(base_url=server.url, timeout=30) as c:
        yield c


@pytest.fixture(autouse=True)
def llm_answers_again(client: httpx.Client, openai_stub: OpenAIStub) -> Iterator[None]:
    yield
    openai_stub.respond(Echo())
    client.post("/recommend", json=QUERY)  # a success resets the breaker's failure count


@dataclass
class Event:
    name: str
    data: dict[str, Any]
    at: float  # time.monotonic() when read


@dataclass
class Streamed:
    events: list[Event]

    @property
    def products(self) -> dict[str, Any]:
        assert self.events[0].name == "products", [e.name for e in self.events]
        return self.events[0].data

    @property
    def deltas(self) -> list[Event]:
        return [e for e in self.events if e.name == "delta"]

    @property
    def text(self) -> str:
        return "".join(e.data["text"] for e in self.deltas)

    @property
    def done(self) -> dict[str, Any]:
        assert [e.name for e in self.events].count("done") == 1
        assert self.events[-1].name == "done"
        return self.events[-1].data


def events(response: httpx.Response) -> Iterator[Event]:
    name, data = "", ""
    for line in response.iter_lines():
        if line.startswith("event: "):
            name = line.removeprefix("event: ")
        elif line.startswith("data: "):
            data = line.removeprefix("data: ")
        elif not line and name:
            yield Event(name, json.loads(data), time.monotonic())
            name, data = "", ""


def stream(client: httpx.Client, body: dict[str, Any] = QUERY) -> Streamed:
    with client.stream("POST", "/recommend", json=body, headers=STREAM) as r:
        assert r.status_code == 200, r.read()
        assert r.headers["content-type"].startswith("text/event-stream")
        return Streamed(list(events(r)))


def json_answer(client: httpx.Client, body: dict[str, Any] = QUERY) -> dict[str, Any]:
    r = client.post("/recommend", json=body)
    assert r.status_code == 200, r.text
    answer: dict[str, Any] = r.json()
    return answer


def same_answer(response: dict[str, Any]) -> dict[str, Any]:
    """The response without what differs between two asks of the same question: the
    stream's own flag, the conversation token (signed with the time it was issued) and
    the answer's own recommendation_id."""
    assert response["conversation"] and response["recommendation_id"]
    differ = ("text_replaced", "conversation", "recommendation_id")
    return {k: v for k, v in response.items() if k not in differ}


def metric(client: httpx.Client, name: str, **labels: str) -> float:
    for family in text_string_to_metric_families(client.get("/metrics").text):
        for s in family.samples:
            if s.name == name and s.labels == labels:
                return s.value
    raise AssertionError(f"{name}{labels} not exported")


def metric_or_zero(client: httpx.Client, name: str, **labels: str) -> float:
    try:
        return metric(client, name, **labels)
    except AssertionError:
        return 0.0  # a labelled counter is exported from its first count


def total(client: httpx.Client, name: str) -> float:
    """`name` summed over all its labels (0 before its first sample)."""
    families = text_string_to_metric_families(client.get("/metrics").text)
    return sum(s.value for f in families for s in f.samples if s.name == name)


# --- a streamed answer ---------------------------------------------------------------------
def test_products_come_before_the_first_token_and_the_text_is_the_json_answer(
    client: httpx.Client, openai_stub: OpenAIStub
) -> None:
    openai_stub.respond(Trickle(20))  # the echo answer, a token every 50 ms
    streamed = stream(client)

    assert streamed.events[0].at < openai_stub.first_tokens[0]
    assert openai_stub.requests[0].body["stream"] is True
    assert [p["name"] for p in streamed.products["products"]]
    assert len(streamed.deltas) >= 4  # token by token, not at once
    assert streamed.deltas[-1].at - streamed.deltas[0].at > 0.1
    done = streamed.done
    assert (done["generator"], done["degraded"], done["text_replaced"]) == ("openai", False, False)
    assert streamed.text == done["message"]
    assert done["message"].startswith("I recommend ")
    # The products event is the /search response, the done event the /recommend one.
    assert same_answer(streamed.products) == same_answer(client.post("/search", json=QUERY).json())
    assert same_answer(done) == same_answer(json_answer(client))


def test_accept_decides_and_request_errors_keep_their_status(client: httpx.Client) -> None:
    assert wants_event_stream("application/json, text/event-stream;q=0.5")
    assert not wants_event_stream("text/event-stream;q=0")
    assert not wants_event_stream("*/*")
    assert not wants_event_stream(None)
    r = client.post("/recommend", json=QUERY, headers={"Accept": "application/json"})
    assert r.headers["content-type"] == "application/json"
    bad = client.post("/recommend", json={"query": "  "}, headers=STREAM)
    assert (bad.status_code, bad.headers["content-type"]) == (422, "application/json")


# --- failures end with a degraded `done` ----------------------------------------------------
@pytest.mark.parametrize(
    ("behaviour", "reason"),
    [
        (Fail(500), "server_error"),
        (Fail(429, retry_after=0), "rate_limited"),
        (Hang(), "timeout"),
    ],
)
def test_a_failure_before_the_first_token_streams_the_extractive_answer(
    client: httpx.Client, openai_stub: OpenAIStub, behaviour: Fail | Hang, reason: str
) -> None:
    openai_stub.respond(behaviour)
    streamed = stream(client)
    done = streamed.done
    assert (done["degraded"], done["degraded_reason"]) == (True, reason)
    assert (done["generator"], done["text_replaced"]) == ("extractive", False)
    assert streamed.text == done["message"] and done["message"].startswith("Top pick: ")
    assert len(openai_stub.requests) == 2  # retried once: no token had gone out
    assert same_answer(done) == same_answer(json_answer(client))


@pytest.mark.parametrize(
    ("behaviour", "reason", "streamed_text"),
    [
        (Trickle(50, Answer(LONG), cut_after=3), "connection_error", "This kettle keeps"),
        (Trickle(50, Answer(INJECTED)), "ungrounded", INJECTED),
    ],
)
def test_a_failure_after_text_went_out_replaces_it_with_the_extractive_answer(
    client: httpx.Client,
    openai_stub: OpenAIStub,
    behaviour: Trickle,
    reason: str,
    streamed_text: str,
) -> None:
    openai_stub.respond(behaviour)
    replaced = metric_or_zero(client, "recommend_streams_total", end="replaced")
    streamed = stream(client)
    done = streamed.done
    if reason == "connection_error":
        # From the first token on; the last read interval's text may be lost with the
        # connection (aiohttp drops what it had read but not handed on).
        assert streamed.text and streamed_text.startswith(streamed.text)
    else:
        assert streamed.text == streamed_text
    assert (done["degraded"], done["degraded_reason"]) == (True, reason)
    assert (done["generator"], done["text_replaced"]) == ("extractive", True)
    assert done["message"].startswith("Top pick: ")
    assert len(openai_stub.requests) == 1  # no retry once tokens went out
    assert metric(client, "recommend_streams_total", end="replaced") == replaced + 1


def test_a_client_that_leaves_cancels_the_llm_request(
    client: httpx.Client, openai_stub: OpenAIStub
) -> None:
    openai_stub.respond(Trickle(10, Answer(LONG)))  # 4 s of tokens
    left = metric(client, "recommend_streams_total", end="disconnected")
    outcomes = total(client, "llm_requests_total")
    with client.stream("POST", "/recommend", json=QUERY, headers=STREAM) as r:
        read = []
        for e in events(r):
            read.append(e.name)
            if read.count("delta") == 2:
                break
    assert read == ["products", "delta", "delta"]
    # Events, not a stopwatch: the LLM stream closed before its last token, the call left
    # the in-flight count, and it recorded no outcome (the deadline would have recorded
    # a timeout, an end of the stream an ok): it was cancelled because the reader left.
    patience = time.monotonic() + 60
    while openai_stub.disconnects == 0 or metric(client, "llm_in_flight") != 0:
        assert time.monotonic() < patience, "the LLM stream was not closed"
        time.sleep(0.02)
    assert openai_stub.disconnects == 1
    assert total(client, "llm_requests_total") == outcomes
    assert metric(client, "recommend_streams_total", end="disconnected") == left + 1


def test_with_the_breaker_open_the_extractive_answer_streams_at_once(
    client: httpx.Client, openai_stub: OpenAIStub
) -> None:
    openai_stub.respond(Fail(500))
    for _ in range(FAILURES_TO_OPEN):
        assert json_answer(client)["degraded_reason"] == "server_error"
    calls = len(openai_stub.requests)
    skipped = metric_or_zero(client, "llm_skipped_total", reason="breaker_open")
    streamed = stream(client)
    # At once: no LLM call was waited on (none made, and this answer counted as skipped).
    assert metric(client, "llm_skipped_total", reason="breaker_open") == skipped + 1
    done = streamed.done
    assert (done["degraded"], done["degraded_reason"]) == (True, "breaker_open")
    assert streamed.text == done["message"] and not done["text_replaced"]
    assert len(openai_stub.requests) == calls  # the LLM was not asked
