"""A local OpenAI-compatible server for tests: real HTTP on 127.0.0.1, programmable answers.

Only `POST /v1/chat/completions` is served. Each request takes the next queued behaviour
(the last one repeats), and every request body is recorded so tests can read the prompt.
A request with `"stream": true` gets its answer as OpenAI chunk events (SSE), at once or,
with `Trickle`, token by token at a set rate (optionally cut, or with a garbled event); a
stream whose reader leaves before its end is counted in `disconnects`.

    def test_x(openai_stub):
        openai_stub.respond(Fail(429), Answer("Try [id:1]."))   # 429, then an answer
        ... OpenAI(base_url=openai_stub.base_url, api_key="test") ...
        assert len(openai_stub.requests) == 2

Make the fixtures available everywhere with this line in conftest.py:

    from tests.openai_stub import openai_stub_fixture, openai_stub_server_fixture  # noqa: F401
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


@dataclass(frozen=True)
class Answer:
    """A normal completion with this text."""

    text: str


@dataclass(frozen=True)
class Echo:
    """A completion recommending the first product in the prompt's <products> block."""


@dataclass(frozen=True)
class Fail:
    """An error status with an OpenAI-style error body (and Retry-After if given)."""

    status: int
    retry_after: float | None = None


@dataclass(frozen=True)
class Slow:
    """Sleep, then behave like `then` (a client with a shorter timeout gives up first)."""

    seconds: float
    then: Answer | Echo | Fail = field(default_factory=Echo)


@dataclass(frozen=True)
class Trickle:
    """`then`'s answer at `tokens_per_second` (a whole-answer request waits as long).

    `cut_after`: a stream drops its connection after this many tokens, unfinished.
    `garbled_after`: a stream sends `garbage` as the data of one event after this many
    tokens, then goes on (a malformed chunk, or an error chunk such as a provider sends).
    """

    tokens_per_second: float
    then: Answer | Echo = field(default_factory=Echo)
    cut_after: int | None = None
    garbled_after: int | None = None
    garbage: str = "{not json"


@dataclass(frozen=True)
class Hang:
    """Never answer: hold the connection until the stub is given new behaviours (or stops)."""


Behaviour = Answer | Echo | Fail | Slow | Trickle | Hang

_PRODUCTS_BLOCK = re.compile(r"<products>(.*?)</products>", re.DOTALL)
# A "token": a word with the spaces before it, so the tokens join back into the text.
_TOKEN = re.compile(r"\s*\S+")


@dataclass(frozen=True)
class RecordedRequest:
    path: str
    headers: dict[str, str]  # names lower-cased
    body: dict[str, Any]

    def message(self, role: str) -> str:
        """Content of the first message with this role ("" when absent)."""
        for m in self.body.get("messages", []):
            if m.get("role") == role:
                return str(m.get("content", ""))
        return ""


class OpenAIStub:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._behaviours: list[Behaviour] = [Echo()]
        self.requests: list[RecordedRequest] = []
        # Streams whose reader closed the connection before the last token.
        self.disconnects = 0
        # time.monotonic() as each stream's first token was sent.
        self.first_tokens: list[float] = []
        # Set to release the handlers of hung requests; replaced by each `respond`.
        self._release = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(self))
        self._server.daemon_threads = True  # a Slow handler must not hold up shutdown
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def start(self) -> OpenAIStub:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._release.set()
        self._server.shutdown()
        self._server.server_close()

    def respond(self, *behaviours: Behaviour) -> None:
        """Queue behaviours for the next requests; the last one repeats. Clears the record."""
        with self._lock:
            self._behaviours = list(behaviours) or [Echo()]
            self.requests = []
            self.disconnects = 0
            self.first_tokens = []
            self._release.set()
            self._release = threading.Event()

    def _disconnected(self) -> None:
        with self._lock:
            self.disconnects += 1

    def _next(self, request: RecordedRequest) -> tuple[Behaviour, threading.Event]:
        with self._lock:
            self.requests.append(request)
            if len(self._behaviours) > 1:
                return self._behaviours.pop(0), self._release
            return self._behaviours[0], self._release


def _make_handler(stub: OpenAIStub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body go out in two writes; with Nagle on, each answer waits ~40 ms
        # for a delayed ACK.
        disable_nagle_algorithm = True

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", 0))
            body = json.loads(self.rfile.read(length) or b"{}")
            if self.path.rstrip("/") != "/v1/chat/completions":
                self._send(404, _error("not found", "invalid_request_error"))
                return
            headers = {k.lower(): v for k, v in self.headers.items()}
            request = RecordedRequest(self.path, headers, body)
            behaviour, release = stub._next(request)
            if isinstance(behaviour, Hang):
                release.wait()
                self.close_connection = True  # leave without an answer
                return
            self._behave(behaviour, request)

        def _behave(
            self, behaviour: Answer | Echo | Fail | Slow | Trickle, request: RecordedRequest
        ) -> None:
            if isinstance(behaviour, Slow):
                time.sleep(behaviour.seconds)
                behaviour = behaviour.then
            trickle = behaviour if isinstance(behaviour, Trickle) else None
            if trickle is not None:
                behaviour = trickle.then
            if isinstance(behaviour, Fail):
                headers = {}
                if behaviour.retry_after is not None:
                    headers["retry-after"] = str(behaviour.retry_after)
                kind = "rate_limit_exceeded" if behaviour.status == 429 else "server_error"
                self._send(behaviour.status, _error(f"stub {behaviour.status}", kind), headers)
                return
            text = behaviour.text if isinstance(behaviour, Answer) else _echo(request)
            model = str(request.body.get("model", "stub"))
            if request.body.get("stream"):
                self._stream(model, text, trickle)
                return
            if trickle is not None:
                time.sleep(len(_TOKEN.findall(text)) / trickle.tokens_per_second)
            self._send(200, _completion(model, text))

        def _stream(self, model: str, text: str, trickle: Trickle | None) -> None:
            """OpenAI's chunk events, one token each, then `[DONE]`, in a chunked body: a
            cut connection is then seen as one by the client, not as the end."""
            tokens = _TOKEN.findall(text)
            cut = trickle.cut_after if trickle is not None else None
            pause = 1 / trickle.tokens_per_second if trickle is not None else 0.0
            self.close_connection = True
            try:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                self._event(_chunk(model, {"role": "assistant", "content": ""}))
                for i, token in enumerate(tokens):
                    if cut is not None and i == cut:
                        return  # dropped mid-answer
                    if trickle is not None and i == trickle.garbled_after:
                        self._write(f"data: {trickle.garbage}\n\n".encode())
                    time.sleep(pause)
                    if i == 0:
                        stub.first_tokens.append(time.monotonic())
                    self._event(_chunk(model, {"content": token}))
                time.sleep(pause)
                self._event(_chunk(model, {}, finish="stop"))
                self._write(b"data: [DONE]\n\n")
                self.wfile.write(b"0\r\n\r\n")
            except (BrokenPipeError, ConnectionResetError):
                stub._disconnected()

        def _event(self, payload: dict[str, Any]) -> None:
            self._write(f"data: {json.dumps(payload)}\n\n".encode())

        def _write(self, data: bytes) -> None:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")

        def _send(
            self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None
        ) -> None:
            data = json.dumps(payload).encode()
            try:
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client timed out and left; that is the point of Slow

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep pytest output clean

    return Handler


def _echo(request: RecordedRequest) -> str:
    match = _PRODUCTS_BLOCK.search(request.message("user"))
    products = json.loads(match.group(1)) if match else []
    if not products:
        return "Nothing here fits your request."
    first = products[0]
    return f"I recommend {first['name']} [id:{first['id']}]."


def _completion(model: str, text: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    }


def _chunk(model: str, delta: dict[str, str], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _error(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": kind}}


# Registered under the short names; the function names differ so that importing them
# (into conftest.py or a test module) does not trip ruff's redefinition check (F811).
@pytest.fixture(scope="session", name="openai_stub_server")
def openai_stub_server_fixture() -> Iterator[OpenAIStub]:
    stub = OpenAIStub().start()
    yield stub
    stub.stop()


@pytest.fixture(name="openai_stub")
def openai_stub_fixture(openai_stub_server: OpenAIStub) -> OpenAIStub:
    """The shared stub, reset to echo answers with an empty request record."""
    openai_stub_server.respond(Echo())
    return openai_stub_server
