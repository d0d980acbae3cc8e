"""The SSE reader of app/llm/completion_stream.py: the events of a body cut anywhere, and
the ticker every stream's reads keep pace with.

The reader over real HTTP (retries, a cut stream, a garbled chunk, the pace of its reads)
is tested through `OpenAIGenerator.stream` in test_llm.py.
"""

from __future__ import annotations

import asyncio
import itertools

import pytest

from app.llm.completion_stream import Ticker, _SSEData

BODY = (
    b'data: {"a": 1}\n\n'
    b": a comment\r\n"
    b"event: message\r\n"
    b'data: {"b":\r\n'
    b"data:2}\r\n"
    b"\r\n"
    b"id: 7\n"
    b"data: [DONE]\n\n"
)
EVENTS = [b'{"a": 1}', b'{"b":\n2}', b"[DONE]"]


def read(body: bytes, cuts: list[int]) -> list[bytes]:
    events = _SSEData()
    bounds = [0, *cuts, len(body)]
    return [e for start, end in itertools.pairwise(bounds) for e in events.feed(body[start:end])]


def test_a_whole_body_gives_its_events() -> None:
    assert read(BODY, []) == EVENTS


@pytest.mark.parametrize("cut", range(1, len(BODY)))
def test_a_body_cut_anywhere_gives_the_same_events(cut: int) -> None:
    assert read(BODY, [cut]) == EVENTS


def test_a_body_read_byte_by_byte_gives_the_same_events() -> None:
    assert read(BODY, list(range(1, len(BODY)))) == EVENTS


def test_an_event_without_its_blank_line_is_not_complete() -> None:
    assert read(b'data: {"a": 1}\n', []) == []


def test_streams_that_pause_together_wake_in_one_turn_of_the_loop() -> None:
    ticker = Ticker(interval=0.01)

    async def run() -> list[str]:
        order: list[str] = []

        async def stream(name: str) -> None:
            await ticker.wait()
            order.append(name)
            await asyncio.sleep(0)  # anything scheduled after the tick runs after all three
            order.append(f"{name} again")

        await asyncio.gather(stream("a"), stream("b"), stream("c"))
        return order

    assert asyncio.run(run()) == ["a", "b", "c", "a again", "b again", "c again"]


def test_a_reader_that_left_does_not_stop_the_tick_for_the_others() -> None:
    ticker = Ticker(interval=0.01)

    async def run() -> bool:
        left = asyncio.ensure_future(ticker.wait())
        stays = asyncio.ensure_future(ticker.wait())
        await asyncio.sleep(0)
        left.cancel()
        await stays
        return left.cancelled()

    assert asyncio.run(run())


def test_a_new_event_loop_gets_its_own_tick() -> None:
    ticker = Ticker(interval=0.01)

    async def abandoned() -> None:
        waiting = asyncio.ensure_future(ticker.wait())
        await asyncio.sleep(0)
        waiting.cancel()  # the loop ends with the tick still pending

    asyncio.run(abandoned())
    asyncio.run(asyncio.wait_for(ticker.wait(), timeout=5))


def test_the_tick_widens_with_the_streams_it_wakes_up_to_its_longest() -> None:
    """At most `wakeups_per_second` wake-ups a second: 10 streams at a 0.01 s tick is 1,000
    a second, so with a budget of 200 the next tick is 0.05 s away; cancelled waiters do not
    count; a tick that woke few goes back to the base interval; never beyond the longest."""
    ticker = Ticker(interval=0.01, wakeups_per_second=200, max_interval=0.2)

    async def tick_with(streams: int, cancelled: int = 0) -> float:
        waiting = [asyncio.ensure_future(ticker.wait()) for _ in range(streams + cancelled)]
        await asyncio.sleep(0)
        for left in waiting[streams:]:
            left.cancel()
        await asyncio.gather(*waiting[:streams])
        return ticker.next_interval()

    async def run() -> list[float]:
        return [
            ticker.next_interval(),
            await tick_with(10, cancelled=30),
            await tick_with(2),
            await tick_with(100),
        ]

    assert asyncio.run(run()) == [0.01, 0.05, 0.01, 0.2]
