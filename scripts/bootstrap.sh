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
# Then site-packages compiled to bytecode: uv, unlike pip, installs no .pyc files, and where
# PYTHONDONTWRITEBYTECODE is set (as on our dev and CI machines) none are ever written, so
# every interpreter compiled torch, transformers and pyspark from source again: ~11 of ~19
# CPU s to import the app's stack, in every test process, subprocess, Spark Python worker and
# service start. Compiling all of it once costs ~70 CPU s (both cores; ~35 s wall). A file
# that does not compile (a few packages ship Python-2 examples) is compiled, or not, at import
# as before. "bytecode" in the stamp makes older venvs compile once too.
want=$( (echo bytecode; cat pyproject.toml requirements.lock) | sha256sum | cut -d' ' -f1)
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$want" ]; then
  log "installing Python dependencies from requirements.lock (first run: ~1-3 min, ~4 GB with torch)"
  start=$SECONDS
  "$VENV/bin/uv" pip install --python "$VENV/bin/python" -q -r requirements.lock
  "$VENV/bin/uv" pip install --python "$VENV/bin/python" -q --no-deps -e .
  site=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
  "$VENV/bin/python" -m compileall -q -q -j 0 "$site" >/dev/null || true
  echo "$want" > "$STAMP"
  log "Python dependencies installed in $((SECONDS - start)) s"
fi

# The Hudi Spark bundle (+ s3a connector) into ~/.m2: ~80 MB + ~280 MB on a fresh machine.
./scripts/fetch_jars.sh

# The embedding model's ONNX exports (fp32, and int8 on a VNNI/AMX CPU) into MODEL_CACHE_DIR
# (data/models), made once here as the service's first start would make them: otherwise
# the first ./uvicorn.sh and every test process on a fresh clone each exported their own.
# Skipped (~0.5 s) while the stamp it leaves there matches the locked versions and the
# export code. Not fatal: the service exports at start-up when this fails.
model_stamp=$( (echo "$want"; cat app/embedding/onnx_export.py app/embedding/choice.py) \
  | sha256sum | cut -d' ' -f1)
export_log=$(mktemp)
if ! HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false \
  "$VENV/bin/python" -m app.embedding --stamp "$model_stamp" 2>"$export_log"; then
  tail -n 20 "$export_log" >&2
  log "ONNX export failed: the service and the tests will export at start instead"
fi
rm -f "$export_log"
