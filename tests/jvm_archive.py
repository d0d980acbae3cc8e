"""A class-data-sharing archive of Spark's classes for the suite's JVMs.

    python -m tests.jvm_archive      # dumps it when missing (./test.sh runs this first)

Every Spark JVM the tests start (each pytest worker's session, each job a test runs as its
own process, ./uvicorn.sh's in the demo test, the standalone cluster's daemons and
executors) first reads and verifies the same thousands of classes from pyspark's jars. A
dynamic CDS archive (`-XX:ArchiveClassesAtExit`, JDK 13+) of the classes a real job loads
is dumped once by a warm-up job, and every test JVM maps it (`-XX:SharedArchiveFile`):
BENCHMARKS.md ("Set-up and suite") has what it saves.

A JVM uses the archive only where its class path begins with the one it was dumped with,
and Spark's launchers put SPARK_CONF_DIR first: every test JVM runs with the same empty
conf folder, kept beside the archive (empty, so no spark-env.sh or defaults of the machine
apply). A JVM that cannot use the archive runs as it would without it and says why on
stderr (`-Xlog:all=warning:stderr`): the JVM's own default is stdout, where jobs print
their counts.

Kept in ~/.cache/hudi-rag-recommender/jvm under a name that hashes the JDK, the jars and
their folder (a checkout's own venv: a fresh clone dumps its own).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import time
from functools import lru_cache
from pathlib import Path

from spark_jobs.rules_jar import cache_root

# C1 only and the serial GC for every test JVM (tests/conftest.py says why).
BASE_JVM_OPTS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
ROOT = Path(__file__).resolve().parents[1]
# What the warm-up upserts: the demo catalog, so the archive holds the classes of a
# validated upsert into a new table (Hudi's own come from --jars and are never archived).
WARM_UP_INPUT = ROOT / "data" / "demo" / "products.jsonl"
# Archives kept (~160 MB each): a checkout or two and a clean clone for CI.
KEEP = 3
# Part of the folder's name: bump it when the warm-up or the options change.
_RECIPE = "1"


def _java() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").is_file():
        return str(Path(home) / "bin" / "java")
    return shutil.which("java")


@lru_cache(maxsize=1)
def folder() -> Path | None:
    """This JDK's and these jars' folder (None without a JDK or pyspark)."""
    java = _java()
    spec = importlib.util.find_spec("pyspark")  # located, not imported: conftest calls this
    if java is None or spec is None or spec.origin is None:
        return None
    version = subprocess.run(
        [java, "-version"], capture_output=True, text=True, check=False, timeout=60
    ).stderr
    jars = Path(spec.origin).resolve().parent / "jars"
    digest = hashlib.sha256(f"{_RECIPE}\n{java}\n{version}\n{jars}\n".encode())
    for jar in sorted(jars.glob("*.jar")):
        stat = jar.stat()
        digest.update(f"{jar.name} {stat.st_size} {stat.st_mtime_ns}\n".encode())
    return cache_root() / "jvm" / digest.hexdigest()[:16]


def archive() -> Path | None:
    """The archive, when it was dumped."""
    f = folder()
    return f / "spark.jsa" if f is not None and (f / "spark.jsa").is_file() else None


def conf_dir() -> Path | None:
    """The empty SPARK_CONF_DIR every test JVM runs with (None without a JDK or pyspark)."""
    f = folder()
    if f is None:
        return None
    (f / "conf").mkdir(parents=True, exist_ok=True)
    return f / "conf"


def jvm_options() -> str:
    """The options every test JVM starts with: the archive's when it exists."""
    jsa = archive()
    if jsa is None:
        return BASE_JVM_OPTS
    return f"{BASE_JVM_OPTS} -XX:SharedArchiveFile={jsa} -Xlog:disable -Xlog:all=warning:stderr"


def _prune(parent: Path) -> None:
    """Keep the KEEP most recently used archives: each fresh clone's venv dumps its own."""
    used = sorted(
        (p for p in parent.iterdir() if (p / "spark.jsa").is_file()),
        key=lambda p: (p / "spark.jsa").stat().st_mtime,
        reverse=True,
    )
    for old in used[KEEP:]:
        shutil.rmtree(old, ignore_errors=True)


def dump() -> Path | None:
    """Dump the archive if missing: create a table and upsert the demo into it, the JVM of
    the upsert writing the classes it loaded. Returns the archive (None: the JDK wrote
    none)."""
    f, conf = folder(), conf_dir()
    if f is None or conf is None:
        raise SystemExit("no JDK or no pyspark: nothing to archive")
    final = f / "spark.jsa"
    if final.is_file():
        os.utime(final)  # in use: the last to be pruned
        print(f"[test] JVM class archive: {final}")
        return final
    print("[test] JVM class archive: dumping (~1 min, once per JDK and jars)", flush=True)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="jvm-archive-") as tmp:
        table = Path(tmp) / "products"
        partial = Path(tmp) / "spark.jsa"
        env = {
            **os.environ,
            "DATA_DIR": str(Path(tmp) / "data"),  # the jobs' checkpoints, not the checkout's
            "SPARK_CONF_DIR": str(conf),
            "SPARK_SUBMIT_OPTS": BASE_JVM_OPTS,
        }
        steps = [
            (["create_table", "--table-path", str(table)], env),
            (
                ["upsert_products", "--table-path", str(table), "--input", str(WARM_UP_INPUT)],
                {
                    **env,
                    "SPARK_SUBMIT_OPTS": f"{BASE_JVM_OPTS} -XX:ArchiveClassesAtExit={partial}",
                },
            ),
        ]
        for args, step_env in steps:
            done = subprocess.run(
                [sys.executable, "-m", f"spark_jobs.{args[0]}", *args[1:]],
                env=step_env,
                cwd=ROOT,
                capture_output=True,
                text=True,
                check=False,
                timeout=900,
            )
            if done.returncode != 0:
                raise SystemExit(f"{args[0]}: exit {done.returncode}\n{done.stderr[-4000:]}")
        if not partial.is_file():  # a JDK before 13: the tests run without one
            print(f"[test] JVM class archive: the JVM wrote none ({_java()})", file=sys.stderr)
            return None
        # Whole or not at all (a JVM given a half-written archive would not use it), and
        # each dump its own copy: two runs of one checkout may dump at once.
        copy = f / f"spark.jsa.{os.getpid()}.tmp"
        shutil.copyfile(partial, copy)
        os.replace(copy, final)
    _prune(f.parent)
    print(f"[test] JVM class archive: {final} (dumped in {time.monotonic() - started:.0f} s)")
    return final


if __name__ == "__main__":
    dump()
