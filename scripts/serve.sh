#!/usr/bin/env bash
# Start the API (app.main:app). ./uvicorn.sh ends here after installing and building the
# demo table; the Docker image runs it directly. HOST/PORT pick the socket.
set -euo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
PYTHON=${PYTHON:-python}
if [ -x .venv/bin/python ]; then PYTHON=.venv/bin/python; fi
# WEB_CONCURRENCY (env or .env) API processes on the one port, each with a socket of its
# own (app/api/serve.py); more than one needs SYNC_MODE=off and QDRANT_URL (refused here,
# naming the setting: docs/scale-out.md).
exec "$PYTHON" -m app.api.serve --host "${HOST:-127.0.0.1}" --port "${PORT:-8000}" "$@"
