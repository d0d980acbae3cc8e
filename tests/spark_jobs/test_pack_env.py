"""What the executors' archive holds: what their Python imports, not the whole venv.

No JVM: `executor_files` lists the archive's entries (the standalone-cluster test,
tests/e2e/test_spark_cluster.py, runs embed's workers from the packed archive).
"""

from __future__ import annotations

import sys
from pathlib import Path

from spark_jobs.pack_env import executor_files


def test_the_archive_holds_what_executors_import_and_nothing_of_torch_or_the_checkout() -> None:
    entries = executor_files(Path(sys.prefix))
    packages = {e.split("/")[3] for e in entries if e.count("/") > 3}
    assert {"bin/python", "pyvenv.cfg"} <= set(entries)
    # PySpark's worker, the embed worker's engine and chunker, and the modules it imports.
    assert {"pyspark", "onnxruntime", "tokenizers", "semantic_text_splitter", "numpy"} <= packages
    # What no executor imports: the driver's torch and model, Spark's jars, test tools, and
    # the project itself (executors import it from the code zip, never from a checkout).
    assert not packages & {"torch", "nvidia", "transformers", "sentence_transformers"}
    assert not packages & {"pytest", "moto", "playwright", "app", "spark_jobs"}
    assert not [e for e in entries if "/pyspark/jars/" in e or "__editable__" in e]
    assert not [e for e in entries if "__pycache__" in e]
