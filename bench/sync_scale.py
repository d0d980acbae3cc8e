"""Sync at catalog scale: does the cost per product stay flat and memory bounded as it grows?

    flock /tmp/bench.lock .venv/bin/python bench/sync_scale.py [--products 100000 1000000]
        [--work /tmp/sync-scale] [--seed 7]

For each size N, on a real Hudi COW table written by Spark (bulk insert) and the default
embedded qdrant-edge store, each phase in its own child process (so its peak RSS is its
own, read with os.wait4):
  bootstrap   empty store -> N products                      (time per product)
  delete      Spark deletes 1 product; one incremental cycle  target < 5 s at 1M
  full        a forced full reconciliation (re-embeds nothing) (time per product)
  verify      the mirror check, must print 0/0/0               (time per product)
Targets: time per product at the largest N within 1.3x of the smallest; peak RSS at 1M
under 1.5 GB.

The embedder is a deterministic hash -> unit vector (384-d, like the real model) so the
model's ~60 texts/s does not hide the rest; chunking uses the real tokenizer. The index
builds are counted: the sync builds the HNSW index of every ROLL_AFTER_POINTS points it
writes as it goes (that is what keeps its memory flat), so they are part of the bootstrap.
Tables and stores are kept under --work and reused by a second run of the same size.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import re
import resource
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, cast

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.core.config import Settings
from app.core.logging import configure_logging
from app.embedding import Embedder, resolve_model_path

logger = logging.getLogger("bench.sync_scale")

DIM = 384
PHASES = ("bootstrap", "delete", "full", "verify")


class HashEmbedder:
    """Same text, same unit vector, in microseconds; the real tokenizer for chunking."""

    model_id = "hash-384"
    max_seq_tokens = 254
    dim = DIM

    def __init__(self) -> None:
        from tokenizers import Tokenizer

        self._tokenizer_file = str(Path(resolve_model_path("")) / "tokenizer.json")
        self._tokenizer = Tokenizer.from_file(self._tokenizer_file)

    def tokenizer(self) -> Any:
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(self._tokenizer_file)
        tok.no_truncation()
        tok.no_padding()
        return tok

    def embed(self, texts: list[str]) -> np.ndarray[Any, np.dtype[np.float32]]:
        out = np.empty((len(texts), DIM), dtype=np.float32)
        for i, text in enumerate(texts):
            seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
            v = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
            out[i] = v / np.linalg.norm(v)
        return out


def settings_for(work: Path, n: int) -> Settings:
    return Settings(
        hudi_table_path=str(work / f"products-{n}"),
        qdrant_path=str(work / f"qdrant-{n}"),
        sync_lock_dir=str(work),
    )


# --- memory probe: VmHWM is the figure; sampled status + smaps say what it was made of
_STATUS_KEYS = ("VmHWM", "VmRSS", "RssAnon", "RssFile", "RssShmem")
_CATEGORIES = (
    ("vector_storage-", "shard: sparse (BM25) vectors"),
    ("vector_index-", "shard: sparse (BM25) index"),
    ("vector_storage/", "shard: dense vectors"),
    ("payload_storage/", "shard: payload"),
    ("payload_index/", "shard: payload index"),
    ("id_tracker", "shard: id tracker"),
    ("/wal/", "shard: WAL"),
    ("/segments/", "shard: other"),
    (".so", "shared libraries"),
)


def status_mb() -> dict[str, float]:
    out: dict[str, float] = {}
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in _STATUS_KEYS:
                out[key] = int(rest.split()[0]) / 1024
    return out


def _category(path: str) -> str:
    if not path or path.startswith("["):
        return "anonymous" if path in ("", "[heap]") or path.startswith("[anon") else "other"
    for needle, name in _CATEGORIES:
        if needle in path:
            return name
    return "other files"


def smaps_mb() -> dict[str, float]:
    """Resident MB per category of mapping."""
    totals: dict[str, float] = defaultdict(float)
    header = re.compile(r"^[0-9a-f]+-[0-9a-f]+ ")
    category = "other"
    with open("/proc/self/smaps", encoding="utf-8", errors="replace") as f:
        for line in f:
            if header.match(line):
                parts = line.split(maxsplit=5)
                category = _category(parts[5].strip() if len(parts) > 5 else "")
            elif line.startswith("Rss:"):
                totals[category] += int(line.split()[1]) / 1024
    return {k: round(v, 1) for k, v in sorted(totals.items(), key=lambda kv: -kv[1])}


class RssProbe:
    def __init__(self, interval: float = 0.2, smaps_every: int = 10) -> None:
        self._interval = interval
        self._smaps_every = smaps_every
        self._stop = threading.Event()
        self._peak: dict[str, float] = {}
        self._smaps_at_peak: dict[str, float] = {}
        self._smaps_peak_rss = 0.0
        self._thread = threading.Thread(target=self._run, name="rss-probe", daemon=True)

    def __enter__(self) -> RssProbe:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample(with_smaps=False)

    def sample(self) -> None:
        """A sample with smaps now (call it before the store closes: closing unmaps it)."""
        self._sample(with_smaps=True)

    def _sample(self, *, with_smaps: bool) -> None:
        now = status_mb()
        for k, v in now.items():
            self._peak[k] = max(self._peak.get(k, 0.0), v)
        if with_smaps and now.get("VmRSS", 0.0) >= self._smaps_peak_rss:
            self._smaps_peak_rss = now["VmRSS"]
            self._smaps_at_peak = smaps_mb()

    def _run(self) -> None:
        i = 0
        while not self._stop.wait(self._interval):
            i += 1
            self._sample(with_smaps=i % self._smaps_every == 0)

    def report(self) -> dict[str, Any]:
        return {
            "vm_hwm_mb": round(status_mb()["VmHWM"], 1),
            "sampled_peak_mb": {k: round(v, 1) for k, v in self._peak.items() if k != "VmHWM"},
            "smaps_at_sampled_peak_mb": self._smaps_at_peak,
        }


# --- child phases ---------------------------------------------------------------------
def phase_write(work: Path, n: int, seed: int) -> dict[str, Any]:
    from app.core.catalog import PRODUCT_COLUMNS
    from spark_jobs.create_table import create_table
    from spark_jobs.generate_products import generate_file
    from spark_jobs.session import get_spark
    from spark_jobs.table import require_table, write

    s = settings_for(work, n)
    if (Path(s.hudi_table_path) / ".hoodie").exists():
        return {"skipped": True}
    started = time.monotonic()
    source = work / f"products-{n}.jsonl"
    generate_file(n, seed, str(source))
    logger.info("generated %d rows in %.0fs", n, time.monotonic() - started)
    spark = get_spark(Settings(spark_master="local[2]"), app_name="bench-sync-scale")
    create_table(spark, s.hudi_table_path)
    ddl = ", ".join(f"{c} {t}" for c, t in PRODUCT_COLUMNS)
    df = spark.read.schema(ddl).json(str(source)).repartition(4)
    write(df, s.hudi_table_path, require_table(spark, s.hudi_table_path), "bulk_insert")
    source.unlink()
    spark.stop()
    return {"seconds": time.monotonic() - started}


def phase_spark_delete(work: Path, n: int) -> dict[str, Any]:
    from pyspark.sql import functions as F

    from app.core.catalog import COLUMN_NAMES
    from spark_jobs.session import get_spark
    from spark_jobs.table import require_table, write

    s = settings_for(work, n)
    spark = get_spark(Settings(spark_master="local[2]"), app_name="bench-sync-scale")
    # A different product on every run, so a rerun deletes something that is still there.
    victim = n // 2 + int(time.time()) % 1000
    # Rows selected from the table itself: no Python-side rows, so no Python workers.
    doomed = spark.read.format("hudi").load(s.hudi_table_path).where(F.col("id") == victim)
    write(
        doomed.select(*COLUMN_NAMES),
        s.hudi_table_path,
        require_table(spark, s.hudi_table_path),
        "delete",
    )
    spark.stop()
    return {"deleted_id": victim}


def phase_sync(work: Path, n: int, phase: str) -> dict[str, Any]:
    from app.store import open_store
    from app.sync import engine as engine_module
    from app.sync.verify import mirror_verify

    s = settings_for(work, n)
    with RssProbe() as probe:
        store = open_store(s)
        try:
            out = _run_phase(s, store, engine_module, phase, mirror_verify)
            probe.sample()
        finally:
            store.close()
    out["rss"] = probe.report()
    return out


def _run_phase(
    s: Settings, store: Any, engine_module: Any, phase: str, mirror_verify: Any
) -> dict[str, Any]:
    engine = engine_module.SyncEngine(s, store, cast(Embedder, HashEmbedder()))
    started = time.monotonic()
    if phase == "verify":
        report = mirror_verify(s, store, engine.chunker)
        out: dict[str, Any] = {
            "missing": report.missing,
            "stale": report.stale,
            "extra": report.extra,
            "chunks": report.stored_chunks,
            "products": report.products,
        }
    else:
        cycle = engine.run_cycle(full=phase == "full")
        out = {
            "mode": cycle.mode,
            "rows": cycle.rows,
            "embedded": cycle.embedded,
            "skipped": cycle.skipped,
            "deleted": cycle.deleted,
            "key_reconciliation": cycle.key_reconciliation,
            "removal_scan": cycle.removal_scan,
            "optimized": cycle.optimized,
            "segments": store._require().info().segments_count,
        }
    out["seconds"] = time.monotonic() - started
    return out


# --- parent ---------------------------------------------------------------------------
def run_child(args: list[str]) -> tuple[dict[str, Any], float]:
    """Run one phase in a child; its result and its own peak RSS in MB."""
    proc = subprocess.Popen(
        [sys.executable, __file__, *args], stdout=subprocess.PIPE, text=True, bufsize=1
    )
    assert proc.stdout is not None
    result: dict[str, Any] = {}
    for line in proc.stdout:
        if line.startswith("RESULT "):
            result = json.loads(line[len("RESULT ") :])
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"phase {args} failed with exit code {proc.returncode}")
    return result, usage.ru_maxrss / 1024  # Linux reports KiB


def measure(work: Path, n: int, seed: int) -> dict[str, dict[str, Any]]:
    figures: dict[str, dict[str, Any]] = {}
    logger.info("== %d products: writing the table with Spark (bulk insert)", n)
    write, _ = run_child(
        ["--phase", "write", "--n", str(n), "--work", str(work), "--seed", str(seed)]
    )
    logger.info("table: %s", write)
    for phase in PHASES:
        if phase == "delete":
            run_child(["--phase", "spark-delete", "--n", str(n), "--work", str(work)])
        logger.info("== %d products: %s", n, phase)
        result, rss = run_child(["--phase", phase, "--n", str(n), "--work", str(work)])
        result["peak_rss_mb"] = rss
        result["us_per_product"] = 1e6 * result["seconds"] / n
        figures[phase] = result
        logger.info("%s at %d: %s", phase, n, result)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--products", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--work", default="/tmp/sync-scale")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--phase", choices=("write", "spark-delete", *PHASES))
    parser.add_argument("--n", type=int)
    args = parser.parse_args()
    configure_logging("INFO")
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)

    if args.phase:
        if args.phase == "write":
            result = phase_write(work, args.n, args.seed)
        elif args.phase == "spark-delete":
            result = phase_spark_delete(work, args.n)
        else:
            result = phase_sync(work, args.n, args.phase)
        print("RESULT " + json.dumps(result), flush=True)
        return

    started = time.monotonic()
    runs = {n: measure(work, n, args.seed) for n in args.products}
    base = min(runs)
    print(
        f"\nsync_scale ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
        f"{os.cpu_count()} cores, {time.monotonic() - started:.0f}s in all)"
    )
    print(
        f"{'products':>9} {'phase':>9} {'seconds':>9} {'us/product':>11} "
        f"{'vs ' + str(base):>10} {'peak RSS MB':>12}  result"
    )
    for n, figures in runs.items():
        for phase, r in figures.items():
            ratio = r["us_per_product"] / runs[base][phase]["us_per_product"]
            detail = {
                k: v for k, v in r.items() if k not in ("seconds", "us_per_product", "peak_rss_mb")
            }
            print(
                f"{n:>9} {phase:>9} {r['seconds']:>9.2f} {r['us_per_product']:>11.1f} "
                f"{ratio:>10.2f} {r['peak_rss_mb']:>12.0f}  {detail}"
            )
    parent_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"(max RSS of this parent: {parent_mb:.0f} MB)")


if __name__ == "__main__":
    main()
