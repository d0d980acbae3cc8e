"""What recording shoppers' events costs: /recommend with impressions ÷ without, and
POST /events throughput per API process with its p99.

    python -m bench.events [--requests 300] [--events-seconds 30] [--clients 8] [--shard DIR]

Two API processes on one demo shard copy each (SYNC_MODE=off, no LLM key: the extractive
answer), one with RECORD_IMPRESSIONS=true and one with false, both up for the whole run;
one-client /recommend phases alternate between them (A B A B ...) so load drifts on the
shared box hit both alike; the ratio is of the p50s over all phases. Then `--clients`
closed-loop clients post one-event requests (a click on a recommendation) to the
recording process: accepted events/s and the p99 of a 202 (each one fsynced, group-
committed). Progress and an ETA on stderr.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.core.ports import free_port
from app.eval.data import DEFAULT_QUERIES, load_queries
from bench.load import build_shard, start_service, stop
from bench.service_process import drive


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=300, help="/recommend per process")
    parser.add_argument("--rounds", type=int, default=6, help="alternations of the two")
    parser.add_argument("--events-seconds", type=float, default=30)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--shard", type=Path, help="demo shard folder (built there if missing)")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="bench-events-"))
    shard = args.shard or work / "qdrant"
    if not shard.exists():
        print(f"[events] building the demo shard in {shard}", file=sys.stderr)
        build_shard(shard)
    queries = [{"query": q.query} for q in load_queries(DEFAULT_QUERIES)]
    random.Random(7).shuffle(queries)
    procs, urls = {}, {}
    try:
        for mode in ("on", "off"):
            copy = work / f"shard-{mode}"
            shutil.copytree(shard, copy)
            port = free_port()
            procs[mode] = start_service(
                copy,
                port,
                None,
                {
                    "RECORD_IMPRESSIONS": "true" if mode == "on" else "false",
                    "EVENTS_DIR": str(work / f"events-{mode}"),
                    "DATA_DIR": str(work / f"data-{mode}"),
                    "MODEL_CACHE_DIR": os.environ.get("MODEL_CACHE_DIR", "")
                    or str(Path(__file__).resolve().parents[1] / "data" / "models"),
                },
            )
            urls[mode] = f"http://127.0.0.1:{port}"
        for url in urls.values():  # warm: the first queries load the ONNX sessions
            drive(url, "/recommend", queries[:20], 1, 20)
        latencies: dict[str, list[float]] = {"on": [], "off": []}
        per_round = max(1, args.requests // args.rounds)
        for r in range(args.rounds):
            for mode in ("on", "off") if r % 2 == 0 else ("off", "on"):
                phase = drive(urls[mode], "/recommend", queries, 1, per_round)
                latencies[mode] += phase.latencies
            print(
                f"[events] round {r + 1}/{args.rounds}, load {os.getloadavg()[0]:.1f}",
                file=sys.stderr,
            )
        p50 = {m: statistics.median(v) * 1000 for m, v in latencies.items()}
        print(f"recommend p50 with impressions {p50['on']:.2f} ms, without {p50['off']:.2f} ms")
        print(f"recommend p50 ratio (with ÷ without) {p50['on'] / p50['off']:.3f}")

        rid = httpx.post(urls["on"] + "/search", json={"query": "tent"}).json()["recommendation_id"]
        bodies = [
            {"events": [{"type": "click", "product_id": i % 50, "recommendation_id": rid}]}
            for i in range(1000)
        ]
        phase = drive(
            urls["on"],
            "/events",
            bodies,
            args.clients,
            10**9,
            max_seconds=args.events_seconds,
            label="events",
            expect=202,
        )
        print(
            f"events accepted {len(phase.latencies)} in {phase.wall:.1f} s: "
            f"{phase.rps:.0f} events/s, p50 {phase.pct(50):.2f} ms, p99 {phase.pct(99):.2f} ms "
            f"({args.clients} clients, one event per request, each fsynced)"
        )
        print(f"load average {os.getloadavg()}")
    finally:
        for proc in procs.values():
            stop(proc)
        time.sleep(0.5)


if __name__ == "__main__":
    main()
