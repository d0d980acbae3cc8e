"""The product rules' jar (spark_jobs/jvm): compiled on first use, kept outside the checkout.

    python -m spark_jobs.rules_jar      # prints the jar's path (builds it when missing)

`get_spark` puts the jar on the classpath of the session it builds. Under `spark-submit`,
pass it yourself: `spark-submit --jars "$(python -m spark_jobs.rules_jar)" ...`.

The jar is built with the JDK's `javac` against pyspark's own jars, for Java 8 (what Spark
3.5 still runs on), into ~/.cache/hudi-rag-recommender/jars under a name that hashes the
sources and the Spark version: a changed rule makes a new jar, and clones share one.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from spark_jobs.errors import JobError

SOURCES = Path(__file__).parent / "jvm"
# The class the Python side constructs (spark_jobs/validation.py).
RULES_CLASS = "hudirag.rules.ProductRules"


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "hudi-rag-recommender" / "jars"


def _spark_jars() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "jars"


def rules_jar() -> Path:
    """The jar's path, compiled first if this version of the sources has none yet."""
    import pyspark

    sources = sorted(SOURCES.rglob("*.java"))
    digest = hashlib.sha256(pyspark.__version__.encode())
    for source in sources:
        digest.update(source.relative_to(SOURCES).as_posix().encode())
        digest.update(source.read_bytes())
    jar = _cache_dir() / f"product-rules-{digest.hexdigest()[:16]}.jar"
    if not jar.is_file():
        _build(sources, jar)
    return jar


def _build(sources: list[Path], jar: Path) -> None:
    javac = shutil.which("javac")
    if javac is None:
        raise JobError("javac not found: the product rules are Java (install a JDK 8+)")
    jar.parent.mkdir(parents=True, exist_ok=True)
    # Built in a temporary folder and renamed into place: test workers and clones may build
    # at once, and a reader must never see half a jar.
    with tempfile.TemporaryDirectory(dir=jar.parent) as tmp:
        classes = Path(tmp) / "classes"
        command = [
            javac,
            "--release",
            "8",
            "-nowarn",
            "-encoding",
            "UTF-8",
            "-cp",
            str(_spark_jars() / "*"),
            "-d",
            str(classes),
            *map(str, sources),
        ]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise JobError(f"compiling the product rules failed:\n{done.stderr[-2000:]}")
        partial = Path(tmp) / jar.name
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in sorted(classes.rglob("*.class")):
                archive.write(path, path.relative_to(classes).as_posix())
        partial.replace(jar)


if __name__ == "__main__":
    try:
        print(rules_jar())
    except JobError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
