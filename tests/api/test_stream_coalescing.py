"""The `delta` coalescing of app/api/streaming.py: which pieces go out together, in order,
and that a reader who leaves closes the answer, whether text was held or not.

Orders of events, not durations: a piece that comes four windows later is always sent
on its own, pieces that come together within a window always together.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

import pytest

from app.api.streaming import FLUSH_SECONDS, _coalesced
from app.llm.types import AnswerPart, Recommendation

ANSWER = Recommendation("abcd", "openai", False, [])


def test_the_first_piece_goes_alone_then_pieces_are_joined_per_window() -> None:
    async def answer() -> AsyncGenerator[AnswerPart, None]:
        yield "a"
        yield "b"  # within the window the first one opened: held, then sent with "c"
        yield "c"
        await asyncio.sleep(4 * FLUSH_SECONDS)
        yield "d"  # long after: sent at once
        yield ANSWER

    async def run() -> list[AnswerPart]:
        return [part async for part in _coalesced(answer())]

    assert asyncio.run(run()) == ["a", "bc", "d", ANSWER]


@pytest.mark.parametrize("held", [False, True], ids=["nothing held", "text held"])
def test_a_reader_that_leaves_closes_the_answer(held: bool) -> None:
    closed: list[str] = []

    async def answer() -> AsyncGenerator[AnswerPart, None]:
        try:
            yield "a"
            if held:
                yield "b"
            await asyncio.sleep(3600)  # an LLM that says nothing more
            yield ANSWER
        finally:
            closed.append("answer")

    async def run() -> list[AnswerPart]:
        parts = _coalesced(answer())
        got = [await anext(parts)]
        if held:
            got.append(await anext(parts))  # "b", when the window ends
        reading = asyncio.ensure_future(anext(parts))
        await asyncio.sleep(FLUSH_SECONDS)  # the read waits on the silent LLM
        reading.cancel()  # the reader leaves
        with pytest.raises(asyncio.CancelledError):
            await reading
        await parts.aclose()
        return got

    assert asyncio.run(run()) == (["a", "b"] if held else ["a"])
    assert closed == ["answer"]
