"""The retrieval gate: a few searches at once, a short queue, and a refusal past it."""

from __future__ import annotations

import asyncio

import pytest

from app.api.admission import Overloaded, RetrievalGate


def test_past_the_slots_and_the_queue_a_request_is_refused_at_once() -> None:
    async def run() -> list[str]:
        gate = RetrievalGate(concurrency=2, max_waiting=1)
        release = asyncio.Event()
        events: list[str] = []

        async def search(name: str) -> None:
            async with gate.slot():
                events.append(f"{name} runs")
                await release.wait()
            events.append(f"{name} done")

        tasks = [asyncio.create_task(search(n)) for n in ("a", "b", "c")]
        await asyncio.sleep(0.01)  # a and b hold the slots, c waits
        assert events == ["a runs", "b runs"]
        with pytest.raises(Overloaded, match="2 searches running, 1 waiting"):
            async with gate.slot():
                pass
        release.set()
        await asyncio.gather(*tasks)
        async with gate.slot():  # all free again
            events.append("d runs")
        return events

    events = asyncio.run(run())
    assert events[:2] == ["a runs", "b runs"]
    assert "c runs" in events and events.index("c runs") > events.index("a done")
    assert events[-1] == "d runs"


def test_no_queue_refuses_only_when_every_slot_is_busy() -> None:
    async def run() -> None:
        gate = RetrievalGate(concurrency=1, max_waiting=0)
        async with gate.slot():
            with pytest.raises(Overloaded):
                async with gate.slot():
                    pass
        async with gate.slot():
            pass

    asyncio.run(run())
