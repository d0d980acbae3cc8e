"""The product rules' jar: the Maven module rules/, built once, kept outside the checkout.

    python -m spark_jobs.rules_jar      # prints the jar's path (builds it when missing)

`get_spark` puts the jar on the classpath of the session it builds. Under `spark-submit`,
pass it yourself: `spark-submit --jars "$(python -m spark_jobs.rules_jar)" ...`.

`PRODUCT_RULES_JAR` names a jar built elsewhere (the Spark image's, built in its own
stage). Otherwise the jar is built with `mvn -q -B package` (Maven and a JDK 9+, which
`--release 8` needs; ~5 s warm) into ~/.cache/hudi-rag-recommender/jars under a name that
hashes the module's pom and main sources: a changed rule makes a new jar, and clones share
one. The rules' unit tests are `mvn -q -B test` in rules/ (tests/spark_jobs/test_rules_jar.py
runs them).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from app.core.config import Settings, get_settings
from spark_jobs.errors import JobError

# The Maven module: in a checkout only (the wheel carries no Java).
MODULE = Path(__file__).resolve().parents[1] / "rules"
# The class the Python side constructs (spark_jobs/validation.py).
RULES_CLASS = "hudirag.rules.ProductRules"
# What `mvn package` makes (the pom's finalName).
_BUILT = "product-rules.jar"


def cache_root() -> Path:
    """Where built artifacts are kept outside the checkout (jars, packed environments)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "hudi-rag-recommender"


def _cache_dir() -> Path:
    return cache_root() / "jars"


def module_sources() -> list[Path]:
    """What the jar is built from: the pom and the main sources (not the tests)."""
    return [MODULE / "pom.xml", *sorted((MODULE / "src" / "main").rglob("*.java"))]


def rules_jar(settings: Settings | None = None) -> Path:
    """The jar's path: PRODUCT_RULES_JAR, else built first if these sources have none yet."""
    s = settings or get_settings()
    if s.product_rules_jar:
        given = Path(s.product_rules_jar)
        if not given.is_file():
            raise JobError(f"PRODUCT_RULES_JAR={given} is not a file")
        return given
    if not (MODULE / "pom.xml").is_file():
        raise JobError(
            f"the product rules' Maven module is not at {MODULE}: run from a checkout, "
            "or set PRODUCT_RULES_JAR to a built jar"
        )
    digest = hashlib.sha256()
    for source in module_sources():
        digest.update(source.relative_to(MODULE).as_posix().encode())
        digest.update(source.read_bytes())
    jar = _cache_dir() / f"product-rules-{digest.hexdigest()[:16]}.jar"
    if not jar.is_file():
        _build(jar)
    return jar


def _build(jar: Path) -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise JobError(
            "mvn not found: the product rules are a Maven module (rules/); install Maven "
            "and a JDK 9+, or set PRODUCT_RULES_JAR to a built jar"
        )
    jar.parent.mkdir(parents=True, exist_ok=True)
    # Built in a temporary folder (not rules/target) and renamed into place: test workers
    # and clones may build at once, and a reader must never see half a jar.
    with tempfile.TemporaryDirectory(dir=jar.parent) as tmp:
        command = [mvn, "-q", "-B", "package", "-DskipTests", f"-Drules.build.dir={tmp}"]
        done = subprocess.run(command, cwd=MODULE, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            output = (done.stdout + done.stderr)[-2000:]
            raise JobError(f"building the product rules failed (mvn package):\n{output}")
        (Path(tmp) / _BUILT).replace(jar)


if __name__ == "__main__":
    try:
        print(rules_jar())
    except JobError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
