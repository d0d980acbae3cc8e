#!/usr/bin/env bash
# The local demo in one command: installs what is missing, builds the demo Hudi table with
# Spark if there is none, then starts the API (sync on) at http://$HOST:$PORT.
# Honours HOST, PORT and every setting in .env.example. A second run resumes the index
# from disk (data/qdrant) instead of re-embedding.
set -euo pipefail
cd "$(dirname "$0")"
# Bytecode is written (our machines set PYTHONDONTWRITEBYTECODE=1): uv installs none.
unset PYTHONDONTWRITEBYTECODE
./scripts/bootstrap.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
HOST=${HOST:-127.0.0.1}
PORT=${PORT:-8000}

# Spark (a JVM, its jars and the rules' jar) only when the table is missing: the API itself
# reads it with hudi-rs.
table=$(.venv/bin/python -c 'from app.core.config import get_settings
print(get_settings().hudi_table_path)')
if [ ! -d "$table/.hoodie" ]; then
  ./scripts/bootstrap.sh --spark
  .venv/bin/python -m spark_jobs.demo
fi

cat >&2 <<MSG
[uvicorn.sh] starting on http://$HOST:$PORT  (first start embeds the catalog: watch the
             'sync bootstrap: N/M, ETA' lines; later starts resume from data/qdrant)
  page:     http://$HOST:$PORT/
  API docs: http://$HOST:$PORT/docs
  status:   curl -s http://$HOST:$PORT/sync/status
  ask:      curl -s -X POST http://$HOST:$PORT/recommend -H 'content-type: application/json' \\
              -d '{"query": "wireless headphones for swimming"}'
  change:   ./scripts/demo_changes.sh   (Spark edits/deletes products while this runs)
MSG
HOST=$HOST PORT=$PORT exec ./scripts/serve.sh "$@"
