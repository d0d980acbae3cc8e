"""A streamed chat completion read as text, at the cost of one `json.loads` per chunk.

The openai client's own stream (`create(stream=True)`) builds a `ChatCompletionChunk`
model per token through its lenient pure-Python constructor: ~0.3 ms a token, most of a
streamed answer's CPU (BENCHMARKS.md, "Streamed answers"). Here the same request goes
through the same client (`with_streaming_response`: its retries, status errors and HTTP),
and only the body is read by hand: Server-Sent Events whose `data` is a chunk's JSON,
ended by `[DONE]`. Text is handed on per read of the body, not per chunk, and the body is
read once per READ_INTERVAL_SECONDS while tokens flow, on a clock all streams share, whose
tick widens when more streams flow than WAKEUPS_PER_SECOND allows at it.

Failures are those of the client's stream: a chunk with an `error` is an `openai.APIError`;
a chunk that is not the expected JSON raises (`ValueError`, `KeyError`, `TypeError`, ...);
a broken or timed-out read raises the HTTP library's error.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import openai
from openai import AsyncAPIResponse

_DONE = b"[DONE]"
# The shopper gets the answer's text in pieces this far apart (reading speed is ~20 tokens/s:
# a 50 ms batch is not seen, and an answer is ~10x fewer events than tokens).
READ_INTERVAL_SECONDS = 0.05
# Under load the pieces grow instead of the CPU (each wake-up is a read, a parse and an
# event out): a process wakes its streams at most this often a second, 25 streams at 50 ms;
# more share it, up to the longest interval, still above reading speed.
WAKEUPS_PER_SECOND = 500
MAX_READ_INTERVAL_SECONDS = 0.2
# A read this large means the body came faster than it is read (the reader fell behind, or
# the whole answer came at once): the next read follows without a pause.
BULK_READ_BYTES = 8192


class Ticker:
    """One clock for every stream of an event loop: `wait` returns at its next tick, at
    most `next_interval()` away. Streams that pause together wake together, in one turn of
    the loop, on one timer, rather than each on its own timer at its own moment.

    The interval is `interval` while the last tick woke at most `wakeups_per_second` x
    `interval` streams; with more it widens so the wake-ups a second stay at that budget,
    up to `max_interval`."""

    def __init__(
        self,
        interval: float = READ_INTERVAL_SECONDS,
        *,
        wakeups_per_second: float = WAKEUPS_PER_SECOND,
        max_interval: float = MAX_READ_INTERVAL_SECONDS,
    ) -> None:
        self.interval = interval
        self.wakeups_per_second = wakeups_per_second
        self.max_interval = max(interval, max_interval)
        self._woken = 0  # streams the last tick woke
        self._waiters: list[asyncio.Future[None]] = []
        self._timer: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def next_interval(self) -> float:
        return min(self.max_interval, max(self.interval, self._woken / self.wakeups_per_second))

    async def wait(self) -> None:
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # a new loop (tests run several): the old one's tick is gone
            self._loop, self._timer, self._waiters, self._woken = loop, None, [], 0
        waiter = loop.create_future()
        self._waiters.append(waiter)
        if self._timer is None:
            self._timer = loop.call_later(self.next_interval(), self._tick)
        await waiter  # a cancelled waiter is only skipped by the tick

    def _tick(self) -> None:
        self._timer = None
        waiters, self._waiters = self._waiters, []
        self._woken = 0
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)
                self._woken += 1


async def completion_deltas(
    response: AsyncAPIResponse[Any], ticker: Ticker
) -> AsyncIterator[tuple[str, bool]]:
    """(text, finished) per read of the body: the content of the chunks that read completed,
    joined, and whether one of them carried a finish_reason. Ends at the body's end (read
    past `[DONE]`, so the connection goes back to the client's pool).

    After a read that brought text the reader waits for the ticker's next tick, so what
    arrives meanwhile comes in the next read: one piece of text per tick while tokens flow,
    the first at once, and none held back (a piece is handed on as soon as it is read).
    """
    events = _SSEData()
    done = False
    async for raw in response.iter_bytes():
        if done:
            continue
        text, finished, done, failure = _parsed(events.feed(raw), response)
        if text or finished:
            yield text, finished  # what came before a bad chunk goes out, as it would have
        if failure is not None:
            raise failure
        if text and not (finished or done) and len(raw) < BULK_READ_BYTES:
            await ticker.wait()


def _parsed(
    events: list[bytes], response: AsyncAPIResponse[Any]
) -> tuple[str, bool, bool, Exception | None]:
    """(text, finished, [DONE] seen, the error of a bad chunk) of the events of one read."""
    text: list[str] = []
    finished = False
    try:
        for data in events:
            if data == _DONE:
                return "".join(text), finished, True, None
            chunk = json.loads(data)
            if chunk.get("error"):
                raise _stream_error(chunk["error"], response)
            choices = chunk.get("choices")
            if not choices:
                continue  # e.g. the usage chunk
            choice = choices[0]
            finished = finished or choice.get("finish_reason") is not None
            piece = (choice.get("delta") or {}).get("content")
            if piece:
                text.append(piece)
    except Exception as err:  # ValueError, KeyError, TypeError, ...: the chunk is not one
        return "".join(text), finished, False, err
    return "".join(text), finished, False, None


class _SSEData:
    """The `data` of each complete Server-Sent Event, fed the body in pieces of any size."""

    def __init__(self) -> None:
        self._partial = b""  # a line not ended yet
        self._data: list[bytes] = []  # the event's data lines so far

    def feed(self, raw: bytes) -> list[bytes]:
        buffer = self._partial + raw
        # A CR at the very end may be the first half of a CR LF: its line waits for the next.
        ended = buffer[:-1] if buffer.endswith(b"\r") else buffer
        end = max(ended.rfind(b"\n"), ended.rfind(b"\r")) + 1
        self._partial = buffer[end:]
        complete: list[bytes] = []
        for line in buffer[:end].splitlines():
            if not line:
                if self._data:
                    complete.append(b"\n".join(self._data))
                    self._data = []
            elif line.startswith(b"data:"):
                value = line[5:]
                self._data.append(value[1:] if value.startswith(b" ") else value)
            # Other fields (event:, id:, retry:) and comments (":") carry nothing used here.
        return complete


def _stream_error(error: object, response: AsyncAPIResponse[Any]) -> openai.APIError:
    message = error.get("message") if isinstance(error, dict) else None
    if not isinstance(message, str) or not message:
        message = "An error occurred during streaming"
    return openai.APIError(message, response.http_request, body=error)
