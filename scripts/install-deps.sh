#!/usr/bin/env bash
# Installs what locklab's tests and demo need on a Debian machine: Redis, ZooKeeper (with
# Java), Node.js and python3-redis from apt; with --browser also Chromium, for the browser tests of the
# pages locklab writes (make test; the demo does not need it).
# Idempotent: does nothing when everything is there.
set -euo pipefail

browser=false
case "${1:-}" in
  --browser) browser=true ;;
  "") ;;
  *) echo "usage: $0 [--browser]" >&2; exit 2 ;;
esac

need=()
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
# redis-tools: redis-cli, and redis-benchmark, which make bench compares the harness with.
{ command -v redis-cli && command -v redis-benchmark; } >/dev/null 2>&1 || need+=(redis-tools)
command -v redis-sentinel >/dev/null 2>&1 || need+=(redis-sentinel)
ls /usr/lib/*/faketime/libfaketime*.so.1 >/dev/null 2>&1 || need+=(libfaketime)
# ZooKeeper ensembles (cluster/zookeeper): Debian's jar, its dependencies (slf4j's simple
# logger among them) and Java.
{ [ -f /usr/share/java/zookeeper.jar ] && [ -f /usr/share/java/slf4j-simple.jar ] && command -v java; } >/dev/null 2>&1 || need+=(zookeeper)
# The Node.js example client of the subprocess protocol (clients/node).
command -v node >/dev/null 2>&1 || need+=(nodejs)
command -v npm >/dev/null 2>&1 || need+=(npm)
# redis-py's Lock (clients/python), run by Debian's interpreter /usr/bin/python3.
/usr/bin/python3 -c 'import redis' >/dev/null 2>&1 || need+=(python3-redis)
# Headless Chromium for the browser tests (internal/browsertest), Debian's package.
if $browser; then
  command -v chromium >/dev/null 2>&1 || need+=(chromium)
fi
[ ${#need[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ]; then
  sudo=()
elif command -v sudo >/dev/null 2>&1; then
  sudo=(sudo)
else
  echo "locklab needs: ${need[*]}; run as root: apt-get install -y ${need[*]}" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "locklab needs: ${need[*]} (no apt-get here: install them with your package manager," >&2
  echo "or point LOCKLAB_REDIS_SERVER at a redis-server binary)" >&2
  exit 1
fi
echo "installing ${need[*]} from apt ..." >&2
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "${need[@]}" >/dev/null
