"""CPU seconds per query of the ONNX query encoder at a steady request rate (issue 13).

    flock /tmp/bench.lock .venv/bin/python bench/query_cpu.py [--rate 25] [--seconds 20]

Sends the demo queries one at a time at a fixed rate (open loop, like requests arriving)
through each session setting in turn, and prints per setting: process CPU seconds per
query (every thread counted, so ONNX Runtime's spinning workers are too), the cores that
is at this rate, and latency p50/p95. Settings, in one run:
  before   fp32 export, min(4, cores) intra-op threads, spinning on (ORT's default)
  after    the service's query encoder now: the documents' file (int8 on an AVX2/VNNI CPU),
           1 thread, no spinning
plus fp32 with 1 thread and no spinning, to separate threads/spinning from int8.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.core.config import Settings
from app.core.logging import configure_logging
from app.embedding import embedder_for
from app.embedding.onnx_encoder import OnnxEncoder, open_session
from app.embedding.onnx_export import export_fp32
from app.embedding.onnx_query import build_onnx_query_encoder
from app.eval.data import DEFAULT_QUERIES


def drive(encoder: OnnxEncoder, queries: list[str], rate: float, seconds: float) -> str:
    for q in queries[:5]:
        encoder.embed([q])  # warm-up
    n = int(rate * seconds)
    latencies = []
    cpu0, start = time.process_time(), time.perf_counter()
    for i in range(n):
        due = start + i / rate
        wait = due - time.perf_counter()
        if wait > 0:
            time.sleep(wait)
        t0 = time.perf_counter()
        encoder.embed([queries[i % len(queries)]])
        latencies.append(time.perf_counter() - t0)
    # Let spinning threads spin out the last idle gap, as they would between requests.
    time.sleep(max(0.0, start + n / rate - time.perf_counter()))
    cpu = time.process_time() - cpu0
    wall = time.perf_counter() - start
    p95 = statistics.quantiles(latencies, n=20)[18]
    return (
        f"{cpu / n * 1000:7.2f} ms CPU/query  {cpu / wall:5.2f} cores  "
        f"p50 {statistics.median(latencies) * 1000:6.2f} ms  p95 {p95 * 1000:6.2f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rate", type=float, default=25.0)
    parser.add_argument("--seconds", type=float, default=20.0)
    args = parser.parse_args()
    configure_logging("WARNING")
    settings = Settings()
    embedder = embedder_for(settings)
    assert embedder.model is not None  # embedder_for loads it (an export has none)
    lines = DEFAULT_QUERIES.read_text(encoding="utf-8").splitlines()
    queries = [json.loads(line)["query"] for line in lines if line.strip()]
    fp32 = export_fp32(
        embedder.model, embedder.model_id.removesuffix("+int8"), Path(settings.model_cache_dir)
    )
    max_len = embedder.max_seq_tokens + 2
    before_threads = max(1, min(4, os.cpu_count() or 1))
    after = build_onnx_query_encoder(embedder, settings.model_cache_dir)
    assert after is not None, "no ONNX query encoder on this machine"
    setups = {
        f"before: fp32, {before_threads} threads, spinning": OnnxEncoder(
            open_session(fp32, before_threads, spinning=True),
            embedder.tokenizer(),
            max_len,
            1,
            fp32,
        ),
        "fp32, 1 thread, no spinning": OnnxEncoder(
            open_session(fp32, 1, spinning=False), embedder.tokenizer(), max_len, 1, fp32
        ),
        f"after: {embedder.encoder}, 1 thread, no spinning": after,
    }
    print(f"{args.rate:g} queries/s for {args.seconds:g} s each, {os.cpu_count()} cores")
    for name, encoder in setups.items():
        print(f"  {name:36s} {drive(encoder, queries, args.rate, args.seconds)}", flush=True)


if __name__ == "__main__":
    main()
