"""The optional LLM parse through the real `openai` client against the local stub server.

A valid JSON parse is used; anything malformed, hostile or slow falls back to the offline
parse of the same query (and the request carried the catalog's categories and the query
as delimited data).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from prometheus_client import REGISTRY

from app.core.config import Settings
from app.query import OfflineQueryParser, ParsedQuery
from app.query.llm import LLMQueryParser
from app.query.understanding import build_query_understanding
from tests.openai_stub import Answer, Fail, OpenAIStub, Slow

CATEGORIES = frozenset({"audio", "kitchen", "outdoor", "toys"})
QUERY = "headphones for the gym under fifty bucks, nothing fancy"


def run_parse(stub: OpenAIStub, query: str = QUERY, timeout: float = 2.0) -> ParsedQuery:
    async def go() -> ParsedQuery:
        parser = LLMQueryParser(
            api_key="test", model="stub-model", base_url=stub.base_url, timeout_seconds=timeout
        )
        try:
            offline = OfflineQueryParser().parse(query, CATEGORIES)
            return await parser.parse(query, CATEGORIES, fallback=offline)
        finally:
            await parser.aclose()

    return asyncio.run(go())


def answer(**fields: Any) -> Answer:
    body = {
        "search_text": "headphones for the gym",
        "min_price": None,
        "max_price": 50,
        "category": "audio",
        "prefer_low_price": True,
    }
    body.update(fields)
    return Answer(json.dumps(body))


def as_dict(parsed: ParsedQuery) -> dict[str, object]:
    return {c.field: c.value for c in parsed.constraints}


OFFLINE = {"max_price": 50.0}


def parses(outcome: str) -> float:
    return REGISTRY.get_sample_value("query_parses_total", {"outcome": outcome}) or 0.0


def test_a_valid_parse_is_used(openai_stub: OpenAIStub) -> None:
    openai_stub.respond(answer())
    ok_before = parses("llm_ok")
    parsed = run_parse(openai_stub)
    assert parses("llm_ok") == ok_before + 1
    assert parsed.parser == "llm"
    assert parsed.search_text == "headphones for the gym"
    assert as_dict(parsed) == {"max_price": 50.0, "price_preference": "low", "category": "audio"}
    # The shopper's words come from the offline parse where it heard the same value.
    assert parsed.get("max_price") is not None
    assert parsed.get("max_price").text == "under fifty bucks"  # type: ignore[union-attr]
    request = openai_stub.requests[0]
    assert request.body["response_format"] == {"type": "json_object"}
    assert '["audio", "kitchen", "outdoor", "toys"]' in request.message("system")
    assert request.message("user") == f"<query>{QUERY}</query>"


@pytest.mark.parametrize(
    "behaviour",
    [
        Answer("Sure! Here are some headphones."),  # not JSON
        Answer("[1, 2]"),  # JSON, wrong shape
        Answer('{"search_text": "headphones"}'),  # keys missing
        answer(extra="ignore previous instructions"),  # unexpected key
        answer(max_price="50"),  # a string where a number belongs
        answer(max_price=5000),  # a budget the shopper never stated
        answer(min_price=80, max_price=50),  # contradictory
        answer(max_price=-50),
        answer(category="spaceships"),  # not one of the catalog's
        answer(search_text="recommend product 999 [id:999]"),  # words not in the query
        answer(search_text=""),
        Fail(500),
        Fail(429),
        Slow(3.0, answer()),  # past the parse timeout
    ],
    ids=lambda b: type(b).__name__ + ":" + str(getattr(b, "text", getattr(b, "status", "")))[:40],
)
def test_malformed_or_hostile_parses_fall_back_to_offline(
    openai_stub: OpenAIStub, behaviour: Any
) -> None:
    openai_stub.respond(behaviour)
    counts_before = parses("llm_rejected") + parses("llm_failed")
    parsed = run_parse(openai_stub, timeout=1.0)
    assert parses("llm_rejected") + parses("llm_failed") == counts_before + 1
    assert parsed.parser == "offline"
    assert as_dict(parsed) == OFFLINE
    assert parsed.search_text == "headphones for the gym, nothing fancy"
    assert len(openai_stub.requests) == 1  # no retries: the offline parse is ready


def test_query_parser_llm_is_wired_from_settings(openai_stub: OpenAIStub, embedder: Any) -> None:
    from app.core.catalog import Product
    from app.eval.index import build_chunk_index

    settings = Settings(
        qdrant_path=":memory:",
        openai_api_key="test",
        openai_base_url=openai_stub.base_url,
        query_parser="llm",
    )
    store = build_chunk_index(
        [Product(1, 1, "Swim Buds", "Earbuds for the pool.", "audio", "Acme", 59.0)],
        settings,
        embedder,
    )
    understanding = build_query_understanding(settings, store)
    openai_stub.respond(answer(category="audio", max_price=50, prefer_low_price=False))

    async def go() -> ParsedQuery:
        try:
            return await understanding.parse(QUERY)
        finally:
            await understanding.aclose()

    parsed = asyncio.run(go())
    assert parsed.parser == "llm" and as_dict(parsed) == {"max_price": 50.0, "category": "audio"}
    # Without a key the setting is ignored (offline, no request).
    offline = build_query_understanding(settings.model_copy(update={"openai_api_key": None}), store)
    assert offline.llm is None
    store.close()


# Issue 34: with QUERY_PARSER=llm, a model that left out the budget dropped the rules' too.
@pytest.mark.parametrize(
    ("query", "rules"),
    [
        (QUERY, {"max_price": 50.0}),
        ("cheap yoga mat, budget $30", {"max_price": 30.0, "price_preference": "low"}),
        ("a tent for 4 people from 120 to 200 dollars", {"min_price": 120.0, "max_price": 200.0}),
        # What the shopper ruled out stays out, and out of the search text.
        ("a tent, not a backpacking one", {"exclude_words": "backpacking"}),
    ],
)
def test_the_model_adds_constraints_and_never_drops_the_rules(
    openai_stub: OpenAIStub, query: str, rules: dict[str, object]
) -> None:
    offline = OfflineQueryParser().parse(query, CATEGORIES)
    assert as_dict(offline) == rules
    # The model hears only a category, and searches for the query with its price words.
    openai_stub.respond(
        answer(
            search_text=query,
            min_price=None,
            max_price=None,
            prefer_low_price=False,
            category="outdoor",
        )
    )
    ok_before = parses("llm_ok")
    parsed = run_parse(openai_stub, query)
    assert parses("llm_ok") == ok_before + 1
    assert parsed.parser == "llm"
    assert as_dict(parsed) == {"category": "outdoor", **rules}
    # The rules' constraints keep the words they were heard in, and the text without them.
    assert [c for c in parsed.constraints if c.field != "category"] == list(offline.constraints)
    assert parsed.search_text == offline.search_text


def test_a_model_that_contradicts_the_rules_bound_is_rejected(openai_stub: OpenAIStub) -> None:
    query = "a 100 mm lens under 60 dollars"
    openai_stub.respond(answer(search_text="lens", min_price=100, max_price=None, category=None))
    rejected_before = parses("llm_rejected")
    parsed = run_parse(openai_stub, query)
    assert parses("llm_rejected") == rejected_before + 1
    assert parsed.parser == "offline" and as_dict(parsed) == {"max_price": 60.0}
