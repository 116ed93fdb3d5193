#!/usr/bin/env bash
# Starts a Docker engine for the docker backend's tests when none answers, and stops the
# one it started. CI calls `start` before the tests and `stop` at the end (also when they
# fail); a machine whose engine already runs is left alone by both.
#
#   docker-engine.sh start   # prints nothing when an engine already answers
#   docker-engine.sh stop    # stops only an engine this script started (by its pid)
#
# The engine is Debian's docker.io, installed when dockerd is missing. Its log and pid
# file live in $LOCKLAB_DOCKERD_DIR (default /tmp/locklab-dockerd).
set -euo pipefail

say() { echo "docker-engine: $*" >&2; }
dir=${LOCKLAB_DOCKERD_DIR:-/tmp/locklab-dockerd}
pidfile=$dir/dockerd.pid

answers() { docker info >/dev/null 2>&1; }

start() {
  if command -v docker >/dev/null 2>&1 && answers; then
    return 0
  fi
  if ! command -v dockerd >/dev/null 2>&1 || ! command -v docker >/dev/null 2>&1; then
    [ "$(id -u)" -eq 0 ] || { say "no Docker engine; run as root: apt-get install -y docker.io"; exit 1; }
    say "installing docker.io from apt ..."
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io >/dev/null
  fi
  [ "$(id -u)" -eq 0 ] || { say "dockerd must be started as root (or start your engine yourself)"; exit 1; }
  mkdir -p "$dir"
  # A dockerd killed hard leaves its own pid file, which stops the next one.
  if [ -f "$dir/dockerd.own.pid" ] && ! kill -0 "$(cat "$dir/dockerd.own.pid")" 2>/dev/null; then
    rm -f "$dir/dockerd.own.pid"
  fi
  say "starting dockerd (log $dir/dockerd.log) ..."
  dockerd --pidfile "$dir/dockerd.own.pid" >"$dir/dockerd.log" 2>&1 &
  echo $! >"$pidfile"
  for _ in $(seq 1 120); do
    if answers; then
      say "dockerd $(cat "$pidfile") answers"
      return 0
    fi
    if ! kill -0 "$(cat "$pidfile")" 2>/dev/null; then
      say "dockerd exited; its log:"
      tail -20 "$dir/dockerd.log" >&2
      rm -f "$pidfile"
      exit 1
    fi
    sleep 0.5
  done
  say "dockerd does not answer after 60 s; its log:"
  tail -20 "$dir/dockerd.log" >&2
  stop
  exit 1
}

stop() {
  [ -f "$pidfile" ] || return 0
  pid=$(cat "$pidfile")
  rm -f "$pidfile"
  kill "$pid" 2>/dev/null || return 0
  for _ in $(seq 1 60); do
    kill -0 "$pid" 2>/dev/null || { say "dockerd $pid stopped"; return 0; }
    sleep 0.5
  done
  say "dockerd $pid did not stop in 30 s: killing it"
  kill -9 "$pid" 2>/dev/null || true
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
