"""The SSE reader of app/llm/completion_stream.py: the events of a body cut anywhere.

The reader over real HTTP (retries, a cut stream, a garbled chunk, the pace of its reads)
is tested through `OpenAIGenerator.stream` in test_llm.py.
"""

from __future__ import annotations

import itertools

import pytest

from app.llm.completion_stream import _SSEData

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
