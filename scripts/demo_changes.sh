#!/usr/bin/env bash
# Apply the demo's edits and deletes with Spark while ./uvicorn.sh runs, then ask the
# service to sync now (it would anyway within SYNC_INTERVAL_SECONDS).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/bootstrap.sh
.venv/bin/python -m spark_jobs.demo --changes
URL=${URL:-http://${HOST:-127.0.0.1}:${PORT:-8000}}
auth=()
if [ -n "${API_KEY:-}" ]; then auth=(-H "X-API-Key: $API_KEY"); fi
if curl -sf -X POST "${auth[@]}" "$URL/sync" >/dev/null 2>&1; then
  echo "synced: $URL/sync/status"
else
  echo "service not reachable at $URL; it will pick the changes up on its next cycle"
fi
