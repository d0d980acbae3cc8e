"""`python -m app.eval --http`: the judged queries asked of the real service, over HTTP.

app.eval.recommend follows the route's steps in this process; this asks the route itself.
The eval's index is sealed with a checkpoint the way the syncer leaves one
(app.eval.index.seal_chunk_index), then
`python -m app.api.serve` serves it as a read replica (SYNC_MODE=off, no LLM key: the
extractive answer, no impressions recorded) and every judged query goes to
`POST /recommend` from two clients. What each answer shows (its top k, the cut on) is
scored, and compared with the in-process answer to the same query: the same products in
the same order and the same notices. The eval embeds queries with the service's own
query encoder (`query_encoder_for`) and the fusion orders equal scores by product id, so
every answer should be equal: one that is not is where app.eval.recommend and the route
part (BENCHMARKS.md, "What shoppers get, asked over HTTP").
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from app.core.config import ROOT
from app.core.ports import free_port
from app.eval.data import EvalQuery
from app.eval.ndcg import condensed_ndcg_at_k
from app.eval.recommend import Answer

# The service loads its encoders before it listens: minutes on a cold machine.
START_SECONDS = 600.0
CLIENTS = 2  # the eval's own query threads (app.eval.parallel): the two cores
# Differing answers printed under the count (the first ones, in query order).
SHOWN_DIFFERENCES = 10


@contextmanager
def served(index: str, learned_model: str) -> Iterator[str]:
    """The service on the index in the folder `index`, as a process of its own; yields its
    URL once /ready is 200.

    Raises:
        RuntimeError: it exited or was not ready within START_SECONDS (its log's tail).
    """
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="eval-service-") as data:
        log = Path(data) / "service.log"
        env = {
            **os.environ,
            "DATA_DIR": data,
            "QDRANT_PATH": index,
            "QDRANT_URL": "",
            "SYNC_MODE": "off",
            "LEARNED_MODEL": learned_model,
            "OPENAI_API_KEY": "",
            "RECORD_IMPRESSIONS": "false",
            "WEB_CONCURRENCY": "1",
        }
        command = [sys.executable, "-m", "app.api.serve", "--host", "127.0.0.1"]
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [*command, "--port", str(port)], cwd=ROOT, env=env, stdout=out, stderr=out
            )
        url = f"http://127.0.0.1:{port}"
        try:
            _wait_ready(url, proc, log)
            yield url
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(30)


def _wait_ready(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_SECONDS
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"the service exited ({proc.returncode}): {_tail(log)}")
        try:
            if httpx.get(url + "/ready", timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            pass  # not listening yet
        if time.monotonic() > deadline:
            raise RuntimeError(f"the service was not ready in {START_SECONDS:.0f}s: {_tail(log)}")
        time.sleep(0.5)


def _tail(log: Path) -> str:
    return log.read_text(encoding="utf-8", errors="replace")[-3000:]


@dataclass(frozen=True, slots=True)
class Asked:
    """One query's HTTP answer: `answer` when it was a 200, else `error`."""

    answer: Answer | None
    error: str | None = None


def ask_all(url: str, queries: Sequence[EvalQuery], k: int) -> list[Asked]:
    """`POST /recommend` for every query, from CLIENTS keep-alive clients, in query order."""
    local = threading.local()
    clients: list[httpx.Client] = []
    lock = threading.Lock()

    def ask(query: EvalQuery) -> Asked:
        client = getattr(local, "client", None)
        if client is None:
            client = local.client = httpx.Client(base_url=url, timeout=60)
            with lock:
                clients.append(client)
        try:
            r = client.post("/recommend", json={"query": query.query, "top_k": k})
        except httpx.HTTPError as e:  # counted, as a 5xx is: the run goes on
            return Asked(None, f"{type(e).__name__}: {e}")
        if r.status_code != 200:
            return Asked(None, f"{r.status_code} {r.text[:200]}")
        body = r.json()
        ids = tuple(int(p["id"]) for p in body["products"])
        return Asked(Answer(ids, body["not_carried"], bool(body["no_close_match"])))

    try:
        with ThreadPoolExecutor(CLIENTS, thread_name_prefix="eval-http") as pool:
            return list(pool.map(ask, queries))
    finally:
        for c in clients:
            c.close()


@dataclass
class HttpReport:
    k: int
    asked: int = 0
    errors: list[tuple[str, str]] = field(default_factory=list)  # (query, status and body)
    shown_http: dict[str, float] = field(default_factory=dict)  # qid -> nDCG@k as shown
    same: int = 0
    differing: list[tuple[str, Answer, Answer]] = field(default_factory=list)
    seconds: float = 0.0


def compare(
    queries: Sequence[EvalQuery],
    asked: Sequence[Asked],
    in_process: Mapping[str, Answer],
    qrels: Mapping[str, Mapping[int, float]],
    k: int,
) -> HttpReport:
    """Score what each HTTP answer shows, and count the answers equal to the in-process ones."""
    report = HttpReport(k=k, asked=len(queries))
    for q, got in zip(queries, asked, strict=True):
        if got.answer is None:
            report.errors.append((q.query, got.error or ""))
            continue
        report.shown_http[q.qid] = condensed_ndcg_at_k(list(got.answer.ids), qrels[q.qid], k)
        mine = in_process[q.qid]
        if got.answer == mine:
            report.same += 1
        else:
            report.differing.append((q.query, mine, got.answer))
    return report


def print_http(report: HttpReport) -> None:
    answered = len(report.shown_http)
    mean = sum(report.shown_http.values()) / answered if answered else 0.0
    print(
        f"over HTTP: {answered} of {report.asked} answered 200 "
        f"({len(report.errors)} errors) in {report.seconds:.1f}s"
    )
    print(f"condensed nDCG@{report.k} shown (cut on) over HTTP {mean:.4f}")
    print(f"answers the same over HTTP as in process: {report.same} of {answered}")
    for query, error in report.errors[:SHOWN_DIFFERENCES]:
        print(f"  error {query!r}: {error}")
    for query, mine, theirs in report.differing[:SHOWN_DIFFERENCES]:
        print(f"  {query!r}: in process {_brief(mine)}; over HTTP {_brief(theirs)}")


def _brief(answer: Answer) -> str:
    notices = []
    if answer.not_carried:
        notices.append(f"nothing called {answer.not_carried!r}")
    if answer.no_close_match:
        notices.append("nothing close")
    return str(list(answer.ids)) + (f" ({', '.join(notices)})" if notices else "")
