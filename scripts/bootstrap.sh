#!/usr/bin/env bash
# Installs whatever is missing, idempotently: the virtualenv and Python deps (.venv), and the
# JVM jars for Spark (~/.m2, outside the repo, so reruns and clones share it).
# Used by ./test.sh and ./uvicorn.sh; safe to run by hand.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
STAMP="$VENV/.deps-stamp"

log() { printf '[bootstrap] %s\n' "$*" >&2; }

if [ ! -x "$VENV/bin/python" ]; then
  log "creating virtualenv $VENV"
  python3 -m venv "$VENV"
fi
# uv resolves and installs the torch/CUDA wheel set in about a minute where pip takes several.
if [ ! -x "$VENV/bin/uv" ]; then
  "$VENV/bin/pip" install -q "uv>=0.4,<1"
fi
# Exactly the versions in requirements.lock (made by scripts/lock.sh from pyproject.toml's
# ranges), then the project itself without resolving anything again.
want=$(cat pyproject.toml requirements.lock | sha256sum | cut -d' ' -f1)
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$want" ]; then
  log "installing Python dependencies from requirements.lock (first run: ~1-3 min, ~4 GB with torch)"
  start=$SECONDS
  "$VENV/bin/uv" pip install --python "$VENV/bin/python" -q -r requirements.lock
  "$VENV/bin/uv" pip install --python "$VENV/bin/python" -q --no-deps -e .
  echo "$want" > "$STAMP"
  log "Python dependencies installed in $((SECONDS - start)) s"
fi

# The Hudi Spark bundle (+ s3a connector) into ~/.m2: ~80 MB + ~280 MB on a fresh machine.
./scripts/fetch_jars.sh
