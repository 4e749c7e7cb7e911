#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the tests: initdb in a temporary
# folder, run as an unprivileged user (initdb refuses root), on a random free
# loopback port with its unix socket in the same folder.
#
#   scripts/pg.sh start [dir]   starts one; prints shell exports:
#                                 AIR_TEST_PG_DSN  (superuser DSN, database postgres)
#                                 AIR_TEST_PG_DIR  (the folder, for stop)
#   scripts/pg.sh stop <dir>    stops it and removes the folder
#   scripts/pg.sh install       installs Debian's postgresql if it is missing
#
# The tests (internal/pgtest) create a fresh database per test on it.
# The cluster trades durability for speed (fsync off): it is for tests only.
# AIR_PG_DURABLE=1 starts it with PostgreSQL's durable defaults instead
# (fsync, synchronous_commit and full_page_writes on), as go run ./bench
# does to measure what a commit really costs.
set -euo pipefail

# bindir finds PostgreSQL's server binaries: on PATH, or Debian's folder of
# the newest installed major version.
bindir() {
	if command -v initdb >/dev/null && command -v pg_ctl >/dev/null; then
		dirname "$(readlink -f "$(command -v pg_ctl)")"
		return
	fi
	local d
	d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
	if [ -n "$d" ] && [ -x "$d/initdb" ]; then
		echo "$d"
		return
	fi
	return 1
}

# asowner runs a command as the cluster's owner: ourselves, or nobody when
# we are root.
asowner() {
	if [ "$(id -u)" = 0 ]; then
		runuser -u nobody -- "$@"
	else
		"$@"
	fi
}

# closefds closes every descriptor above stderr in this shell (bash's own
# script descriptor, 255, is close-on-exec already): the server must not
# inherit what its caller holds, e.g. the flock of the integration tests'
# lock file, which a leaked server would then hold forever.
closefds() {
	local fd
	for fd in /proc/$BASHPID/fd/*; do
		fd=${fd##*/}
		if [ "$fd" -gt 2 ] && [ "$fd" -ne 255 ]; then
			eval "exec $fd>&-" 2>/dev/null || true
		fi
	done
}

cmd=${1:-}
case "$cmd" in
install)
	if bindir >/dev/null; then exit 0; fi
	echo "installing postgresql from Debian" >&2
	if [ "$(id -u)" = 0 ]; then
		apt-get update -qq >&2 && apt-get install -y -qq postgresql >&2
	else
		sudo apt-get update -qq >&2 && sudo apt-get install -y -qq postgresql >&2
	fi
	;;
start)
	bin=$(bindir) || { echo "pg.sh: PostgreSQL server binaries not found (apt-get install postgresql)" >&2; exit 1; }
	dir=${2:-$(mktemp -d "${TMPDIR:-/tmp}/air-pg.XXXXXX")}
	mkdir -p "$dir"
	if [ "$(id -u)" = 0 ]; then chown nobody "$dir"; fi
	chmod 700 "$dir"
	asowner "$bin/initdb" --pgdata="$dir/data" --username=air --auth=trust \
		--encoding=UTF8 --locale=C --no-sync >"$dir/initdb.log" 2>&1 ||
		{ cat "$dir/initdb.log" >&2; exit 1; }
	durability="-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
	if [ "${AIR_PG_DURABLE:-}" = 1 ]; then durability=""; fi
	# A random port; retried when another process holds it.
	for _ in 1 2 3 4 5 6 7 8; do
		port=$((20000 + RANDOM % 40000))
		if (closefds && asowner "$bin/pg_ctl" --pgdata="$dir/data" --log="$dir/postgres.log" \
			--wait --timeout=30 --silent \
			-o "-p $port -k $dir -c listen_addresses=127.0.0.1 $durability -c max_connections=300" \
			start >/dev/null 2>&1); then
			echo "export AIR_TEST_PG_DSN='postgres://air@127.0.0.1:$port/postgres?sslmode=disable'"
			echo "export AIR_TEST_PG_DIR='$dir'"
			exit 0
		fi
		if ! grep -qi "address already in use\|could not bind\|lock file" "$dir/postgres.log" 2>/dev/null; then
			cat "$dir/postgres.log" >&2
			exit 1
		fi
		: >"$dir/postgres.log"
	done
	echo "pg.sh: no free port found" >&2
	exit 1
	;;
stop)
	dir=${2:?usage: pg.sh stop <dir>}
	if [ -d "$dir/data" ] && bin=$(bindir); then
		asowner "$bin/pg_ctl" --pgdata="$dir/data" --mode=immediate --wait stop >/dev/null 2>&1 || true
	fi
	rm -rf "$dir"
	;;
*)
	echo "usage: pg.sh start [dir] | stop <dir> | install" >&2
	exit 2
	;;
esac
