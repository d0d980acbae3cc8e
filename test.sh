#!/usr/bin/env bash
# Installs what is missing, then lints (ruff), type-checks (mypy, beside pytest) and runs
# every test, slow end-to-end ones included. Extra arguments go to pytest
# (e.g. ./test.sh -k sync -x).
# Both tiers use TEST_WORKERS pytest-xdist workers (`--dist loadfile` keeps each test file
# on one worker, so its module fixtures are built once), each full-tier worker with its own
# SparkSession. Default 3 on 2 cores: many tests wait on deadlines and subprocesses, and a
# third worker fills that time (measured in BENCHMARKS.md, set-up and suite).
# TEST_WORKERS=0 runs in one process (for --pdb, or one core).
#   ./test.sh --fast [pytest args]   the tier without a JVM, a browser or long end-to-end
#                                    cases (tests not marked spark/slow); its set-up needs
#                                    no java, javac or mvn either.
set -euo pipefail
cd "$(dirname "$0")"
fast=0
if [ "${1:-}" = "--fast" ]; then
  fast=1
  shift
fi
# Bytecode is written (our machines set PYTHONDONTWRITEBYTECODE=1): uv installs none, so
# otherwise every test process and Spark worker compiled torch and pyspark again.
unset PYTHONDONTWRITEBYTECODE
if [ "$fast" = 1 ]; then ./scripts/bootstrap.sh; else ./scripts/bootstrap.sh --spark; fi
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
# mypy runs beside pytest, its report printed after pytest's.
mypy_log=$(mktemp)
.venv/bin/mypy >"$mypy_log" 2>&1 &
mypy_pid=$!
trap '[ -z "$mypy_pid" ] || kill "$mypy_pid" 2>/dev/null; rm -f "$mypy_log"' EXIT
# Spark's classes archived once for every test JVM (tests/jvm_archive.py; ~50 s when
# missing, beside mypy).
if [ "$fast" = 0 ]; then .venv/bin/python -m tests.jvm_archive; fi
echo "[test] pytest (mypy running beside it)"
pytest_rc=0
tier=()
if [ "$fast" = 1 ]; then tier=(-m "not spark and not slow"); fi
workers=${TEST_WORKERS:-3}
if [ "$workers" = 0 ]; then
  .venv/bin/pytest "${tier[@]}" "$@" || pytest_rc=$?
else
  # --no-loadscope-reorder: files in collection order, longest first (tests/conftest.py);
  # --durations: the 25 slowest steps, so the suite's time stays in view.
  .venv/bin/pytest -n "$workers" --dist loadfile --no-loadscope-reorder --durations=25 "${tier[@]}" "$@" \
    || pytest_rc=$?
fi
mypy_rc=0
wait "$mypy_pid" || mypy_rc=$?
mypy_pid=
echo "[test] mypy"
cat "$mypy_log"
if [ "$mypy_rc" != 0 ] && [ "$pytest_rc" = 0 ]; then
  exit "$mypy_rc"
fi
exit "$pytest_rc"
