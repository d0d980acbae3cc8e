"""The five Spark jobs on a real standalone cluster, the table on S3, the sync mirroring it.

A master and two workers (tests/spark_cluster.py: separate JVMs, one core each) and a local
S3 server (moto). Every job runs as `spark-submit --master spark://...`, built by
`submit_command` exactly as docs/spark-jobs.md ("On a cluster") shows it. History of
s3a://<bucket>/products:
1. create_table;
2. upsert_products of incoming/batch-1.jsonl: ids 1-6 and two rejects (id `abc`, an empty
   name), quarantined to quarantine/batch-1 on S3;
3. delete_products --id 3;
4. ingest --once over landing/: id 7 new, id 2 edited, id 5 deleted (`op: delete`);
5. embed: the chunks of ids 1, 2, 4, 6 and 7 embedded by the executors' Python workers
   into products_chunk_vectors.
Then `python -m app.sync --once` (hudi-rs, s3://) loads every chunk from those vectors
(embedded 0) and `--verify` finds 5 products, 0 missing, 0 stale, 0 extra.

Where the work ran: every job's application had one executor on each worker (each
worker's work dir holds a folder for it); their logs show the tasks run there (none for
create_table, whose DDL runs on the driver; Python tasks on both for embed). The four
table jobs run with the executors' Python set to a path that does not exist, so none of
them may run Python on an executor; embed's executors run the shipped environment
(`--archives`, unpacked in their folders, without torch: the driver ships its ONNX export)
and import the project from `--py-files` only (the archive leaves out the editable
install that points at this checkout). The rows a job reads twice are checkpointed on the
bucket (SPARK_CHECKPOINT_DIR), not under the driver's DATA_DIR. Each job's and each sync
run's wall time is logged (`-o log_cli=true --log-cli-level=INFO`; BENCHMARKS.md).
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from spark_jobs.pack_env import code_zip, env_archive, job_jars
from tests.local_s3 import LocalS3, start_local_s3
from tests.spark_cluster import (
    EXECUTOR_MEMORY,
    TEST_JVM_OPTS,
    StandaloneCluster,
    spark_conf_dir,
    spark_home,
    standalone_cluster,
)

pytestmark = [pytest.mark.slow, pytest.mark.spark]

logger = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[2]
JOB_SECONDS = 900
# The executors' Python for the jobs that must not run any: a path that does not exist.
NO_PYTHON = "/nonexistent/python"
# What docs/spark-jobs.md passes to every job (JOL: Hudi's object sizing must not try to
# attach an agent to the JVM; huge methods compiled, as get_spark does locally).
JVM_OPTS = "-Djol.skipHotspotSAAttach=true -Djol.skipDynamicAttach=true -XX:-DontCompileHugeMethods"


def submit_command(
    cluster: StandaloneCluster, job: str, args: list[str], *, python_env: Path | None
) -> list[str]:
    """The job's spark-submit command line: the commands in docs/spark-jobs.md, plus the
    test machine's own settings (small memory, no UI, tests/conftest.py's JIT flags)."""
    command = [
        str(spark_home() / "bin" / "spark-submit"),
        *("--master", cluster.master_url, "--name", job),
        *("--jars", ",".join(str(j) for j in job_jars())),
        *("--py-files", str(code_zip())),
        *("--conf", f"spark.pyspark.driver.python={sys.executable}"),
        *("--driver-java-options", JVM_OPTS),
        *("--conf", f"spark.executor.extraJavaOptions={JVM_OPTS}"),
    ]
    if python_env is not None:
        command += [
            *("--archives", f"{python_env}#env"),
            *("--conf", "spark.pyspark.python=./env/bin/python"),
            *("--conf", "spark.executorEnv.HF_HUB_OFFLINE=1"),
            *("--conf", "spark.executorEnv.TOKENIZERS_PARALLELISM=false"),
        ]
    else:
        command += ["--conf", f"spark.pyspark.python={NO_PYTHON}"]
    # This machine only: two cores shared with other tests.
    command += [
        *("--driver-memory", "768m", "--executor-memory", EXECUTOR_MEMORY),
        *("--conf", "spark.ui.enabled=false"),
        # Both executors registered before the first task: the work is spread over both.
        *("--conf", "spark.scheduler.minRegisteredResourcesRatio=1.0"),
        *("--driver-java-options", f"{JVM_OPTS} {TEST_JVM_OPTS}"),
        *("--conf", f"spark.executor.extraJavaOptions={JVM_OPTS} {TEST_JVM_OPTS}"),
    ]
    return [*command, str(ROOT / "spark_jobs" / f"{job}.py"), *args]


def counts(stdout: str) -> dict[str, str]:
    """The job's `name value` lines (other lines, e.g. from Hudi's dependencies, skipped)."""
    pairs = (line.split(" ", 1) for line in stdout.splitlines() if " " in line)
    return {name: value for name, value in pairs if name.isidentifier()}


class Cluster:
    """The cluster and the bucket, and what it takes to run a job or the syncer on them."""

    def __init__(self, cluster: StandaloneCluster, s3: LocalS3, folder: Path) -> None:
        self.cluster = cluster
        self.s3 = s3
        self.folder = folder
        self.table = f"s3a://{s3.bucket}/products"
        self.env = {
            **os.environ,
            **s3.env(),
            "DATA_DIR": str(folder / "data"),
            # Rows a job reads twice: written and read back by the executors, on the bucket.
            "SPARK_CHECKPOINT_DIR": f"s3a://{s3.bucket}/spark-checkpoints",
            "SPARK_HOME": str(spark_home()),
            "SPARK_CONF_DIR": str(spark_conf_dir(folder)),
            # The driver serves jars and files to the executors: loopback, not eth0.
            "SPARK_LOCAL_IP": "127.0.0.1",
            # Where the driver unpacks --archives too: this folder, not /tmp.
            "SPARK_LOCAL_DIRS": str(folder / "local"),
        }
        self.seconds: dict[str, float] = {}  # wall time per job or sync run, for the log

    def submit(self, job: str, *args: str, python_env: Path | None = None) -> dict[str, str]:
        """Run the job; returns its counts, and checks that it had an executor per worker."""
        command = submit_command(self.cluster, job, list(args), python_env=python_env)
        started = time.monotonic()
        done = subprocess.run(
            command,
            env=self.env,
            cwd=self.folder,
            capture_output=True,
            text=True,
            timeout=JOB_SECONDS,
            check=False,
        )
        self.seconds[job] = time.monotonic() - started
        logger.info("%s: %.1f s", job, self.seconds[job])
        assert done.returncode == 0, f"{job}: exit {done.returncode}\n{done.stderr[-4000:]}"
        self.executors(job)
        return counts(done.stdout)

    def app_id(self, job: str) -> str:
        apps = [a for a in self.cluster.state()["completedapps"] if a["name"] == job]
        assert len(apps) == 1, apps
        return str(apps[0]["id"])

    def executors(self, job: str) -> dict[Path, str]:
        """The folders and logs of the job's executors: one on each worker."""
        executors = self.cluster.executor_dirs(self.app_id(job))
        assert sorted(e.parent.parent for e in executors) == sorted(self.cluster.work_dirs)
        return {e: (e / "stderr").read_text(errors="replace") for e in executors}

    def ran_tasks(self, job: str) -> int:
        """How many of the job's executors ran tasks."""
        return sum("Running task" in log for log in self.executors(job).values())

    def sync(self, *args: str) -> dict[str, str]:
        env = {
            **self.env,
            "HUDI_TABLE_PATH": f"s3://{self.s3.bucket}/products",
            "QDRANT_PATH": str(self.folder / "qdrant"),
        }
        started = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "app.sync", *args],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=JOB_SECONDS,
            check=False,
        )
        label = f"sync {' '.join(args)}"
        self.seconds[label] = time.monotonic() - started
        logger.info("%s: %.1f s", label, self.seconds[label])
        assert done.returncode == 0, f"sync {args}: exit {done.returncode}\n{done.stderr[-4000:]}"
        return counts(done.stdout)

    def put_jsonl(self, key: str, rows: list[dict[str, object]]) -> None:
        body = "\n".join(json.dumps(r) for r in rows).encode()
        self.s3.client().put_object(Bucket=self.s3.bucket, Key=key, Body=body)

    def read_jsonl(self, prefix: str) -> list[dict[str, Any]]:
        client = self.s3.client()
        listed = client.list_objects_v2(Bucket=self.s3.bucket, Prefix=prefix)["Contents"]
        parts = [o["Key"] for o in listed if o["Key"].rsplit("/", 1)[-1].startswith("part-")]
        return [
            json.loads(line)
            for key in parts
            for line in client.get_object(Bucket=self.s3.bucket, Key=key)["Body"]
            .read()
            .decode()
            .splitlines()
        ]


@pytest.fixture(scope="module")
def spark_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    with standalone_cluster(tmp_path_factory.mktemp("spark-cluster")) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def python_env() -> Path:
    """This environment packed for the executors (cached across sessions by its packages)."""
    return env_archive()


def product(pid: int, ts: int, name: str, description: str, price: float) -> dict[str, object]:
    return {
        "id": pid,
        "ts": ts,
        "name": name,
        "description": description,
        "category": "home",
        "price": price,
    }


BATCH_1 = [
    product(1, 100, "AquaBeat Swim Headset", "Bone-conduction headphones for lap swimming.", 89.0),
    product(2, 100, "Barista Espresso Machine", "A 15-bar pump espresso maker.", 249.0),
    product(3, 100, "Ridge Trail Shoe", "Lugged outsole for muddy mountain trails.", 129.0),
    product(4, 100, "Summit Tent", "A light backpacking tent for two.", 199.0),
    product(5, 100, "Ember Camp Stove", "A folding gas stove for camp cooking.", 59.0),
    product(6, 100, "Lumen Desk Lamp", "An LED lamp with a dimmer and a USB port.", 45.0),
    {"id": "abc", "ts": 100, "name": "Not a product"},
    {"id": 9, "ts": 100, "name": ""},
]
LANDING = [
    product(7, 200, "Drift Kayak Paddle", "A carbon paddle for touring kayaks.", 149.0),
    product(2, 200, "Barista Espresso Machine", "Espresso maker with a steam wand.", 229.0),
    {"id": 5, "op": "delete"},
]


def test_the_jobs_run_on_a_standalone_cluster_and_the_sync_mirrors_their_table(
    spark_cluster: StandaloneCluster, python_env: Path, tmp_path: Path
) -> None:
    with start_local_s3() as s3:
        lake = Cluster(spark_cluster, s3, tmp_path)
        table, bucket = lake.table, s3.bucket

        assert lake.submit("create_table", "--table-path", table)["created"].split() == [
            "COPY_ON_WRITE",
            table,
        ]
        assert lake.ran_tasks("create_table") == 0  # DDL and hoodie.properties: the driver

        lake.put_jsonl("incoming/batch-1.jsonl", BATCH_1)
        quarantine = f"s3a://{bucket}/quarantine/batch-1"
        upserted = lake.submit(
            "upsert_products",
            *("--table-path", table, "--input", f"s3a://{bucket}/incoming/batch-1.jsonl"),
            *("--quarantine", quarantine),
        )
        assert (upserted["read"], upserted["upserted"], upserted["quarantined"]) == ("8", "6", "2")
        assert lake.ran_tasks("upsert_products") >= 1
        rejects = lake.read_jsonl("quarantine/batch-1/")
        assert sorted(r for row in rejects for r in row["reasons"]) == [
            "id is not an integer: 'abc'",
            "name is empty",
        ]

        deleted = lake.submit("delete_products", "--table-path", table, "--id", "3")
        assert (deleted["requested"], deleted["deleted"]) == ("1", "1")
        assert lake.ran_tasks("delete_products") >= 1

        lake.put_jsonl("landing/part-1.jsonl", LANDING)
        ingested = lake.submit(
            "ingest",
            *("--table-path", table, "--landing", f"s3a://{bucket}/landing"),
            *("--checkpoint", f"s3a://{bucket}/checkpoints/landing", "--once"),
        )
        assert {k: ingested[k] for k in ("files", "upserted", "deleted", "quarantined")} == {
            "files": "1",
            "upserted": "2",
            "deleted": "1",
            "quarantined": "0",
        }
        assert lake.ran_tasks("ingest") >= 1

        embedded = lake.submit("embed", "--table-path", table, python_env=python_env)
        chunks = int(embedded["chunks"])
        assert chunks >= 5  # ids 1, 2, 4, 6, 7: one chunk at least each
        assert (embedded["present"], embedded["embedded"], embedded["dropped"]) == (
            "0",
            str(chunks),
            "0",
        )
        assert embedded["vectors_path"] == f"{table}_chunk_vectors"
        for executor, log in lake.executors("embed").items():
            # Both executors ran Python tasks (two per stage, one core each), in the
            # archive unpacked where they run ...
            assert "PythonRunner" in log, executor
            assert (executor / "env" / "bin" / "python").exists()
            # ... without torch: the workers ran the ONNX export the driver shipped.
            assert list((executor / "env").glob("lib/python3*/site-packages/onnxruntime"))
            assert not list((executor / "env").glob("lib/python3*/site-packages/torch"))
            assert "PythonRunner" in (executor / "stderr").read_text(errors="replace")

        cycle = lake.sync("--once")
        assert (cycle["embedded"], cycle["loaded"], cycle["deleted"]) == ("0", str(chunks), "0")
        verify = lake.sync("--verify")
        assert verify["products"] == "5"
        assert verify["chunks"] == f"{chunks} (expected {chunks})"
        assert (verify["missing"], verify["stale"], verify["extra"]) == ("0", "0", "0")
