"""A real Spark standalone cluster on loopback, from the pip package's `bin/spark-class`.

One master and two workers, each its own JVM (`org.apache.spark.deploy.master.Master`,
`org.apache.spark.deploy.worker.Worker spark://...`), one core and a little memory per
worker, every port picked free, its work dirs and logs under a temporary folder (its
empty conf folder is the class archive's: tests/jvm_archive.py). Applications reach it
through `spark-submit --master <url>`; each executor leaves its folder
(`<work dir>/<app id>/<executor id>/`, with its stdout/stderr and what it fetched) under
the worker that ran it.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from app.core.ports import free_port
from tests.jvm_archive import conf_dir, jvm_options

STARTUP_SECONDS = 120.0
WORKERS = 2
# Per worker: what its executors may use (one executor each, of EXECUTOR_MEMORY).
WORKER_MEMORY = "1g"
EXECUTOR_MEMORY = "512m"
# The daemons only schedule; the JVM's default 1 GB heap is far more than they need.
DAEMON_MEMORY = "256m"
# As for every test JVM (tests/conftest.py's SPARK_SUBMIT_OPTS): C1 only, the serial GC,
# the class archive when ./test.sh dumped it.
TEST_JVM_OPTS = jvm_options()


def spark_conf_dir(folder: Path) -> Path:
    """The class archive's empty SPARK_CONF_DIR (tests/jvm_archive.py), else `folder/conf`."""
    shared = conf_dir()
    if shared is not None:
        return shared
    (folder / "conf").mkdir(parents=True, exist_ok=True)
    return folder / "conf"


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


@dataclass(frozen=True)
class StandaloneCluster:
    master_url: str  # spark://127.0.0.1:PORT
    web_url: str  # the master's web UI; /json describes workers and applications
    work_dirs: tuple[Path, ...]  # one per worker

    def state(self) -> dict[str, Any]:
        """The master's JSON view (`aliveworkers`, `workers`, `activeapps`, `completedapps`)."""
        state: dict[str, Any] = httpx.get(f"{self.web_url}/json/", timeout=5).json()
        return state

    def executor_dirs(self, app_id: str) -> list[Path]:
        """The folders of the app's executors, on whichever workers ran them."""
        return sorted(p for work in self.work_dirs for p in (work / app_id).glob("*") if p.is_dir())


def _spawn(command: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        # Own process group: stopped as a whole, and a Ctrl-C of the tests reaches it once.
        return subprocess.Popen(
            command, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


@contextmanager
def standalone_cluster(folder: Path) -> Iterator[StandaloneCluster]:
    """Start a master and WORKERS workers; stop them (and their executors) on exit."""
    spark_class = str(spark_home() / "bin" / "spark-class")
    # Empty (no spark-env.sh or defaults of the machine apply), and the class archive's.
    conf_dir = spark_conf_dir(folder)
    env = {
        **os.environ,
        "SPARK_HOME": str(spark_home()),
        "SPARK_CONF_DIR": str(conf_dir),
        "SPARK_LOCAL_IP": "127.0.0.1",
        # The executors' scratch space (fetched files, shuffle) in this folder, not /tmp.
        "SPARK_LOCAL_DIRS": str(folder / "local"),
        "SPARK_DAEMON_MEMORY": DAEMON_MEMORY,
        "SPARK_DAEMON_JAVA_OPTS": TEST_JVM_OPTS,
    }
    port, web_port = free_port(), free_port()
    master_url = f"spark://127.0.0.1:{port}"
    web_url = f"http://127.0.0.1:{web_port}"
    procs = [
        _spawn(
            [
                *(spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1"),
                *("--port", str(port), "--webui-port", str(web_port)),
            ],
            env,
            folder / "master.log",
        )
    ]
    work_dirs = []
    try:
        for n in range(WORKERS):
            work = folder / f"worker-{n}"
            work.mkdir()
            work_dirs.append(work)
            procs.append(
                _spawn(
                    [
                        *(spark_class, "org.apache.spark.deploy.worker.Worker"),
                        *("--host", "127.0.0.1", "--webui-port", str(free_port())),
                        *("--cores", "1", "--memory", WORKER_MEMORY),
                        *("--work-dir", str(work), master_url),
                    ],
                    env,
                    folder / f"worker-{n}.log",
                )
            )
        cluster = StandaloneCluster(master_url, web_url, tuple(work_dirs))
        _wait_for_workers(cluster, procs)
        yield cluster
    finally:
        for proc in reversed(procs):  # workers first: they stop their executors
            _stop(proc)
        _drop_fetched(folder)


def _drop_fetched(folder: Path) -> None:
    """What the executors fetched (~350 MB of jars per application, the unpacked archives),
    keeping their logs for a failure's reader."""
    for fetched in folder.glob("worker-*/app-*/*/*"):
        if fetched.is_dir():
            shutil.rmtree(fetched, ignore_errors=True)
        elif fetched.name not in ("stderr", "stdout"):
            fetched.unlink(missing_ok=True)
    shutil.rmtree(folder / "local", ignore_errors=True)


def _wait_for_workers(cluster: StandaloneCluster, procs: list[subprocess.Popen[bytes]]) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        dead = [p.args for p in procs if p.poll() is not None]
        if dead:
            raise RuntimeError(f"a Spark daemon exited before the cluster was up: {dead}")
        try:
            if cluster.state().get("aliveworkers") == WORKERS:
                return
        except (httpx.HTTPError, ValueError):  # the UI answers HTML until it is up
            pass
        time.sleep(0.5)
    raise RuntimeError(f"{WORKERS} workers not registered after {STARTUP_SECONDS:.0f} s")
