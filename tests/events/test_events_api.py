"""Answers carry a recommendation_id, impressions are recorded, POST /events keeps all of
a request or none of it; over real HTTP, JVM-free (a demo shard served with SYNC_MODE=off).

What a segment holds is read back from EVENTS_DIR once the service closed it: the test
reads what `spark_jobs.ingest_events` would read.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.core.config import Settings
from app.embedding import Embedder
from tests.demo_index import build_demo_shard
from tests.live_server import ServerThread

SECRET = "events-test-secret-0123456789"


def closed_events(folder: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line)
        for segment in sorted(folder.glob("*.jsonl"))
        for line in segment.read_text().splitlines()
    ]


def wait_closed(folder: Path, pred: Any, seconds: float = 30) -> list[dict[str, Any]]:
    """The closed segments' events once `pred(events)` holds (segments close every 0.5 s)."""
    deadline = time.monotonic() + seconds
    while True:
        events = closed_events(folder)
        if pred(events):
            return events
        assert time.monotonic() < deadline, f"not in closed segments: {events[-5:]}"
        time.sleep(0.1)


@pytest.fixture(scope="module")
def service(
    embedder: Embedder, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[httpx.Client, Path]]:
    workdir = tmp_path_factory.mktemp("events-api")
    settings = Settings(
        data_dir=str(workdir),
        model_cache_dir=Settings().model_cache_dir,
        sync_mode="off",
        conversation_secret=SECRET,
        events_segment_seconds=0.5,
        events_flush_seconds=0.1,
    )
    build_demo_shard(workdir / "build", embedder, settings, every=10)
    shutil.copytree(workdir / "build", workdir / "qdrant")
    with ServerThread(settings) as server, httpx.Client(base_url=server.url, timeout=30) as c:
        yield c, Path(settings.events_dir)


def test_every_answer_has_its_own_id_and_impression(
    service: tuple[httpx.Client, Path],
) -> None:
    client, events = service
    ids = []
    for path in ("/recommend", "/search", "/recommend"):
        r = client.post(path, json={"query": "running shoes under $100", "top_k": 3})
        assert r.status_code == 200, r.text
        ids.append(r.json()["recommendation_id"])
    with client.stream(
        "POST",
        "/recommend",
        json={"query": "headphones for swimming", "top_k": 3},
        headers={"Accept": "text/event-stream"},
    ) as r:
        body = r.read().decode()
    done = json.loads(body.split("event: done\ndata: ", 1)[1].split("\n", 1)[0])
    ids.append(done["recommendation_id"])
    assert len(set(ids)) == 4
    stored = wait_closed(events, lambda evs: {e["event_id"] for e in evs} >= set(ids))
    shown = {e["event_id"]: e for e in stored if e["type"] == "impression"}
    last = shown[ids[3]]
    assert last["query"] == "headphones for swimming"
    products = json.loads(last["products"])
    assert [p["id"] for p in products] == [p["id"] for p in done["products"]]
    assert [p["position"] for p in products] == list(range(1, len(products) + 1))
    assert last["shown"] == len(done["products"])
    assert json.loads(shown[ids[0]]["filters"]) == [
        {"field": "max_price", "value": 100.0, "source": "query"}
    ]


def test_events_are_acknowledged_once_on_disk(service: tuple[httpx.Client, Path]) -> None:
    client, events = service
    rid = client.post("/search", json={"query": "yoga mat"}).json()["recommendation_id"]
    r = client.post(
        "/events",
        json={
            "events": [
                {"type": "click", "product_id": 7, "recommendation_id": rid, "event_id": "k-1"},
                {"type": "purchase", "product_id": 7, "session": "shopper-42"},
            ]
        },
    )
    assert r.status_code == 202, r.text
    click_id, purchase_id = r.json()["event_ids"]
    assert click_id == "c:k-1" and purchase_id.startswith("e:")
    # 202 means fsynced: the open segment already holds both lines.
    open_lines = [
        json.loads(line)
        for segment in (events / "_open").glob("*.jsonl")
        for line in segment.read_text().splitlines()
    ]
    stored = wait_closed(
        events, lambda evs: {click_id, purchase_id} <= {e["event_id"] for e in evs}
    )
    assert {click_id, purchase_id} <= {e["event_id"] for e in open_lines + stored}
    purchase = next(e for e in stored if e["event_id"] == purchase_id)
    assert purchase["session"] and "shopper-42" not in purchase["session"]


def test_a_request_with_one_bad_event_keeps_none(service: tuple[httpx.Client, Path]) -> None:
    client, events = service
    rid = client.post("/search", json={"query": "kettle"}).json()["recommendation_id"]
    forged = rid[:-2] + ("AA" if not rid.endswith("AA") else "BB")
    r = client.post(
        "/events",
        json={
            "events": [
                {
                    "type": "click",
                    "product_id": 1,
                    "recommendation_id": rid,
                    "event_id": "keep-not",
                },
                {"type": "click", "product_id": 2, "recommendation_id": forged},
            ]
        },
    )
    assert r.status_code == 422
    assert "events.1: recommendation_id" in r.json()["detail"]
    # A later acknowledged event is on disk after the rejected one would have been.
    ok = client.post("/events", json={"events": [{"type": "click", "product_id": 3}]})
    later = ok.json()["event_ids"][0]
    stored = wait_closed(events, lambda evs: later in {e["event_id"] for e in evs})
    assert "c:keep-not" not in {e["event_id"] for e in stored}


_CLICK = {"type": st.just("click"), "product_id": st.just(1)}
_bad_event = st.one_of(
    st.fixed_dictionaries({**_CLICK, "type": st.sampled_from(["view", "", "CLICK", 1])}),
    st.fixed_dictionaries(
        {
            **_CLICK,
            "product_id": st.one_of(
                # Finite: a JSON encoder refuses inf and nan (the raw body test sends them).
                st.text(max_size=5),
                st.floats(allow_nan=False, allow_infinity=False),
                st.just(-1),
                st.just(2**63),
                st.none(),
            ),
        }
    ),
    st.fixed_dictionaries(
        {
            **_CLICK,
            "event_id": st.one_of(
                st.just(""),
                st.text(alphabet=" /é\n", min_size=1, max_size=5),
                st.just("x" * 129),
                st.integers(),
            ),
        }
    ),
    st.fixed_dictionaries(
        {
            **_CLICK,
            "recommendation_id": st.one_of(
                st.just(""),
                st.text(min_size=1, max_size=70),
                st.just("r1.AAAAAAAAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAA"),
            ),
        }
    ),
    st.fixed_dictionaries({**_CLICK, "extra": st.just(1)}),
    st.fixed_dictionaries(
        {**_CLICK, "session": st.one_of(st.just(""), st.just("s" * 257), st.integers())}
    ),
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    good_before=st.integers(0, 2),
    bad=_bad_event,
    good_after=st.integers(0, 2),
)
def test_bad_events_are_4xx_and_nothing_is_kept(
    service: tuple[httpx.Client, Path], good_before: int, bad: dict[str, Any], good_after: int
) -> None:
    client, events = service
    tag = f"prop-{time.monotonic_ns()}"
    good = [
        {"type": "click", "product_id": 5, "event_id": f"{tag}-{i}"}
        for i in range(good_before + good_after)
    ]
    batch = [*good[:good_before], bad, *good[good_before:]]
    r = client.post("/events", json={"events": batch})
    assert 400 <= r.status_code < 500, (r.status_code, r.text, bad)
    assert f"events.{good_before}" in r.json()["detail"]
    stored = {e["event_id"] for e in closed_events(events)}
    open_ids = {
        json.loads(line)["event_id"]
        for segment in (events / "_open").glob("*.jsonl")
        for line in segment.read_text().splitlines()
    }
    assert not any(e.startswith(f"c:{tag}") for e in stored | open_ids)


@pytest.mark.parametrize(
    "body",
    [{}, {"events": []}, {"events": [{"type": "click", "product_id": 1}] * 501}, {"events": "x"}],
)
def test_malformed_requests_are_4xx(service: tuple[httpx.Client, Path], body: Any) -> None:
    client, _ = service
    r = client.post("/events", json=body)
    assert r.status_code in (413, 422), r.text


@pytest.mark.parametrize("number", ["Infinity", "-Infinity", "NaN", "1e999"])
def test_a_non_finite_product_id_is_a_4xx(service: tuple[httpx.Client, Path], number: str) -> None:
    # Python's JSON reader takes these literals; no JSON encoder writes them (raw body).
    client, _ = service
    body = '{"events": [{"type": "click", "product_id": ' + number + "}]}"
    r = client.post("/events", content=body, headers={"content-type": "application/json"})
    assert 400 <= r.status_code < 500, r.text


def test_answers_go_out_when_events_cannot_be_stored(embedder: Embedder, tmp_path: Path) -> None:
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where EVENTS_DIR should be")
    settings = Settings(
        data_dir=str(tmp_path),
        model_cache_dir=Settings().model_cache_dir,
        sync_mode="off",
        conversation_secret=SECRET,
        events_dir=str(blocked),
    )
    build_demo_shard(tmp_path / "qdrant", embedder, settings, every=20)
    with ServerThread(settings) as server, httpx.Client(base_url=server.url, timeout=30) as c:
        answer = c.post("/recommend", json={"query": "kettle"})
        assert answer.status_code == 200 and answer.json()["recommendation_id"]
        r = c.post("/events", json={"events": [{"type": "click", "product_id": 1}]})
        assert r.status_code == 503 and "EVENTS_DIR" in r.json()["detail"]
