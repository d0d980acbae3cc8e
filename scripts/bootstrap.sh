#!/usr/bin/env bash
# Installs whatever is missing, idempotently: the virtualenv and Python deps (.venv), and the
# JVM jars for Spark (~/.m2, outside the repo, so reruns and clones share it).
# Used by ./test.sh and ./uvicorn.sh; safe to run by hand.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
STAMP="$VENV/.deps-stamp"

log() { printf '[bootstrap] %s\n' "$*" >&2; }
# The venv is made without pip (below); pip is added only for what needs it.
ensure_pip() {
  "$VENV/bin/python" -m pip --version >/dev/null 2>&1 || "$VENV/bin/python" -m ensurepip >/dev/null
}

# What set-up keeps outside the checkout (shared by clones, like the jars in ~/.m2).
SHARED="${XDG_CACHE_HOME:-$HOME/.cache}/hudi-rag-recommender"

if [ ! -x "$VENV/bin/python" ]; then
  log "creating virtualenv $VENV"
  # Without pip: ensurepip took 3-10 s of each clone's set-up, and uv installs everything.
  # pip is added below only when the pyspark wheel has to be built.
  python3 -m venv --without-pip "$VENV"
fi
# uv resolves and installs the torch/CUDA wheel set in about a minute where pip takes several.
# Its binary is self-contained: installed once with pip, then copied into each new venv.
if [ ! -x "$VENV/bin/uv" ]; then
  if [ -x "$SHARED/bin/uv" ]; then
    cp "$SHARED/bin/uv" "$VENV/bin/uv"
  else
    ensure_pip
    "$VENV/bin/python" -m pip install -q "uv>=0.4,<1"
    mkdir -p "$SHARED/bin"
    cp "$VENV/bin/uv" "$SHARED/bin/.uv.partial" && mv "$SHARED/bin/.uv.partial" "$SHARED/bin/uv"
  fi
fi
# Exactly the versions in requirements.lock (made by scripts/lock.sh from pyproject.toml's
# ranges), then the project itself without resolving anything again.
#
# Bytecode: uv, unlike pip, installs no .pyc files, and where PYTHONDONTWRITEBYTECODE is set
# (as on our dev and CI machines) none are ever written, so every interpreter compiled
# torch, transformers and pyspark from source again: ~11 of ~19 CPU s to import the app's
# stack, in every test process, subprocess, Spark Python worker and service start. A .pth
# file (run by `site` at every start of this venv's Python) turns writing back on, into
# .venv/pycache (sys.pycache_prefix): each module is compiled the first time any process
# imports it, and only what is imported (~5,100 of site-packages' ~20,500 files for the
# whole suite; ~10 s of one core for the service's stack, against ~25 s wall / ~40 CPU s
# for `compileall` of everything, which set-up paid before). Nothing is written into the
# checkout: the app's and tests' own bytecode goes there too. "pycache-prefix" in the
# stamp re-runs this on old venvs.
want=$( (echo pycache-prefix; cat pyproject.toml requirements.lock) | sha256sum | cut -d' ' -f1)
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$want" ]; then
  log "installing Python dependencies from requirements.lock (first run: ~1-3 min, ~4 GB with torch)"
  start=$SECONDS
  # PyPI has pyspark only as a ~317 MB source archive. uv re-downloads and rebuilds it on
  # every install into a new venv (~14 s; measured: a new revision in uv's cache each
  # time, ~650 MB of disk each, 39 GB after a day of clones), so the built wheel is kept
  # outside the checkout, as the jars are in ~/.m2, and offered to uv with --find-links.
  wheels="$SHARED/wheels"
  pyspark_pin=$(grep -m1 '^pyspark==' requirements.lock)
  if ! compgen -G "$wheels/pyspark-${pyspark_pin#pyspark==}-*.whl" >/dev/null; then
    log "building the $pyspark_pin wheel once into $wheels"
    mkdir -p "$wheels"
    built=$(mktemp -d "$wheels/.build-XXXXXX")
    ensure_pip
    "$VENV/bin/python" -m pip wheel -q --no-deps -w "$built" "$pyspark_pin"
    mv "$built"/*.whl "$wheels"/
    rmdir "$built"
  fi
  "$VENV/bin/uv" pip install --python "$VENV/bin/python" -q --find-links "$wheels" \
    -r requirements.lock
  "$VENV/bin/uv" pip install --python "$VENV/bin/python" -q --no-deps -e .
  site=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
  venv_abs=$(cd "$VENV" && pwd)
  prefix=$venv_abs/pycache
  printf 'import sys; sys.dont_write_bytecode = False; sys.pycache_prefix = %s\n' \
    "'$prefix'" > "$site/_hudi_rag_bytecode.pth"
  # What earlier clones' tests and services imported with this lock (./test.sh records it,
  # scripts/bytecode_manifest.py) is compiled now on every core (~5,100 files, ~9 s wall
  # on 2 cores), not by the first test processes one module at a time (a fresh clone's
  # fast tier: 62 s without, 55 s with).
  manifest="$SHARED/bytecode/$want.txt"
  if [ -f "$manifest" ]; then
    (cd "$site" && "$venv_abs/bin/python" -m compileall -q -q -j 0 -i "$manifest") \
      >/dev/null 2>&1 || true
  fi
  echo "$want" > "$STAMP"
  log "Python dependencies installed in $((SECONDS - start)) s"
fi

# The Hudi Spark bundle (+ s3a connector) into ~/.m2: ~80 MB + ~280 MB on a fresh machine.
./scripts/fetch_jars.sh
# The product rules' jar (Java, spark_jobs/jvm) into $SHARED/jars: ~3 s with javac once
# per version of the rules; the Spark jobs build it on first use otherwise.
"$VENV/bin/python" -m spark_jobs.rules_jar >/dev/null

# The embedding model's ONNX exports (fp32, and int8 on a VNNI/AMX CPU) into MODEL_CACHE_DIR
# (data/models), made once here as the service's first start would make them: otherwise
# the first ./uvicorn.sh and every test process on a fresh clone each exported their own.
# Skipped (~0.5 s) while the stamp it leaves there matches the locked versions and the
# export code. Kept outside the checkout too (like the jars in ~/.m2), so another clone on
# this machine copies them (~1 s) instead of exporting (~12-20 s); a new machine exports.
# Not fatal: the service exports at start-up when this fails.
model_stamp=$( (echo "$want"; cat app/embedding/onnx_export.py app/embedding/choice.py) \
  | sha256sum | cut -d' ' -f1)
export_log=$(mktemp)
if ! HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false \
  "$VENV/bin/python" -m app.embedding --stamp "$model_stamp" \
  --shared "$SHARED/onnx" 2>"$export_log"; then
  tail -n 20 "$export_log" >&2
  log "ONNX export failed: the service and the tests will export at start instead"
fi
rm -f "$export_log"
