#!/usr/bin/env bash
# Set-up, idempotent: .venv exactly as uv.lock pins it (with the embed and spark extras and
# the dev group), and the embedding model's ONNX exports in data/models.
#   ./scripts/bootstrap.sh           what ./test.sh --fast and the service need: no JVM
#   ./scripts/bootstrap.sh --spark   also the JVM pieces of the Spark jobs (a JDK and Maven):
#                                    the Hudi bundle + s3a jars in ~/.m2, the rules' jar
# ./test.sh and ./uvicorn.sh run it; safe to run by hand.
set -euo pipefail
cd "$(dirname "$0")/.."
log() { printf '[bootstrap] %s\n' "$*" >&2; }

uv=$(command -v uv || echo "$(python3 -m site --user-base)/bin/uv")
if [ ! -x "$uv" ]; then
  log "installing uv (pip install --user uv)"
  python3 -m pip install -q --user "uv>=0.8,<1"
fi

# Skipped while .venv was synced from these very files: `uv sync` would also point the
# editable install at this checkout, and a test's copy of the repo links the real .venv.
want=$(cat pyproject.toml uv.lock | sha256sum | cut -d' ' -f1)
if [ "$(cat .venv/.synced 2>/dev/null)" != "$want" ]; then
  log "uv sync (first run: ~1-3 min and ~4 GB with torch; seconds with a warm uv cache)"
  "$uv" sync --locked --extra embed --extra spark -q
  echo "$want" > .venv/.synced
fi

# The ONNX exports the service's first start and each test process would otherwise make
# (each its own export), and export.json, with which the service serves them without torch;
# skipped while data/models' stamp matches the lock and the export code.
# Not fatal: the service exports at start when this fails. It imports most of what the
# tests and the service do: with bytecode written (our machines set PYTHONDONTWRITEBYTECODE=1;
# uv installs none), they find torch, transformers and onnx compiled.
unset PYTHONDONTWRITEBYTECODE
stamp=$(cat uv.lock app/embedding/{onnx_export,choice,exported}.py | sha256sum)
out=$(mktemp)
if ! HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false \
  .venv/bin/python -m app.embedding --stamp "${stamp%% *}" >"$out" 2>&1; then
  tail -n 20 "$out" >&2
  log "ONNX export failed: the service and the tests will export at start instead"
fi
rm -f "$out"

if [ "${1:-}" = "--spark" ]; then
  ./scripts/fetch_jars.sh
  .venv/bin/python -m spark_jobs.rules_jar >/dev/null
fi
