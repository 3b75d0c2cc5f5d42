#!/usr/bin/env bash
# The whole test suite: formatting, vet, generated code, then every Go test on
# SQLite and PostgreSQL, browser tests included (e2e/setup.sh installs
# Chromium and the Playwright driver first when they are missing), and last
# the Python SDK's tests (sdk/python/test.sh installs its Debian packages).
# This is the README's test command; .ci/run prepares the machine and runs it.
set -euo pipefail
cd "$(dirname "$0")/.."

export TIDELINE_TEST_DATABASE_URL="${TIDELINE_TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}"

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' | grep -v '_templ.go$') 2>&1 || true)
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

echo "== templ generate (generated files must be committed and current)"
go tool templ generate >/dev/null 2>&1
if ! git diff --exit-code --stat -- '*_templ.go'; then
  echo "generated templ files differ from the committed ones: run 'go tool templ generate' and commit"; exit 1
fi
untracked=$(git ls-files --others --exclude-standard -- '*_templ.go')
if [ -n "$untracked" ]; then
  echo "generated templ files are not committed: $untracked"; exit 1
fi

echo "== go vet"
go vet ./...

echo "== browser test prerequisites"
e2e/setup.sh

echo "== go test (SQLite and PostgreSQL at ${TIDELINE_TEST_DATABASE_URL%%\?*})"
# The default 10-minute limit per package is too tight for the browser
# tests on a busy 2-core machine (seen: 14 min of e2e with other builds beside).
go test -count=1 -timeout 30m "$@" ./...

echo "== Python SDK (sdk/python, against a real tideline serve on both databases)"
sdk/python/test.sh
