#!/usr/bin/env bash
# Installs whatever is missing, idempotently: the virtualenv and Python deps (.venv), and the
# Hudi Spark bundle jar (~/.m2, outside the repo, so reruns and clones share it).
# Used by ./test.sh and ./uvicorn.sh; safe to run by hand.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
STAMP="$VENV/.deps-stamp"
HUDI_BUNDLE=$(sed -n 's/^HUDI_SPARK_BUNDLE = "\(.*\)"/\1/p' app/core/config.py)

log() { printf '[bootstrap] %s\n' "$*" >&2; }

if [ ! -x "$VENV/bin/python" ]; then
  log "creating virtualenv $VENV"
  python3 -m venv "$VENV"
fi
# uv resolves and installs the torch/CUDA wheel set in about a minute where pip takes several.
if [ ! -x "$VENV/bin/uv" ]; then
  "$VENV/bin/pip" install -q "uv>=0.4,<1"
fi
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$want" ]; then
  log "installing Python dependencies (first run: ~1-3 min, ~4 GB with torch)"
  start=$SECONDS
  "$VENV/bin/uv" pip install --python "$VENV/bin/python" -q -e ".[spark,dev]"
  echo "$want" > "$STAMP"
  log "Python dependencies installed in $((SECONDS - start)) s"
fi

jar_path() {
  local g a v
  IFS=: read -r g a v <<< "$HUDI_BUNDLE"
  echo "$HOME/.m2/repository/${g//.//}/$a/$v/$a-$v.jar"
}
if [ ! -f "$(jar_path)" ]; then
  log "fetching $HUDI_BUNDLE from Maven Central into ~/.m2 (~80 MB)"
  mvn -q -B dependency:get -Dartifact="$HUDI_BUNDLE" -Dtransitive=false >&2
fi
