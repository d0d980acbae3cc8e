#!/usr/bin/env bash
# Installs what is missing, then lints (ruff), type-checks (mypy) and runs every test,
# slow end-to-end ones included. Extra arguments go to pytest (e.g. ./test.sh -k sync -x).
set -euo pipefail
cd "$(dirname "$0")"
./scripts/bootstrap.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
echo "[test] ruff"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
echo "[test] mypy"
.venv/bin/mypy
echo "[test] pytest"
exec .venv/bin/pytest "$@"
