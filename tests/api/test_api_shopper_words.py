"""What a shopper's words rule out stays out, and a new kind of product is a new question:
real HTTP over the demo catalog (tests/demo_index.py, JVM-free, SYNC_MODE=off).

Before app/query/negation.py, "headphones for running, not over-ear" answered four over-ear
headphones of five (the words "over-ear" were searched for), "a tent, not a backpacking
one" put the backpacking tent first and two backpacks after it (on the whole demo
catalog), and "not Keylight Audio headphones" answered with Keylight Audio's only.
"""

from __future__ import annotations

import re
from typing import Any

import httpx

from tests.api.test_api_conversation import ask
from tests.demo_index import DemoShard, demo_client_fixture, demo_shard_fixture  # noqa: F401


def _uses(name: str, *words: str) -> bool:
    found = set(re.findall(r"[^\W_]+", name.lower()))
    return all(w in found for w in words)


def _applied(answer: dict[str, Any]) -> list[tuple[str, str]]:
    return [(f["field"], f["label"]) for f in answer["filters_applied"]]


def test_what_is_ruled_out_is_not_shown(demo_client: httpx.Client, demo_shard: DemoShard) -> None:
    asked = ask(demo_client, "headphones for running")
    assert any(_uses(p["name"], "over", "ear") for p in asked["products"]), "the test can fail"
    answer = ask(demo_client, "headphones for running, not over-ear")
    names = [p["name"] for p in answer["products"]]
    assert not any(_uses(n, "over", "ear") for n in names), names
    # The shard's other headphones come first (it holds every 3rd demo product).
    others = {
        p.id
        for p in demo_shard.products
        if _uses(p.name, "headphones") and not _uses(p.name, "over", "ear")
    }
    assert {p["id"] for p in answer["products"][: len(others)]} == others, names
    assert answer["search_text"] == "headphones for running"
    assert ("exclude_words", "not over-ear") in _applied(answer)
    assert "over-ear" not in answer["message"].lower()


def test_a_follow_up_rules_out_and_later_turns_keep_it(demo_client: httpx.Client) -> None:
    first = ask(demo_client, "headphones for running")
    second = ask(demo_client, "not over-ear", first["conversation"])
    names = [p["name"] for p in second["products"]]
    assert names and not any(_uses(n, "over", "ear") for n in names), names
    assert second["search_text"] == "headphones for running"
    third = ask(demo_client, "cheaper", second["conversation"])
    assert third["products"]
    assert not any(_uses(p["name"], "over", "ear") for p in third["products"])
    assert ("exclude_words", "not over-ear") in _applied(third)


def test_a_kind_ruled_out_leaves_the_others_of_the_thing_asked_for(
    demo_client: httpx.Client,
) -> None:
    asked = ask(demo_client, "a hiking backpack")
    assert any(_uses(p["name"], "ultralight") for p in asked["products"]), "the test can fail"
    answer = ask(demo_client, "a hiking backpack, not an ultralight one")
    names = [p["name"] for p in answer["products"]]
    assert names and _uses(names[0], "backpack"), names
    assert not any(_uses(n, "ultralight") for n in names), names


def test_a_brand_ruled_out_is_the_brand_not_the_words_after_it(demo_client: httpx.Client) -> None:
    asked = ask(demo_client, "Keylight Audio headphones")
    assert any(p["brand"] == "Keylight Audio" for p in asked["products"]), "the test can fail"
    answer = ask(demo_client, "not Keylight Audio headphones")
    assert answer["products"]
    assert all(p["brand"] != "Keylight Audio" for p in answer["products"])
    assert all(p["category"] == "audio" for p in answer["products"])
    assert ("exclude_brand", "not Keylight Audio") in _applied(answer)


def test_a_new_kind_of_product_in_a_follow_up_is_a_new_question(demo_client: httpx.Client) -> None:
    """Added to the last search ("a hiking backpack headphones"), backpacks came back among
    the headphones."""
    first = ask(demo_client, "a hiking backpack")
    assert any(_uses(p["name"], "backpack") for p in first["products"])
    answer = ask(demo_client, "show me headphones instead", first["conversation"])
    assert answer["search_text"] == "headphones"
    names = [p["name"] for p in answer["products"]]
    assert names and all(_uses(n, "headphones") for n in names), names
    refined = ask(demo_client, "lighter ones", first["conversation"])
    assert refined["search_text"].startswith("a hiking backpack")


def test_a_question_about_shown_products_is_answered_about_them(
    demo_client: httpx.Client,
) -> None:
    """Searched as a new question, "is the second one waterproof?" answered with other
    waterproof products, and "compare the first two" with nothing."""
    first = ask(demo_client, "headphones for swimming")
    shown = [p["id"] for p in first["products"]]
    assert len(shown) >= 2
    answer = ask(demo_client, "is the second one waterproof?", first["conversation"])
    assert [p["id"] for p in answer["products"]] == [shown[1]]
    # Answered about it, from its own text: no "Top pick" of one product asked about.
    assert answer["message"].startswith(answer["products"][0]["name"]), answer["message"]
    assert "Top pick" not in answer["message"]
    assert answer["search_text"] == first["search_text"]
    alone = ask(demo_client, "is the second one waterproof?")
    assert [p["id"] for p in alone["products"]] != [shown[1]], "the test can fail"
    compared = ask(demo_client, "compare the first two", first["conversation"])
    assert [p["id"] for p in compared["products"]] == shown[:2]
    # The conversation goes on from the question: "cheaper" refines the search, still.
    cheaper = ask(demo_client, "cheaper", compared["conversation"])
    assert cheaper["search_text"] == first["search_text"] and cheaper["products"]


def test_which_one_is_asked_of_the_products_shown(demo_client: httpx.Client) -> None:
    first = ask(demo_client, "headphones for swimming")
    shown = {p["id"] for p in first["products"]}
    answer = ask(demo_client, "which one has the best battery?", first["conversation"])
    assert {p["id"] for p in answer["products"]} == shown
    # No text says "battery"; what each says of its charge is quoted, not called absent.
    assert all(p["name"] in answer["message"] for p in answer["products"])
    assert "charge" in answer["message"] and "Top pick" not in answer["message"]
    assert answer["search_text"] == first["search_text"]
    later = ask(demo_client, "cheaper", answer["conversation"])
    assert later["search_text"] == first["search_text"]


def test_a_quality_alone_refines_the_last_search(demo_client: httpx.Client) -> None:
    """As a new question, "washable?" after dog beds found travel pillows (the demo)."""
    first = ask(demo_client, "headphones for swimming")
    answer = ask(demo_client, "waterproof?", first["conversation"])
    assert answer["search_text"] == "headphones for swimming waterproof"
    assert answer["products"] and all(p["category"] == "audio" for p in answer["products"])
    alone = ask(demo_client, "waterproof?")
    assert {p["category"] for p in alone["products"]} != {"audio"}, "the test can fail"
