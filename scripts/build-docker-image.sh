#!/usr/bin/env bash
# Builds the docker backend's image, locklab/redis, without any registry: a Debian
# bookworm root file system made by debootstrap (minbase, with redis-server,
# redis-sentinel and libfaketime from the machine's own apt sources), the Redis built
# without jemalloc for servers under libfaketime (scripts/build-redis-libc.sh), and a
# small entrypoint; then `docker import`. The tag names the Debian Redis version, so a
# new Redis makes a new image.
#
# Idempotent: when the image is there it only prints its name. Prints the image name on
# stdout; everything else goes to stderr. Needs root (debootstrap) and a Docker engine.
#
# The mirror is read from the machine's apt sources (the one that provides bookworm),
# never named here.
set -euo pipefail

say() { echo "build-docker-image: $*" >&2; }
die() { say "$*"; exit 1; }
cd "$(dirname "$0")/.."

version=$(dpkg-query -W -f='${Version}' redis-server 2>/dev/null) ||
  die "redis-server is not installed from apt (run scripts/install-deps.sh first)"
upstream=${version#*:}
image=locklab/redis:${upstream//[~+]/_}

docker info >/dev/null 2>&1 || die "no Docker engine answers (scripts/docker-engine.sh start)"
if docker image inspect "$image" >/dev/null 2>&1; then
  echo "$image"
  exit 0
fi
[ "$(id -u)" -eq 0 ] || die "debootstrap needs root"
command -v debootstrap >/dev/null 2>&1 || {
  say "installing debootstrap from apt ..."
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
}

# The first deb source of the main archive for bookworm, from sources.list or deb822 files.
mirror=$( {
  grep -hE '^deb\s' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
    awk '$3 == "bookworm" { print $2; exit }'
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    awk 'BEGIN { RS = ""; FS = "\n" }
      /Suites:[^\n]*bookworm( |$|\n)/ && !/Enabled: *no/ {
        for (i = 1; i <= NF; i++) if ($i ~ /^URIs:/) { split($i, u, " "); print u[2]; exit } }' "$f"
  done
} | grep -v security | head -1)
[ -n "$mirror" ] || die "no apt source for bookworm in /etc/apt: cannot run debootstrap"

libc=$(./scripts/build-redis-libc.sh)

work=$(mktemp -d /tmp/locklab-image.XXXXXX)
trap 'rm -rf "$work"' EXIT
root=$work/root
start=$(date +%s)
say "debootstrap bookworm (minbase) into $root ..."
debootstrap --variant=minbase --include=redis-server,redis-sentinel,libfaketime \
  bookworm "$root" "$mirror" >"$work/debootstrap.log" 2>&1 || {
  tail -20 "$work/debootstrap.log" >&2
  die "debootstrap failed"
}
install -m 0755 "$libc" "$root/usr/local/bin/redis-server-libc"
install -m 0755 scripts/docker-entrypoint.sh "$root/usr/local/bin/locklab-entrypoint"
# What the image does not need: apt's lists and caches, documentation.
rm -rf "$root"/var/cache/apt/* "$root"/var/lib/apt/lists/* "$root"/usr/share/doc/* \
  "$root"/usr/share/man/* "$root"/usr/share/locale/*
say "docker import as $image ..."
tar -C "$root" -c . | docker import \
  --change 'ENTRYPOINT ["/usr/local/bin/locklab-entrypoint"]' \
  --change 'WORKDIR /data' \
  --message "locklab redis image: Debian bookworm, redis-server $version" \
  - "$image" >/dev/null
docker tag "$image" locklab/redis:latest
say "built $image in $(($(date +%s) - start)) s, $(docker image inspect -f '{{.Size}}' "$image" | awk '{ printf "%.0f MB", $1 / 1e6 }')"
echo "$image"
