#!/usr/bin/env bash
# Runs the fault suite of issue #15 in its full form: kill -9 rounds,
# disk-full rounds (needs root: it mounts a tmpfs), deep-nesting bodies,
# 2,000 slow bodies, and reloads under load against bare Caddy. Each
# scenario drives separate gateway processes on loopback and stops them by
# PID. The summary table is printed at the end. CI runs the same tests in
# reduced form as part of ./scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

command -v go >/dev/null || { echo "go is required (1.26+)"; exit 1; }
if [ "$(id -u)" != 0 ]; then
	echo "the disk-full scenario mounts a tmpfs: run as root"
	exit 1
fi

log=$(mktemp)
set +e
# The integration package uses fixed ports: one run at a time.
lock=()
if command -v flock >/dev/null; then lock=(flock /tmp/air-integration.lock); fi
FAULTS_FULL=1 "${lock[@]}" \
	go test -p 1 -count=1 -timeout 30m -v -run '^TestFault' ./integration/ 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
if grep -q -- '--- SKIP' "$log"; then
	echo "fault scenarios were skipped; that is a failure here:"
	grep -- '--- SKIP' "$log"
	status=1
fi
rm -f "$log"
exit "$status"
