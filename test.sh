#!/usr/bin/env bash
# Installs what is missing, then lints (ruff), type-checks (mypy) and runs every test,
# slow end-to-end ones included. Extra arguments go to pytest (e.g. ./test.sh -k sync -x).
#   ./test.sh --fast [pytest args]   the tier without a JVM, a browser or long end-to-end
#                                    cases (tests not marked spark/slow): well under a minute.
set -euo pipefail
cd "$(dirname "$0")"
fast=0
if [ "${1:-}" = "--fast" ]; then
  fast=1
  shift
fi
./scripts/bootstrap.sh
# The browser test drives Debian's Chromium (Playwright's own browser download cannot work
# here). Installed once; needs root, as CI and the dev machines are.
if [ "$fast" = 0 ] && [ ! -x /usr/bin/chromium ]; then
  echo "[test] installing chromium (Debian package, ~1 min)"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
echo "[test] ruff"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
echo "[test] mypy"
.venv/bin/mypy
echo "[test] pytest"
if [ "$fast" = 1 ]; then
  exec .venv/bin/pytest -m "not spark and not slow" "$@"
fi
exec .venv/bin/pytest "$@"
