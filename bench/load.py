"""Open-loop load on `POST /recommend` with an OpenAI-compatible stand-in LLM.

Everything runs on loopback, each part in its own process so the service's CPU and RSS
are its own: the real service (uvicorn, `SYNC_MODE=off`) over the demo catalog in an
embedded qdrant-edge shard (written by the sync's own applier, no JVM), a stand-in LLM
(bench/rawhttp.py, `/v1/chat/completions`) that answers after a set delay, hangs or fails, and this
client. Requests go out at a fixed arrival rate whatever the latency (open loop), and
latency is measured from the moment each request was *due*, so a client falling behind
is counted against the service, not hidden.

Each phase prints throughput, p50/p95/p99, errors, how answers were made (LLM, or
extractive and why), `/health` p95 under the load, the service's RSS at the start and
end and its CPU seconds per request. Ratios against the same run's baselines: p99 ÷ the
LLM's own delay, CPU per request ÷ the offline phase's (extractive, no LLM configured).

    flock /tmp/bench.lock .venv/bin/python bench/load.py      # 5 min phases (+1 min hung)
    .venv/bin/python bench/load.py --duration 20 --phases offline:50,answer:50,hang:50:30

`--streams N` measures streamed answers instead (`Accept: text/event-stream`): N clients
each asking again as soon as an answer ends (closed loop), the stand-in LLM streaming its
answer at `--token-rate` tokens/s for `--answer-seconds`; first the JSON path under the
same LLM, then the stream. It prints errors, time to the first event and to the first
text, the service's RSS before, at the peak during and after each, and its CPU.

    flock /tmp/bench.lock .venv/bin/python bench/load.py --streams 50 --duration 60
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.eval.data import DEFAULT_QUERIES, load_queries  # noqa: E402
from bench.rawhttp import Pool, serve  # noqa: E402

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


# --- the stand-in LLM (its own process: `bench/load.py serve-llm`) -----------------------------
def serve_llm(port: int, delay: float, mode: str) -> None:
    """answer: after `delay` s, a grounded answer naming the first product; hang; fail: 500;
    stream: the answer of `stream_tokens` tokens at `token_rate` a second, streamed when the
    request asks for it (else whole, once that time has passed).

    On bench.rawhttp rather than uvicorn: it shares the 2 cores with the service being
    measured, so it must cost as little per call as the load client does.
    """
    state: dict[str, str | float] = {
        "mode": mode,
        "delay": delay,
        "token_rate": 50.0,
        "stream_tokens": 150,
    }

    async def handle(
        method: str, path: str, raw: bytes
    ) -> tuple[int, bytes | AsyncIterator[bytes]]:
        body = json.loads(raw or b"{}")
        if path == "/mode":
            state.update(body)
            return 200, json.dumps(state).encode()
        if path != "/v1/chat/completions":
            return 404, b'{"error": {"message": "not found"}}'
        if state["mode"] == "hang":
            await asyncio.sleep(3600)
        if state["mode"] == "fail":
            return 500, b'{"error": {"message": "stand-in failure"}}'
        user = str(body["messages"][-1]["content"])
        block = user.split("<products>", 1)[1].split("</products>", 1)[0]
        products = json.loads(block)
        text = f"I recommend {products[0]['name']} [id:{products[0]['id']}]." if products else "-"
        if state["mode"] == "stream":
            tokens = stream_tokens(text, int(state["stream_tokens"]))
            pause = 1 / float(state["token_rate"])
            if body.get("stream"):
                return 200, stream_chunks(tokens, pause, str(body.get("model", "standin")))
            await asyncio.sleep(pause * len(tokens))
            text = "".join(tokens)
        else:
            await asyncio.sleep(float(state["delay"]))
        answer = {
            "id": "chatcmpl-standin",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "standin"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        }
        return 200, json.dumps(answer).encode()

    asyncio.run(serve(handle, "127.0.0.1", port))


# Grounded filler (it names no product) that makes a cited answer as long as asked.
FILLER = " It is a sound choice for everyday use and good value for the price."


def stream_tokens(text: str, count: int) -> list[str]:
    words = (text + FILLER * (count // 12 + 1)).split(" ")[:count]
    return [words[0], *(" " + w for w in words[1:])]


async def stream_chunks(tokens: list[str], pause: float, model: str) -> AsyncIterator[bytes]:
    """OpenAI's chunk events, a token every `pause` seconds, then `[DONE]`."""

    def event(delta: dict[str, str], finish: str | None = None) -> bytes:
        chunk = {
            "id": "chatcmpl-standin",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        return f"data: {json.dumps(chunk)}\n\n".encode()

    yield event({"role": "assistant", "content": ""})
    for token in tokens:
        await asyncio.sleep(pause)
        yield event({"content": token})
    yield event({}, "stop")
    yield b"data: [DONE]\n\n"


# --- processes ------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_http(url: str, proc: subprocess.Popen[bytes], seconds: float = 180) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            httpx.get(url, timeout=2)
            return
        except httpx.HTTPError:
            pass
        if proc.poll() is not None:
            raise SystemExit(f"{url}: process exited during startup")
        time.sleep(0.5)
    raise SystemExit(f"{url}: not up in {seconds:.0f} s")


def build_shard(path: Path) -> int:
    from app.core.config import Settings
    from app.embedding import load_embedder
    from tests.demo_index import build_demo_shard

    settings = Settings(sync_lock_dir=str(path.parent))
    return build_demo_shard(path, load_embedder(), settings)


def start_service(
    shard: Path, port: int, llm_url: str | None, extra_env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "SYNC_MODE": "off",
        "QDRANT_PATH": str(shard),
        "HUDI_TABLE_PATH": str(shard.parent / "no-table"),
        "SYNC_LOCK_DIR": str(shard.parent),
        "EVENTS_DIR": str(shard.parent / "events"),  # not the checkout's data/
        "OPENAI_API_KEY": "bench" if llm_url else "",
        "OPENAI_BASE_URL": llm_url or "",
        "LOG_LEVEL": "WARNING",
        "HF_HUB_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        **(extra_env or {}),
    }
    env.pop("QDRANT_URL", None)
    cmd = [sys.executable, "-m", "uvicorn", "app.main:app", "--host", "127.0.0.1"]
    proc = subprocess.Popen(
        [*cmd, "--port", str(port), "--log-level", "warning", "--backlog", "4096"],
        cwd=ROOT,
        env=env,
    )
    wait_http(f"http://127.0.0.1:{port}/health", proc)
    return proc


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime + stime


def rss_mib(pid: int) -> float:
    return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE / 2**20


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


# --- load -----------------------------------------------------------------------------------
@dataclass
class PhaseResult:
    name: str
    rate: float
    seconds: float
    latencies: list[float] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)
    answers: Counter[str] = field(default_factory=Counter)
    health: list[float] = field(default_factory=list)
    cpu: float = 0.0
    client_cpu: float = 0.0
    llm_cpu: float = 0.0
    connections: int = 0
    rss_start: float = 0.0
    rss_end: float = 0.0

    @property
    def requests(self) -> int:
        return len(self.latencies) + sum(self.errors.values())

    def cpu_per_request(self) -> float:
        return self.cpu / max(self.requests, 1)


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def drive(
    url: str, queries: list[str], rate: float, seconds: float, result: PhaseResult | None
) -> None:
    """`rate` requests a second for `seconds`, each sent when due; result None: warm-up."""
    host, port = url.removeprefix("http://").split(":")
    pool = Pool(host, int(port))
    bodies = [json.dumps({"query": q}).encode() for q in queries]

    async def one(due: float, body: bytes) -> None:
        try:
            status, raw = await pool.request("POST", "/recommend", body)
            elapsed = time.perf_counter() - due
            if status != 200:
                kind = f"http {status}"
            else:
                answer = json.loads(raw)
                kind = ""
                how = answer["generator"]
                if answer["degraded"]:
                    how += f" ({answer.get('degraded_reason')})"
        except (OSError, TimeoutError, asyncio.IncompleteReadError, ValueError) as e:
            elapsed, kind = time.perf_counter() - due, type(e).__name__
        if result is None:
            return
        if kind:
            result.errors[kind] += 1
        else:
            result.latencies.append(elapsed)
            result.answers[how] += 1

    async def probe_health(stop_at: float) -> None:
        while time.perf_counter() < stop_at:
            started = time.perf_counter()
            try:
                await pool.request("GET", "/health")
                if result is not None:
                    result.health.append(time.perf_counter() - started)
            except (OSError, TimeoutError, asyncio.IncompleteReadError, ValueError):
                if result is not None:
                    result.errors["health"] += 1
            await asyncio.sleep(0.5)

    start = time.perf_counter()
    total = int(rate * seconds)
    tasks = [asyncio.create_task(probe_health(start + seconds))]
    for i in range(total):
        due = start + i / rate
        delay = due - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(one(due, bodies[i % len(bodies)])))
    await asyncio.gather(*tasks)
    await pool.close()
    if result is not None:
        result.connections = pool.opened


def run_phase(
    phase: Phase, url: str, pid: int, llm_pid: int, queries: list[str], warmup: float
) -> PhaseResult:
    rate, seconds = phase.rate, phase.seconds
    print(f"[load] {phase.name}: {rate:g} req/s for {seconds:g} s (+{warmup:g} s warm-up)")
    eta = time.localtime(time.time() + seconds + warmup + 5)
    print(f"[load]   ETA {time.strftime('%H:%M:%S', eta)}", flush=True)
    if warmup:
        asyncio.run(drive(url, queries, rate, warmup, None))
    result = PhaseResult(phase.name, rate, seconds)
    result.rss_start, cpu_start = rss_mib(pid), cpu_seconds(pid)
    client_start, llm_start = time.process_time(), cpu_seconds(llm_pid)
    started = time.perf_counter()
    asyncio.run(drive(url, queries, rate, seconds, result))
    result.seconds = time.perf_counter() - started
    result.cpu, result.rss_end = cpu_seconds(pid) - cpu_start, rss_mib(pid)
    result.client_cpu = time.process_time() - client_start
    result.llm_cpu = cpu_seconds(llm_pid) - llm_start
    return result


def report(r: PhaseResult, llm_delay: float | None, offline_cpu: float | None) -> None:
    lat = r.latencies
    print(f"== {r.name}: {r.rate:g} req/s offered, {r.seconds:.0f} s")
    print(
        f"   requests {r.requests}, ok {len(lat)}, errors {sum(r.errors.values())} {dict(r.errors)}"
    )
    print(f"   throughput {len(lat) / r.seconds:.1f} req/s")
    p50, p95, p99 = pct(lat, 0.5), pct(lat, 0.95), pct(lat, 0.99)
    print(f"   latency p50 {p50 * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms")
    if llm_delay:
        print(f"   p99 / LLM delay {p99 / llm_delay:.2f}")
    total = sum(r.answers.values()) or 1
    shares = ", ".join(f"{k} {v} ({v / total:.0%})" for k, v in r.answers.most_common())
    print(f"   answers: {shares}")
    print(f"   /health p95 {pct(r.health, 0.95) * 1000:.1f} ms ({len(r.health)} probes)")
    growth = (r.rss_end - r.rss_start) / r.rss_start
    print(f"   RSS {r.rss_start:.0f} -> {r.rss_end:.0f} MiB ({growth:+.1%})")
    line = f"   CPU {r.cpu:.1f} s, {r.cpu_per_request() * 1000:.2f} ms/request"
    if offline_cpu:
        line += f" ({r.cpu_per_request() / offline_cpu:.2f}x offline)"
    print(line)
    # The client and the stand-in share the cores with the service: their cost is shown
    # so that a run where they, not the service, ran out of CPU is visible as such.
    n = max(r.requests, 1)
    print(
        f"   load client CPU {r.client_cpu * 1000 / n:.2f} ms/request ({r.connections} "
        f"connections), stand-in LLM CPU {r.llm_cpu:.1f} s",
        flush=True,
    )


@dataclass(frozen=True)
class Phase:
    kind: str  # offline (no LLM configured), or the stand-in's mode: answer, hang, fail
    rate: float
    seconds: float

    @property
    def name(self) -> str:
        return self.kind if self.kind == "offline" else f"LLM {self.kind}"


def parse_phases(spec: str, default_seconds: float) -> list[Phase]:
    phases = []
    for item in spec.split(","):
        kind, rate, *seconds = item.split(":")
        if kind not in ("offline", "answer", "hang", "fail"):
            raise SystemExit(f"unknown phase kind {kind!r}")
        phases.append(Phase(kind, float(rate), float(seconds[0]) if seconds else default_seconds))
    return phases


def offline_cpu(results: list[PhaseResult]) -> float | None:
    """CPU per request of the first offline phase so far: the baseline of the ratios."""
    return next((r.cpu_per_request() for r in results if r.name == "offline"), None)


# --- streamed answers (--streams) ----------------------------------------------------------
@dataclass
class StreamPhase:
    name: str
    seconds: float = 0.0
    first_event: list[float] = field(default_factory=list)  # JSON: the whole answer
    first_text: list[float] = field(default_factory=list)
    total: list[float] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)
    answers: Counter[str] = field(default_factory=Counter)
    rss_before: float = 0.0
    rss_peak: float = 0.0
    rss_after: float = 0.0
    cpu: float = 0.0
    client_cpu: float = 0.0


def answer_kind(answer: dict[str, object]) -> str:
    kind = str(answer["generator"])
    if answer["degraded"]:
        kind += f" ({answer.get('degraded_reason')})"
    return kind + (", replaced" if answer.get("text_replaced") else "")


async def ask_streamed(client: httpx.AsyncClient, body: dict[str, str], r: StreamPhase) -> None:
    started = time.perf_counter()
    headers = {"Accept": "text/event-stream"}
    async with client.stream("POST", "/recommend", json=body, headers=headers) as response:
        if response.status_code != 200:
            r.errors[f"http {response.status_code}"] += 1
            return
        name, first, first_text, done = "", 0.0, 0.0, None
        async for line in response.aiter_lines():
            if line.startswith("event: "):
                name = line.removeprefix("event: ")
                first = first or time.perf_counter() - started
                if name == "delta" and not first_text:
                    first_text = time.perf_counter() - started
            elif line.startswith("data: ") and name == "done":
                done = json.loads(line.removeprefix("data: "))
    if done is None:
        r.errors["stream ended without done"] += 1
        return
    r.first_event.append(first)
    r.first_text.append(first_text)
    r.total.append(time.perf_counter() - started)
    r.answers[answer_kind(done)] += 1


async def ask_json(client: httpx.AsyncClient, body: dict[str, str], r: StreamPhase) -> None:
    started = time.perf_counter()
    response = await client.post("/recommend", json=body)
    if response.status_code != 200:
        r.errors[f"http {response.status_code}"] += 1
        return
    elapsed = time.perf_counter() - started
    r.first_event.append(elapsed)
    r.total.append(elapsed)
    r.answers[answer_kind(response.json())] += 1


async def closed_loop(
    url: str,
    queries: list[str],
    clients: int,
    seconds: float,
    streamed: bool,
    r: StreamPhase,
    pid: int,
) -> None:
    """`clients` clients, each asking again as its answer ends, until `seconds` are up."""
    limits = httpx.Limits(max_connections=clients + 4, max_keepalive_connections=clients + 4)
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as client:
        stop_at = time.perf_counter() + seconds

        async def one_client(i: int) -> None:
            while time.perf_counter() < stop_at:
                body = {"query": queries[i % len(queries)]}
                i += clients
                try:
                    await (ask_streamed if streamed else ask_json)(client, body, r)
                except (httpx.HTTPError, ValueError, KeyError) as e:
                    r.errors[type(e).__name__] += 1

        async def sample_rss() -> None:
            while time.perf_counter() < stop_at:
                r.rss_peak = max(r.rss_peak, rss_mib(pid))
                await asyncio.sleep(0.5)

        await asyncio.gather(*(one_client(i) for i in range(clients)), sample_rss())


def run_stream_phase(
    name: str, url: str, pid: int, queries: list[str], clients: int, seconds: float, streamed: bool
) -> StreamPhase:
    print(f"[load] {name}: {clients} clients for {seconds:g} s", flush=True)
    r = StreamPhase(name)
    r.rss_before, cpu_start, client_start = rss_mib(pid), cpu_seconds(pid), time.process_time()
    started = time.perf_counter()
    asyncio.run(closed_loop(url, queries, clients, seconds, streamed, r, pid))
    r.seconds = time.perf_counter() - started
    r.cpu, r.client_cpu = cpu_seconds(pid) - cpu_start, time.process_time() - client_start
    time.sleep(3)  # the answers still in flight end; then "after"
    r.rss_after = rss_mib(pid)
    return r


def p50_p95(values: list[float]) -> str:
    return f"p50 {pct(values, 0.5) * 1000:.0f} ms, p95 {pct(values, 0.95) * 1000:.0f} ms"


def report_streams(r: StreamPhase, json_p50: float | None) -> None:
    n = len(r.total)
    print(f"== {r.name}: {r.seconds:.0f} s")
    print(f"   answers {n}, errors {sum(r.errors.values())} {dict(r.errors)}")
    print(f"   first event {p50_p95(r.first_event)}")
    if r.first_text:
        print(f"   first text {p50_p95(r.first_text)}")
    line = f"   whole answer {p50_p95(r.total)}"
    if json_p50:
        line += f" (first event p50 ÷ JSON answer p50: {pct(r.first_event, 0.5) / json_p50:.3f})"
    print(line)
    shares = ", ".join(f"{k} {v} ({v / max(n, 1):.0%})" for k, v in r.answers.most_common())
    print(f"   answers: {shares}")
    print(f"   RSS before {r.rss_before:.0f}, peak {r.rss_peak:.0f}, after {r.rss_after:.0f} MiB")
    print(
        f"   CPU {r.cpu:.1f} s, {r.cpu / max(n, 1) * 1000:.1f} ms/answer; load client CPU "
        f"{r.client_cpu:.1f} s",
        flush=True,
    )


def run_streams(args: argparse.Namespace, shard: Path, queries: list[str]) -> None:
    llm_port, port = free_port(), free_port()
    llm = subprocess.Popen([sys.executable, __file__, "serve-llm", str(llm_port), "0", "stream"])
    tokens = int(args.token_rate * args.answer_seconds)
    service: subprocess.Popen[bytes] | None = None
    try:
        wait_http(f"http://127.0.0.1:{llm_port}/mode", llm)
        httpx.post(
            f"http://127.0.0.1:{llm_port}/mode",
            json={"mode": "stream", "token_rate": args.token_rate, "stream_tokens": tokens},
        )
        # Room for every client's call: the figures are of streams, not of the cap.
        extra = {"LLM_MAX_IN_FLIGHT": str(max(32, 2 * args.streams))}
        service = start_service(shard, port, f"http://127.0.0.1:{llm_port}/v1", extra)
        url = f"http://127.0.0.1:{port}"
        print(f"[load] LLM: {tokens} tokens at {args.token_rate:g}/s; uptime: {uptime()}")
        run_stream_phase("warm-up", url, service.pid, queries, 4, args.warmup, True)
        json_phase = run_stream_phase(
            "JSON", url, service.pid, queries, args.streams, args.duration, False
        )
        report_streams(json_phase, None)
        streamed = run_stream_phase(
            "stream", url, service.pid, queries, args.streams, args.duration, True
        )
        report_streams(streamed, pct(json_phase.total, 0.5))
        per_answer = [p.cpu / max(len(p.total), 1) for p in (streamed, json_phase)]
        print(f"[load] stream CPU per answer ÷ JSON: {per_answer[0] / per_answer[1]:.2f}")
        print(f"[load] uptime: {uptime()}")
    finally:
        if service is not None:
            stop(service)
        stop(llm)


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "serve-llm":
        serve_llm(int(sys.argv[2]), float(sys.argv[3]), sys.argv[4])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--phases",
        default="offline:100,answer:50,answer:100,hang:50:60",
        help="comma-separated KIND:RATE[:SECONDS], run in order; KIND is offline (no LLM "
        "configured) or the stand-in LLM's mode: answer (after --llm-delay), hang, fail",
    )
    parser.add_argument("--duration", type=float, default=300, help="default seconds per phase")
    parser.add_argument("--warmup", type=float, default=10, help="seconds before each phase")
    parser.add_argument("--llm-delay", type=float, default=2.0)
    parser.add_argument("--shard", type=Path, help="demo shard folder (built there if missing)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--streams", type=int, help="measure streamed answers with this many clients instead"
    )
    parser.add_argument("--token-rate", type=float, default=50.0, help="--streams: tokens/s")
    parser.add_argument(
        "--answer-seconds", type=float, default=3.0, help="--streams: answer length"
    )
    args = parser.parse_args()

    phases = parse_phases(args.phases, args.duration)
    queries = [q.query for q in load_queries(DEFAULT_QUERIES)]
    random.Random(args.seed).shuffle(queries)
    shard = args.shard or Path(tempfile.mkdtemp(prefix="bench-load-")) / "qdrant"
    if not shard.exists():
        started = time.perf_counter()
        points = build_shard(shard)
        print(f"[load] demo shard: {points} chunks in {time.perf_counter() - started:.0f} s")
    if args.streams:
        run_streams(args, shard, queries)
        return

    llm_port = free_port()
    llm = subprocess.Popen(
        [sys.executable, __file__, "serve-llm", str(llm_port), str(args.llm_delay), "answer"]
    )
    llm_url = f"http://127.0.0.1:{llm_port}/v1"
    results: list[PhaseResult] = []
    service: subprocess.Popen[bytes] | None = None
    offline_service = False
    try:
        wait_http(f"http://127.0.0.1:{llm_port}/mode", llm)
        for phase in phases:
            offline = phase.kind == "offline"
            if service is None or offline != offline_service:
                if service is not None:
                    stop(service)
                port = free_port()
                service = start_service(shard, port, None if offline else llm_url)
                offline_service = offline
            if not offline:
                httpx.post(f"http://127.0.0.1:{llm_port}/mode", json={"mode": phase.kind})
            url = f"http://127.0.0.1:{port}"
            result = run_phase(phase, url, service.pid, llm.pid, queries, args.warmup)
            results.append(result)
            # Reported as each phase ends: a long run is readable while it goes on.
            report(result, args.llm_delay if phase.kind == "answer" else None, offline_cpu(results))
    finally:
        if service is not None:
            stop(service)
        stop(llm)


if __name__ == "__main__":
    main()
