#!/usr/bin/env bash
# Runs every test of caddy-air on a fresh machine: installs what the tests
# need (Go modules, the npm SDKs, PostgreSQL, Chromium), starts a throwaway
# PostgreSQL cluster, then unit tests with the race detector, a bounded
# fuzz of the request-scan differential, then the integration tests in one real Caddy (-p 1: caddytest uses fixed
# ports), which also drive the official Node SDKs.
set -euo pipefail
cd "$(dirname "$0")/.."

command -v go >/dev/null || { echo "go is required (1.26+)"; exit 1; }
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	echo "installing node and npm from Debian"
	if [ "$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq nodejs npm; else sudo apt-get update -qq && sudo apt-get install -y -qq nodejs npm; fi
fi

# Headless Chromium (Debian's chromium package) for the console's browser
# tests (integration/console_test.go); they fail without it.
if ! command -v chromium >/dev/null; then
	echo "installing chromium from Debian"
	if [ "$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium; else sudo apt-get update -qq && sudo apt-get install -y -qq chromium; fi
fi

# PostgreSQL (Debian's postgresql package) for the shared-storage tests:
# one throwaway cluster for the whole run (scripts/pg.sh: initdb in a
# temporary folder, an unprivileged user, a random loopback port), removed
# on exit. Tests that need it fail without it in CI.
./scripts/pg.sh install
eval "$(./scripts/pg.sh start)"
trap './scripts/pg.sh stop "$AIR_TEST_PG_DIR"' EXIT
echo "postgresql test cluster in $AIR_TEST_PG_DIR"

echo "== go modules"
go mod download

echo "== npm SDKs (integration/node)"
(cd integration/node && npm ci --no-audit --no-fund --loglevel=error)

echo "== vet and format"
go vet ./...
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './integration/node/*'))
if [ -n "$unformatted" ]; then echo "gofmt would change: $unformatted"; exit 1; fi

echo "== unit tests"
go test -race -count=1 $(go list ./... | grep -v /integration)

# The request-scan differential, fuzzed for a bounded time from its seed
# corpus (dialect/internal/reqscan/testdata/fuzz/FuzzInspect and the test's own bodies):
# the gateway reads every request as encoding/json does, or refuses it.
# A finding is written under testdata/fuzz and fails the run. New
# interesting inputs are minimized in at most 200 runs: minimized for the
# default 60 s, a large one stalled the fuzzer past its 45 s, and Go's
# harness failed the step with "context deadline exceeded".
echo "== fuzz differential (45s)"
go test -run='^$' -fuzz='^FuzzInspect$' -fuzztime=45s -fuzzminimizetime=200x ./dialect/internal/reqscan/

echo "== integration tests (real Caddy, loopback, official SDKs)"
log=$(mktemp)
set +e
# Screenshots of the console's browser tests are kept under
# .test-output/_artifacts/<test>/.
mkdir -p .test-output
go test -p 1 -count=1 -timeout 30m -v -artifacts -outputdir "$PWD/.test-output" ./integration/ 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
if grep -q -- '--- SKIP' "$log"; then
	echo "integration tests were skipped; that is a failure here:"
	grep -- '--- SKIP' "$log"
	exit 1
fi
passed=$(grep -c -- '--- PASS' "$log" || true)
failed=$(grep -c -- '--- FAIL' "$log" || true)
rm -f "$log"
echo "integration: $passed passed, $failed failed"
exit "$status"
