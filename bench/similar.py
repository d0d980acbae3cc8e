"""GET /products/{id}/similar on a running service against POST /search on the same
service in the same run (the baseline): p50 and p90 of 200 requests each, alternating.

    PORT=8765 ./uvicorn.sh   # the demo catalog; then, in another shell:
    flock /tmp/bench.lock .venv/bin/python bench/similar.py LABEL [--url URL]

BENCHMARKS.md, "Similar products".
"""

from __future__ import annotations

import argparse
import statistics
import time

import httpx

# Demo products of many kinds (tents, headlamps, dumbbells, kettles, webcams, …).
IDS = [15, 189, 113, 61, 275, 165, 9, 98, 241, 44, 271, 14, 280, 104, 56, 30, 68, 290, 324, 316]
QUERIES = ["a tent for two", "a headlamp", "adjustable dumbbells", "a gooseneck kettle", "webcam"]
ROUNDS = 10


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("label")
    parser.add_argument("--url", default="http://127.0.0.1:8765")
    args = parser.parse_args()
    similar: list[float] = []
    search: list[float] = []
    with httpx.Client(base_url=args.url, timeout=30) as client:
        for pid, query in zip(IDS, QUERIES * 4, strict=True):  # warm
            client.get(f"/products/{pid}/similar").raise_for_status()
            client.post("/search", json={"query": query}).raise_for_status()
        for _ in range(ROUNDS):
            for pid, query in zip(IDS, QUERIES * 4, strict=True):
                started = time.perf_counter()
                client.get(f"/products/{pid}/similar").raise_for_status()
                similar.append(time.perf_counter() - started)
                started = time.perf_counter()
                client.post("/search", json={"query": query}).raise_for_status()
                search.append(time.perf_counter() - started)
    p50 = {
        name: statistics.median(t) * 1000 for name, t in (("similar", similar), ("search", search))
    }
    for name, t in (("similar", similar), ("search", search)):
        t.sort()
        p90 = t[int(len(t) * 0.9)] * 1000
        print(f"{args.label} {name}: n={len(t)} p50={p50[name]:.2f} ms p90={p90:.2f} ms")
    print(f"{args.label}: /similar p50 ÷ /search p50 = {p50['similar'] / p50['search']:.2f}")


if __name__ == "__main__":
    main()
