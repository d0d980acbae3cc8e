#!/usr/bin/env bash
# Start the API (app.main:app). ./uvicorn.sh ends here after installing and building the
# demo table; the Docker image runs it directly. HOST/PORT pick the socket.
set -euo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
UVICORN=${UVICORN:-uvicorn} PYTHON=${PYTHON:-python}
if [ -x .venv/bin/uvicorn ]; then UVICORN=.venv/bin/uvicorn PYTHON=.venv/bin/python; fi
# WEB_CONCURRENCY (env or .env) API processes behind the one port; more than one needs
# SYNC_MODE=off and QDRANT_URL (refused here, naming the setting: docs/scale-out.md).
workers=$("$PYTHON" -m app.api.processes)
# --http: TCP_NODELAY on every connection, which uvicorn's workers skip (app/api/nodelay.py).
exec "$UVICORN" app.main:app --host "${HOST:-127.0.0.1}" --port "${PORT:-8000}" \
  --workers "$workers" --http app.api.nodelay:NoDelayHttpToolsProtocol \
  --timeout-graceful-shutdown 10 "$@"
