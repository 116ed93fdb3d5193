#!/bin/sh
# The entrypoint of the locklab/redis image (scripts/build-docker-image.sh).
#
#   locklab-entrypoint server|sentinel [redis options ...]
#
# Redis reads a configuration file only as its first argument, and Sentinel needs one it
# can rewrite: the file is written from $LOCKLAB_CONFIG (newlines as in a file) the first
# time the container starts and kept across restarts, so that what Sentinel learned
# survives them. With $LOCKLAB_FAKETIME set to a clock file, the server is the Redis built
# without jemalloc, under libfaketime reading that file (only the wall clock is faked).
set -eu
mode=${1:-server}
[ $# -gt 0 ] && shift
conf=/data/${mode}.conf
[ -f "$conf" ] || printf '%s\n' "${LOCKLAB_CONFIG:-}" >"$conf"
bin=redis-server
if [ -n "${LOCKLAB_FAKETIME:-}" ]; then
  bin=/usr/local/bin/redis-server-libc
  for lib in /usr/lib/*/faketime/libfaketime.so.1; do export LD_PRELOAD="$lib"; done
  export FAKETIME_TIMESTAMP_FILE="$LOCKLAB_FAKETIME" FAKETIME_NO_CACHE=1 DONT_FAKE_MONOTONIC=1
fi
case "$mode" in
  server) exec "$bin" "$conf" "$@" ;;
  sentinel) exec "$bin" "$conf" --sentinel "$@" ;;
  *) echo "locklab-entrypoint: unknown mode $mode (want server or sentinel)" >&2; exit 2 ;;
esac
