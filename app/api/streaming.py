"""POST /recommend as Server-Sent Events: the products at once, the answer as it is written.

Events, in order (docs/http-api.md, "Streamed answers"):
- `products`: the /search response (products, filters_applied, nearest_matches, ...);
- `delta` ({"text": ...}), any number: pieces of the answer, in order, one event per piece
  the generator hands on. The LLM's generator hands on its text at most once per read
  interval (app/llm/completion_stream.py: the first text at once), so a stream costs per
  interval, not per token; the extractive answer comes a sentence per piece;
- `done`: the JSON response of /recommend, built by the same function, plus `text_replaced`.

Every answer ends with `done`: a failing LLM becomes a degraded extractive answer, as on
the JSON path. Errors found before the stream starts (422, 503) keep their status codes.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Literal

from prometheus_client import Counter, Histogram
from pydantic import BaseModel
from starlette.responses import StreamingResponse

from app.api.schemas import RecommendResponse, RecommendStreamDone, SearchResponse
from app.llm.types import AnswerPart, Recommendation

logger = logging.getLogger(__name__)

EVENT_STREAM = "text/event-stream"
StreamEnd = Literal["complete", "degraded", "replaced", "disconnected"]
STREAMS = Counter(
    "recommend_streams",
    "Streamed /recommend answers by how they ended (replaced: text went out, then the "
    "LLM failed and `done` carries the extractive answer; disconnected: the client left).",
    ["end"],
)
for _label in ("complete", "degraded", "replaced", "disconnected"):
    STREAMS.labels(end=_label)
FIRST_TEXT = Histogram(
    "recommend_stream_first_text_seconds",
    "From the `products` event to the answer's first text in a streamed /recommend.",
    buckets=(0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0),
)


def wants_event_stream(accept: str | None) -> bool:
    """True when the Accept header lists text/event-stream (and not with q=0)."""
    for media_range in (accept or "").split(","):
        media, *params = (p.strip() for p in media_range.split(";"))
        if media.lower() != EVENT_STREAM:
            continue
        for param in params:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    return float(value) > 0
                except ValueError:
                    return False
        return True
    return False


def event(name: str, data: BaseModel | dict[str, str]) -> bytes:
    # Compact JSON holds no newline, so one `data:` line carries the whole payload.
    payload = data.model_dump_json() if isinstance(data, BaseModel) else json.dumps(data)
    return f"event: {name}\ndata: {payload}\n\n".encode()


def event_stream(
    products: SearchResponse,
    notice: str,
    answer: AsyncGenerator[AnswerPart, None],
    finish: Callable[[Recommendation], RecommendResponse],
    fallback: Callable[[], Recommendation],
) -> StreamingResponse:
    """The streamed response.

    Args:
        products: the first event.
        notice: text the answer starts with (the price-bound notice), sent as a delta first.
        answer: the generator's stream of text pieces ending with its `Recommendation`.
        finish: the JSON path's response builder, applied to the final `Recommendation`.
        fallback: the answer to end with if `answer` fails (it is not meant to).
    """
    return StreamingResponse(
        _events(products, notice, answer, finish, fallback),
        media_type=EVENT_STREAM,
        # No caching, and no buffering by a proxy (nginx honours X-Accel-Buffering).
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


async def _events(
    products: SearchResponse,
    notice: str,
    answer: AsyncGenerator[AnswerPart, None],
    finish: Callable[[Recommendation], RecommendResponse],
    fallback: Callable[[], Recommendation],
) -> AsyncIterator[bytes]:
    started = time.perf_counter()
    streamed: list[str] = []
    final: Recommendation | None = None
    try:
        yield event("products", products)
        if notice:
            streamed.append(notice)
            yield event("delta", {"text": notice})
        try:
            async for part in answer:
                if isinstance(part, Recommendation):
                    final = part
                    continue
                if len(streamed) == bool(notice):
                    FIRST_TEXT.observe(time.perf_counter() - started)
                streamed.append(part)
                yield event("delta", {"text": part})
        except Exception:
            # Generators answer every failure themselves; should one slip through, the
            # stream still ends with a degraded answer rather than breaking off.
            logger.exception("streamed answer failed")
            final = None
        if final is None:
            final = fallback()
        done = finish(final)
        replaced = "".join(streamed) != done.message
        STREAMS.labels(end=_how_it_ended(done, replaced)).inc()
        yield event(
            "done",
            RecommendStreamDone.model_validate({**done.model_dump(), "text_replaced": replaced}),
        )
    except (asyncio.CancelledError, GeneratorExit):
        # The client left: Starlette cancels this; the answer's stream (and with it the
        # HTTP request to the LLM) is closed on the way out.
        STREAMS.labels(end="disconnected").inc()
        raise
    finally:
        # Left while the answer was suspended: closing it cancels its pending read (and
        # with it the HTTP request to the LLM).
        await answer.aclose()


def _how_it_ended(done: RecommendResponse, replaced: bool) -> StreamEnd:
    if replaced:
        return "replaced"
    return "degraded" if done.degraded else "complete"
