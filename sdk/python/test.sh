#!/usr/bin/env bash
# The Python SDK's tests, against a real `tideline serve` built from this
# checkout (SQLite; PostgreSQL too when TIDELINE_TEST_DATABASE_URL is set).
# PyPI is not reachable here: the dependencies are Debian's packages, used
# through Debian's interpreter, and installed with apt-get when missing.
set -euo pipefail
cd "$(dirname "$0")/../.."

PY=/usr/bin/python3
PACKAGES=(python3-httpx python3-pytest python3-pytest-asyncio)

if ! "$PY" -c 'import httpx, pytest, pytest_asyncio' 2>/dev/null; then
  echo "installing ${PACKAGES[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  # The package lists may be missing on a fresh machine: update once, then retry.
  if ! $SUDO apt-get -o DPkg::Lock::Timeout=300 install -y -qq "${PACKAGES[@]}" >/dev/null; then
    $SUDO apt-get -o DPkg::Lock::Timeout=300 update -qq
    $SUDO apt-get -o DPkg::Lock::Timeout=300 install -y -qq "${PACKAGES[@]}" >/dev/null
  fi
fi

if "$PY" -m mypy --version >/dev/null 2>&1; then
  echo "== mypy --strict (sdk/python)"
  (cd sdk/python && "$PY" -m mypy)
fi

echo "== pytest (sdk/python/tests)"
"$PY" -m pytest sdk/python/tests -q "$@"
