#!/usr/bin/env bash
# Fetch the JVM jars the Spark jobs need into ~/.m2 (outside the repo, shared by clones):
# the Hudi Spark bundle and the s3a connector. spark_jobs/session.py puts them on the
# classpath from there. Idempotent; only missing jars are downloaded (Maven Central).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ -x .venv/bin/python ]; then PY=.venv/bin/python; fi
# One source of truth for the coordinates: the Python code that uses them.
mapfile -t coords < <("$PY" -c '
from app.core.config import HUDI_SPARK_BUNDLE
from spark_jobs.session import S3A_JARS
print(HUDI_SPARK_BUNDLE)
print("\n".join(S3A_JARS))
')
for c in "${coords[@]}"; do
  IFS=: read -r g a v <<< "$c"
  jar="$HOME/.m2/repository/${g//.//}/$a/$v/$a-$v.jar"
  if [ ! -f "$jar" ]; then
    echo "[fetch_jars] $c from Maven Central" >&2
    mvn -q -B dependency:get -Dartifact="$c" -Dtransitive=false >&2
  fi
done
