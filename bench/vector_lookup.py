"""The sync's vectors-table lookup: its memory while the table's history grows.

    flock /tmp/bench.lock .venv/bin/python bench/vector_lookup.py [--live 20000]
        [--edits 10000] [--rounds 4] [--dim 384]

A vectors table of `--live` keys (random 384-d unit vectors; no model: the table's size,
not its content, is the point) is written by real Spark (Hudi COW, the embed job's own
`_write`), then `--rounds` rounds each replace `--edits` live keys by new ones, as edits of
the catalog do. Two tables take the same history: one where the job drops the vectors no
live key uses after each round (`_drop_dead`, what `spark_jobs.embed` does on a run over
the whole snapshot), one where nothing is dropped. After each round a fresh process (the
syncer's `ChunkVectorSource`) spills the table and looks up every live key in groups of
1,024 (EMBED_GROUP, as a bootstrap asks): its peak RSS over its own baseline, the index it
keeps, and what the vectors weigh (what the previous lookup held in memory).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

GROUP = 1024


def _rss_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field):
            return int(line.split()[1])
    return 0


def measure(path: str, keys_file: str, dim: int) -> dict[str, Any]:
    """In a fresh process: spill the table at `path`, look up every key of `keys_file`."""
    from app.core.config import Settings
    from app.sync.chunk_vectors import ChunkVectorSource

    keys = json.loads(Path(keys_file).read_text())
    source = ChunkVectorSource(Settings(vectors_table_path=path), dim)
    base = _rss_kb("VmRSS")
    started = time.monotonic()
    source.start_cycle()
    found = 0
    for i in range(0, len(keys), GROUP):
        found += len(source.lookup(keys[i : i + GROUP]))
    seconds = time.monotonic() - started
    peak = max(_rss_kb("VmHWM"), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    return {
        "found": found,
        "index_mb": source.index_bytes / 1e6,
        "peak_over_base_mb": (peak - base) / 1e3,
        "seconds": seconds,
    }


def _keys(rng: np.random.Generator, n: int) -> list[str]:
    return [rng.bytes(16).hex() for _ in range(n)]


def _frame(spark: Any, keys: list[str], dim: int, rng: np.random.Generator) -> Any:
    from app.sync.chunk_vectors import CONTENT_KEY, EMBEDDED_AT, MODEL_ID, VECTOR

    v = rng.standard_normal((len(keys), dim)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    now = time.time_ns() // 1_000_000
    rows = [(k, "bench", vec.tolist(), now) for k, vec in zip(keys, v, strict=True)]
    schema = f"{CONTENT_KEY} string, {MODEL_ID} string, {VECTOR} array<float>, {EMBEDDED_AT} long"
    return spark.createDataFrame(rows, schema)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--live", type=int, default=20_000)
    parser.add_argument("--edits", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--measure", nargs=2, metavar=("PATH", "KEYS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure[0], args.measure[1], args.dim)))
        return 0

    from app.core.config import Settings
    from spark_jobs.embed import _drop_dead, _write
    from spark_jobs.session import get_spark
    from spark_jobs.table import read_table_properties

    folder = Path(tempfile.mkdtemp(prefix="vector-lookup-"))
    spark = get_spark(Settings(spark_master="local[2]"), app_name="vector-lookup")
    spark.sparkContext.setCheckpointDir(str(folder / "checkpoints"))
    rng = np.random.default_rng(7)
    live = _keys(rng, args.live)
    tables = {"compacted": str(folder / "compacted"), "never dropped": str(folder / "kept")}
    for path in tables.values():
        _write(_frame(spark, live, args.dim, rng), path, None, None, "upsert")
    started = time.monotonic()
    print(f"live {args.live}, edits {args.edits} a round, {args.dim}-d, groups of {GROUP}")
    print("round | table         | rows    | vectors MB | index MB | peak RSS over base MB | s")
    for round_ in range(args.rounds + 1):
        if round_:
            gone, new = set(live[: args.edits]), _keys(rng, args.edits)
            live = live[args.edits :] + new
            frame = _frame(spark, new, args.dim, rng)
            for name, path in tables.items():
                props = read_table_properties(spark, path)
                assert props is not None
                _write(frame, path, props, None, "upsert")
                if name == "compacted":
                    live_frame = spark.createDataFrame([(k,) for k in live], "content_key string")
                    assert _drop_dead(spark, path, live_frame, props, None) == len(gone)
        keys_file = folder / "keys.json"
        keys_file.write_text(json.dumps(live))
        for name, path in tables.items():
            rows = spark.read.format("hudi").load(path).count()
            out = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--dim",
                    str(args.dim),
                    "--measure",
                    path,
                    str(keys_file),
                ],
                capture_output=True,
                text=True,
                check=True,
            )
            m = json.loads(out.stdout.strip().splitlines()[-1])
            assert m["found"] == len(live), m
            print(
                f"{round_:5d} | {name:13s} | {rows:7d} | {rows * args.dim * 4 / 1e6:10.1f} | "
                f"{m['index_mb']:8.2f} | {m['peak_over_base_mb']:21.1f} | {m['seconds']:.1f}",
                flush=True,
            )
        elapsed = time.monotonic() - started
        eta = elapsed / (round_ + 1) * (args.rounds - round_)
        print(f"# round {round_} done after {elapsed:.0f}s, ETA {eta:.0f}s", file=sys.stderr)
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
