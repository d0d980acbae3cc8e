"""The shopper page in headless Chromium against the real app and a small live catalog.

One Spark-written Hudi table and one uvicorn server per module: the table holds every
20th demo product plus product 900, whose seller text carries `<script>` and
`<img onerror=...>`, and product 901, running shoes under $100. The embedded sync
mirrors it into an in-memory Qdrant, and the `openai` generator talks to the local
stub server (echo answers cite `[id:N]`).

Screenshots land in artifacts/ (gitignored): web_desktop.png, web_phone.png,
web_degraded.png, web_filter_chip.png, web_thread.png — look at them when the page changes.

Needs Debian's chromium (/usr/bin/chromium) and the `playwright` Python package; no
browser is downloaded (`playwright install` is never run).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import (
    Browser,
    Page,
    Request,
    Route,
    ViewportSize,
    expect,
    sync_playwright,
)

from app.core.catalog import COLUMN_NAMES
from app.core.config import ROOT, Settings
from spark_jobs.create_table import create_table
from spark_jobs.ingest_events import run_ingest_events
from spark_jobs.upsert_products import upsert_rows
from tests.live_server import ServerThread, wait_ready
from tests.openai_stub import Fail, OpenAIStub, Trickle
from tests.synctools import wait_for

CHROMIUM = Path("/usr/bin/chromium")
# ./test.sh installs it; a missing browser is a set-up failure, not a reason to skip.
pytestmark = [pytest.mark.slow, pytest.mark.spark]

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = ROOT / "artifacts"
PHONE: ViewportSize = {"width": 390, "height": 844}
DESKTOP: ViewportSize = {"width": 1280, "height": 900}

XSS_ID = 900
SCRIPT_TEXT = "<script>window.__pwned=1</script>"
IMG_TEXT = '<img src=x onerror="window.__pwned=1">'
XSS_PRODUCT = {
    "id": XSS_ID,
    "ts": 1,
    "name": "Harborlight Rechargeable Camping Lantern",
    "description": (
        f"A rechargeable LED camping lantern for the tent and the campsite. {SCRIPT_TEXT} "
        f"{IMG_TEXT} Bright enough for a whole tent, with a hook and twelve hours of light."
    ),
    "category": "outdoor",
    "brand": "<b>Harborlight</b>",
    "price": 34.5,
}


# The sample's only running shoes cost $130.49; these give "under $100" something to find.
BUDGET_SHOES = {
    "id": 901,
    "ts": 1,
    "name": "Stridewell Easy Miles Road Running Shoes",
    "description": "Cushioned road running shoes for easy miles and a first 10k.",
    "category": "sports",
    "brand": "Stridewell",
    "price": 79.0,
}


def catalog() -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in (ROOT / "data/demo/products.jsonl").open()][::20]
    rows += [XSS_PRODUCT, BUDGET_SHOES]
    return [{k: r.get(k, 1) for k in COLUMN_NAMES} for r in rows]


CATALOG_NAMES = {r["name"] for r in catalog()}
PRICES = {r["name"]: r["price"] for r in catalog()}


@pytest.fixture(scope="module")
def web_tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("web")


@pytest.fixture(scope="module")
def site(spark: Any, web_tmp: Path, openai_stub_server: OpenAIStub) -> Iterator[str]:
    tmp = web_tmp
    table = str(tmp / "products")
    create_table(spark, table, "COPY_ON_WRITE")
    upsert_rows(spark, table, catalog(), quarantine_path=str(tmp / "quarantine"))
    settings = Settings(
        # Events (the page's clicks, every answer's impression) land under tmp, not the
        # checkout's data/; a segment closes within a second so the ingest can read it.
        data_dir=str(tmp / "data"),
        model_cache_dir=Settings().model_cache_dir,
        events_segment_seconds=0.5,
        hudi_table_path=table,
        qdrant_path=":memory:",
        quarantine_dir=str(tmp / "quarantine"),
        sync_interval_seconds=1.0,
        openai_api_key="test",
        openai_base_url=openai_stub_server.base_url,
        # No test here waits on a timeout; a 2 s deadline cut the trickled stream under CI
        # load, and the extractive answer that replaced it is never shown being written.
        llm_timeout_seconds=10.0,
        llm_max_retries=0,
        cors_origins=[],
    )
    with ServerThread(settings) as server:
        wait_ready(server.url, 120)
        yield server.url


@pytest.fixture(autouse=True)
def llm_echoes(openai_stub: OpenAIStub) -> None:
    """Each test starts with the stub echoing: a failure one test sets must not go on
    failing the next tests' calls until the breaker opens."""


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    # Checked here, not at import, so collecting the fast tier needs no browser; a missing
    # chromium fails the browser tests (it does not skip them).
    assert CHROMIUM.exists(), "/usr/bin/chromium is missing: apt-get install -y chromium"
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def open_page(browser: Browser, site: str, viewport: ViewportSize = DESKTOP) -> Page:
    page = browser.new_page(viewport=viewport)
    page.set_default_timeout(30_000)
    page.goto(site + "/")
    return page


def recommend_requests(page: Page) -> list[Request]:
    sent: list[Request] = []
    page.on("request", lambda r: sent.append(r) if r.url.endswith("/recommend") else None)
    return sent


def ask(page: Page, question: str, category: str = "") -> None:
    page.fill("#query", question)
    page.select_option("#category", category)
    with page.expect_response("**/recommend"):
        page.click("#submit")
    expect(page.locator("#submit")).to_be_enabled()


def card_names(page: Page) -> list[str]:
    return page.locator(".products .card .card__name").all_text_contents()


def screenshot(page: Page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name), full_page=True)


# --- the happy path --------------------------------------------------------------------
def test_page_is_served_with_a_strict_content_security_policy(site: str) -> None:
    page = httpx.get(site + "/")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert httpx.get(site + "/static/app.js").status_code == 200
    assert httpx.get(site + "/static/style.css").status_code == 200


def test_a_question_shows_the_answer_above_cards_from_the_catalog(
    browser: Browser, site: str, openai_stub: OpenAIStub
) -> None:
    page = open_page(browser, site)
    console_errors: list[str] = []
    page.on("console", lambda m: console_errors.append(m.text) if m.type == "error" else None)

    ask(page, "noise cancelling headphones for the train")

    names = card_names(page)
    assert names and set(names) <= CATALOG_NAMES
    assert len(openai_stub.requests) == 1
    # The echo answer is "I recommend <first name> [id:N]."; the citation becomes a link.
    answer = page.locator("#answer-text")
    expect(answer).to_have_text(f"I recommend {names[0]}.")
    cite = answer.locator("a.cite")
    expect(cite).to_have_text(names[0])
    assert cite.get_attribute("href") == f"#{page.locator('.card').first.get_attribute('id')}"
    expect(page.locator("#answer-source")).to_have_text("AI assistant")
    expect(page.locator("#notice")).to_be_hidden()
    expect(page.locator("#status")).to_be_hidden()  # the loading line is gone
    expect(page.locator("#products-count")).to_have_text(f"({len(names)})")
    # The answer sits above the cards.
    answer_box, first_card = answer.bounding_box(), page.locator(".card").first.bounding_box()
    assert answer_box and first_card and answer_box["y"] < first_card["y"]
    first = page.locator(".card").first
    expect(first.locator(".card__price")).to_have_text(f"${PRICES[names[0]]:,.2f}")
    expect(first.locator(".card__match-text").first).not_to_be_empty()
    screenshot(page, "web_desktop.png")
    assert console_errors == []  # a CSP violation or script error would show up here


def test_example_chip_asks_its_question_on_a_phone(browser: Browser, site: str) -> None:
    page = open_page(browser, site, PHONE)
    chip = page.locator(".chip", has_text="Tent")
    with page.expect_response("**/recommend"):
        chip.click()
    expect(page.locator("#submit")).to_be_enabled()
    assert page.input_value("#query") == chip.get_attribute("data-query")
    assert set(card_names(page)) <= CATALOG_NAMES and card_names(page)
    # Nothing wider than the phone: no sideways scrolling.
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    screenshot(page, "web_phone.png")


# --- seller text and LLM output are text ------------------------------------------------
def test_markup_in_a_description_is_shown_as_text_and_never_runs(
    browser: Browser, site: str
) -> None:
    page = open_page(browser, site)
    ask(page, "rechargeable camping lantern for the tent", category="outdoor")

    card = page.locator(f'.card[data-product-id="{XSS_ID}"]')
    expect(card).to_be_visible()
    expect(card.locator(".card__match")).to_contain_text(SCRIPT_TEXT)
    expect(card.locator(".card__match")).to_contain_text(IMG_TEXT)
    expect(card.locator(".card__brand")).to_have_text("by <b>Harborlight</b>")
    assert page.evaluate("window.__pwned") is None
    assert page.locator("img").count() == 0
    assert page.locator("b").count() == 0
    assert page.evaluate("document.scripts.length") == 1  # app.js only


def test_llm_failure_shows_the_degraded_notice(
    browser: Browser, site: str, openai_stub: OpenAIStub
) -> None:
    openai_stub.respond(Fail(500))
    page = open_page(browser, site)
    ask(page, "a stand mixer for baking bread")

    notice = page.locator("#notice")
    expect(notice).to_be_visible()
    expect(notice).to_contain_text("unavailable")
    expect(page.locator("#answer-source")).to_have_text("Quick summary")
    # The extractive answer cites every product it names; no raw [id:N] is left.
    text = page.locator("#answer-text").text_content() or ""
    assert text.startswith("Top pick: ") and "[id:" not in text
    assert page.locator("#answer-text a.cite").count() >= 1
    screenshot(page, "web_degraded.png")


# --- validation and errors --------------------------------------------------------------
def test_empty_question_shows_a_message_and_sends_nothing(browser: Browser, site: str) -> None:
    page = open_page(browser, site)
    sent = recommend_requests(page)

    page.fill("#query", "   ")
    page.click("#submit")
    error = page.locator("#query-error")
    expect(error).to_be_visible()
    expect(error).to_have_text("Please tell us what you are looking for.")
    page.locator("#query").press("Enter")
    page.wait_for_timeout(300)
    assert sent == []


def test_min_price_above_max_price_is_refused_before_sending(browser: Browser, site: str) -> None:
    page = open_page(browser, site)
    sent = recommend_requests(page)
    page.fill("#query", "a kettle")
    page.fill("#min-price", "50")
    page.fill("#max-price", "10")
    page.click("#submit")
    expect(page.locator("#filter-error")).to_contain_text("Minimum price")
    page.wait_for_timeout(300)
    assert sent == []


def test_a_4xx_from_the_server_shows_its_detail(browser: Browser, site: str) -> None:
    page = open_page(browser, site)

    # The form cannot produce a bad body, so rewrite it on the way: the real server answers.
    def bad_top_k(route: Route) -> None:
        route.continue_(post_data=json.dumps({"query": "tent", "top_k": 0}))

    page.route("**/recommend", bad_top_k)
    ask(page, "tent")
    status = page.locator("#status")
    expect(status).to_contain_text("We couldn't use that request.")
    expect(status).to_contain_text("top_k")
    expect(page.locator(".card")).to_have_count(0)
    expect(page.locator("#answer")).to_be_hidden()


def test_network_failure_shows_a_clear_message(browser: Browser, site: str) -> None:
    page = open_page(browser, site)
    page.route("**/recommend", lambda route: route.abort())
    page.fill("#query", "tent")
    page.click("#submit")
    expect(page.locator("#status")).to_contain_text("Could not reach the shop.")
    expect(page.locator("#submit")).to_be_enabled()


# --- constraints heard in the words ------------------------------------------------------
SHOES = "Rallyline Vista Cushioned Trail Running Shoes"  # $130.49


def test_a_budget_in_words_shows_a_chip_and_removing_it_searches_without_it(
    browser: Browser, site: str
) -> None:
    page = open_page(browser, site)
    sent = recommend_requests(page)
    ask(page, "running shoes under $100")

    chip = page.locator(".filter-chip", has_text="≤ $100")
    expect(chip).to_be_visible()
    assert chip.get_attribute("data-source") == "query"
    assert json.loads(sent[0].post_data or "") == {"query": "running shoes under $100"}
    names = card_names(page)
    assert names[0] == BUDGET_SHOES["name"]
    # The one shoe that fits, then the closest shoes above the budget, each marked.
    cards = page.locator(".products .card")
    for i, name in enumerate(names):
        marked = cards.nth(i).locator(".pill--outside").count() == 1
        assert marked == (PRICES[name] > 100), name
        assert "Running Shoes" in name
    expect(page.locator("#nearest")).to_be_visible()
    fit = sum(PRICES[n] <= 100 for n in names)
    expect(page.locator("#nearest")).to_contain_text(
        f"Only {fit} product{'s' if fit > 1 else ''} match{'' if fit > 1 else 'es'} ≤ $100"
    )
    screenshot(page, "web_filter_chip.png")

    with page.expect_response("**/recommend"):
        chip.get_by_role("button", name="Remove filter ≤ $100").click()
    expect(page.locator("#submit")).to_be_enabled()
    assert json.loads(sent[-1].post_data or "") == {
        "query": "running shoes under $100",
        "ignore_parsed": ["max_price"],
    }
    expect(page.locator(".filter-chip")).to_have_count(0)
    expect(page.locator("#applied")).to_be_hidden()
    assert SHOES in card_names(page)
    assert page.input_value("#query") == "running shoes under $100"  # the words are kept

    # A new question follows up the answer on screen: its conversation goes back.
    ask(page, "running shoes under $150")
    follow_up = json.loads(sent[-1].post_data or "")
    assert follow_up["query"] == "running shoes under $150" and follow_up["conversation"]
    expect(page.locator(".filter-chip", has_text="≤ $150")).to_be_visible()


def test_an_impossible_budget_shows_nearest_matches_labelled(browser: Browser, site: str) -> None:
    page = open_page(browser, site)
    ask(page, "running shoes under $5")
    expect(page.locator("#nearest")).to_be_visible()
    expect(page.locator("#nearest")).to_contain_text("Nothing matches ≤ $5")
    cards = page.locator(".card")
    assert cards.count() >= 1
    expect(cards.first.locator(".pill--outside")).to_have_text("Outside your price range")
    assert all(PRICES[n] > 5 for n in card_names(page))


def test_a_request_nothing_matches_closely_is_labelled(browser: Browser, site: str) -> None:
    page = open_page(browser, site)
    ask(page, "a blender that is not too loud")
    expect(page.locator("#nearest")).to_be_visible()
    # Once the service has read the catalog's words (in the background after its start),
    # the label names what the shop lacks (app/query/kind.py); before, it says "nothing close".
    expect(page.locator("#nearest")).to_contain_text(
        re.compile("Nothing in the shop closely matches this|The shop has nothing called “blender”")
    )
    assert page.locator(".card").count() >= 1  # the nearest are still shown
    ask(page, "running shoes")
    expect(page.locator("#nearest")).to_be_hidden()


def test_a_form_filter_chip_clears_the_form_field(browser: Browser, site: str) -> None:
    page = open_page(browser, site)
    sent = recommend_requests(page)
    page.fill("#max-price", "60")
    ask(page, "a gift for a dog")
    chip = page.locator('.filter-chip[data-source="request"]')
    expect(chip.locator(".filter-chip__label")).to_have_text("≤ $60")
    expect(chip.locator(".filter-chip__source")).to_have_text("filters")
    with page.expect_response("**/recommend"):
        chip.get_by_role("button").click()
    expect(page.locator("#submit")).to_be_enabled()
    assert page.input_value("#max-price") == ""
    assert json.loads(sent[-1].post_data or "") == {"query": "a gift for a dog"}


# --- a streamed answer, and a thread of turns -------------------------------------------------
PARTIAL_ANSWER = """() => {
    const text = document.querySelector("#answer-text").textContent;
    const writing = document.querySelector("#answer").classList.contains("answer--writing");
    const cards = document.querySelectorAll("#products .card").length;
    return writing && text.includes("I recommend") ? { text, cards } : null;
}"""


def test_the_answer_streams_in_and_a_follow_up_keeps_the_first_turn_visible(
    browser: Browser, site: str, openai_stub: OpenAIStub
) -> None:
    openai_stub.respond(Trickle(10))  # the echo answer, a token every 100 ms
    page = open_page(browser, site)
    sent = recommend_requests(page)
    page.fill("#query", "running shoes under $100")
    page.click("#submit")
    # Caught while the LLM's text is still being written: the cards are already there. Polled
    # by timer: earlier tests' pages stay open, and a page in the background gets no
    # animation frames to poll on.
    partial = page.wait_for_function(PARTIAL_ANSWER, polling=50).json_value()
    expect(page.locator("#submit")).to_be_enabled()
    first_answer = page.locator("#answer-text").text_content() or ""
    assert partial["cards"] >= 1
    assert first_answer.startswith(partial["text"]) and len(partial["text"]) < len(first_answer)
    # The price notice, then the LLM's words as they came; the citation became a link.
    assert first_answer.startswith("Only 1 product matches your request at ≤ $100")
    assert "I recommend Stridewell" in first_answer and "[id:" not in first_answer
    assert "text/event-stream" in sent[0].headers["accept"]
    chip = page.locator(".filter-chip", has_text="≤ $100")
    expect(chip.locator(".filter-chip__source")).to_have_text("your words")

    page.fill("#query", "running shoes under $150")
    page.click("#submit")
    expect(page.locator("#answer.answer--writing")).to_be_visible()
    expect(page.locator("#submit")).to_be_enabled()

    turns = page.locator("#thread .turn")
    expect(turns).to_have_count(1)
    expect(turns.first.locator(".turn__question")).to_have_text("running shoes under $100")
    expect(turns.first.locator(".turn__chip")).to_contain_text(["≤ $100"])
    expect(turns.first.locator(".turn__answer")).to_have_text(first_answer)
    expect(page.locator("#turn-question")).to_have_text("running shoes under $150")
    expect(page.locator(".filter-chip", has_text="≤ $150")).to_be_visible()
    expect(page.locator(".filter-chip", has_text="≤ $100")).to_have_count(0)
    expect(page.locator("#answer-text")).to_contain_text("I recommend ")
    follow_up = json.loads(sent[1].post_data or "")
    assert follow_up["query"] == "running shoes under $150"
    assert follow_up["conversation"]  # the first answer's, sent back
    screenshot(page, "web_thread.png")

    # Starting over empties the thread, and the next question is no follow-up.
    page.get_by_role("button", name="Start a new search").click()
    expect(page.locator("#thread-section")).to_be_hidden()
    ask(page, "a lantern for camping")
    assert json.loads(sent[-1].post_data or "") == {"query": "a lantern for camping"}
    expect(page.locator("#thread .turn")).to_have_count(0)


def test_opening_a_product_sends_a_click_on_its_answer(browser: Browser, site: str) -> None:
    page = open_page(browser, site)
    with page.expect_response("**/recommend") as answered:
        page.fill("#query", "noise cancelling headphones for the train")
        page.click("#submit")
    stream = answered.value.text()  # the page streams: `done` carries the JSON answer
    answer = json.loads(stream.split("event: done\ndata: ", 1)[1].split("\n", 1)[0])
    expect(page.locator("#submit")).to_be_enabled()
    first = page.locator(".card .card__open").first
    with page.expect_response("**/events") as sent:
        first.click()
    assert sent.value.status == 202
    body = sent.value.request.post_data_json
    assert body is not None
    click = body["events"][0]
    assert click == {
        "type": "click",
        "product_id": answer["products"][0]["id"],
        "recommendation_id": answer["recommendation_id"],
    }


# --- the shop's analytics view ---------------------------------------------------------
def ingest_closed_segments(spark: Any, tmp: Path, answered: list[str]) -> None:
    """`ingest_events` (Spark) once the answers to the `answered` queries are in closed
    segments and no segment is open. An answer's events are queued and written within
    EVENTS_FLUSH_SECONDS of it, so "none open" alone can hold before the last answer's
    line exists (and it then misses the ingest)."""
    events = tmp / "data" / "events"

    def closed_queries() -> set[str]:
        lines = (line for f in events.glob("*.jsonl") for line in f.read_text().splitlines())
        return {json.loads(line).get("query") for line in lines if line}

    wait_for(
        "the answers' events in closed segments",
        lambda: set(answered) <= closed_queries() and not any((events / "_open").glob("*")),
        60,
    )
    run_ingest_events(
        spark, str(events), str(tmp / "data" / "tables" / "interactions"), str(tmp / "ingest")
    )


def test_the_analytics_view_shows_what_shoppers_did(
    browser: Browser, site: str, spark: Any, web_tmp: Path
) -> None:
    page = open_page(browser, site)
    ask(page, "a rechargeable lantern for the campsite")
    with page.expect_response("**/events") as clicked:
        page.locator(".card .card__open").first.click()
    assert clicked.value.status == 202
    ask(page, "a carry-on suitcase for a weekend away", category="travel")  # none in the shop
    expect(page.locator(".products .card")).to_have_count(0)
    ingest_closed_segments(
        spark,
        web_tmp,
        ["a rechargeable lantern for the campsite", "a carry-on suitcase for a weekend away"],
    )

    page = open_page(browser, site)
    page.get_by_role("link", name="Shop analytics").click()
    expect(page).to_have_url(site + "/insights?days=7")  # the default window, in the URL
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.select_option("#days", "1")
    stats = httpx.get(site + "/analytics", params={"days": 1, "top": 20}).json()
    expect(page.locator("#report")).to_be_visible()
    expect(page.locator("#status")).to_be_hidden()
    expect(page).to_have_url(site + "/insights?days=1")  # a link to the view keeps its window

    expect(page.locator("#t-answers")).to_have_text(str(stats["answers"]))
    expect(page.locator("#t-clicks")).to_have_text(str(stats["clicks"]))
    top = page.locator("#top-queries tbody tr")
    expect(top).to_have_count(len(stats["top_queries"]))
    lantern = top.filter(has_text="a rechargeable lantern for the campsite")
    expect(lantern.locator("td")).to_have_text(
        ["a rechargeable lantern for the campsite", "1", "1", "100%", "0"]
    )
    expect(page.locator("#no-match tbody tr").filter(has_text="carry-on suitcase")).to_have_text(
        "a carry-on suitcase for a weekend away1"
    )
    first = next(p for p in stats["ctr_by_position"] if p["position"] == 1)
    expect(page.locator("#by-position tbody tr").first.locator("td")).to_have_text(
        ["1", str(first["impressions"]), str(first["clicks"]), re.compile(r"\d+(\.\d)?%")]
    )
    expect(page.locator("#purchases tbody td")).to_have_text("Nothing in this window.")
    screenshot(page, "web_insights.png")
    assert errors == []


def test_the_analytics_view_asks_for_the_api_key_when_the_service_has_one(
    browser: Browser, site: str, web_tmp: Path
) -> None:
    """/analytics is an admin route: the view asks for the key, says when it is refused,
    and sends it (X-API-Key) once given; the shopper page never needs it."""
    guarded = Settings(
        data_dir=str(web_tmp / "guarded"),
        model_cache_dir=Settings().model_cache_dir,
        qdrant_path=":memory:",
        sync_mode="off",
        interactions_table_path=str(web_tmp / "data" / "tables" / "interactions"),
        api_key="shop-owner-key-0123456789",
        cors_origins=[],
    )
    with ServerThread(guarded) as server:
        page = open_page(browser, server.url)
        page.goto(server.url + "/insights")
        expect(page.locator("#key-form")).to_be_visible()
        expect(page.locator("#report")).to_be_hidden()
        page.fill("#api-key", "a wrong guess")
        with page.expect_response("**/analytics?*") as refused:
            page.click("#key-form button")
        assert refused.value.status == 401
        expect(page.locator("#key-error")).to_have_text("That key was refused.")
        page.fill("#api-key", "shop-owner-key-0123456789")
        with page.expect_response("**/analytics?*") as answered:
            page.click("#key-form button")
        assert answered.value.status == 200
        assert answered.value.request.headers["x-api-key"] == "shop-owner-key-0123456789"
        expect(page.locator("#report")).to_be_visible()
        expect(page.locator("#key-form")).to_be_hidden()
