#!/usr/bin/env bash
# Builds the installed Debian redis-server again without jemalloc (MALLOC=libc) and caches
# the binary, for running lock servers under libfaketime: Debian's jemalloc build hangs
# there (jemalloc's start-up calls into the clock functions libfaketime wraps before
# libfaketime is ready). The source is the very Debian package version that is installed,
# so the faketime servers behave like the ordinary ones in every other respect.
#
# Idempotent: when the cached binary exists it only prints its path. Prints the path of
# the binary on stdout; everything else goes to stderr.
#
# Cache: $LOCKLAB_CACHE, else ${XDG_CACHE_HOME:-$HOME/.cache}/locklab (the place the
# process backend looks, see cluster/faketime/faketime.go): the binary is
# redis-libc-<debian version>/redis-server, and redis-libc links to the latest such
# directory. The binary keeps the name redis-server, so that its processes are named
# like every other redis-server (pgrep redis-server finds them).
#
# The deb-src entries are derived from the machine's own apt sources (those that provide
# redis-server) into a private apt state directory: the system's apt configuration is read,
# never written, and no mirror is named here.
set -euo pipefail

say() { echo "build-redis-libc: $*" >&2; }
die() { say "$*"; exit 1; }

version=$(dpkg-query -W -f='${Version}' redis-server 2>/dev/null) ||
  die "redis-server is not installed from apt (run scripts/install-deps.sh first)"
[ -n "$version" ] || die "redis-server is not installed from apt (run scripts/install-deps.sh first)"
upstream=${version#*:} # the epoch is not part of file names

cache=${LOCKLAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/locklab}
dir="$cache/redis-libc-$upstream"
bin="$dir/redis-server"
link="$cache/redis-libc"
done_already() {
  [ -x "$bin" ] || return 1
  ln -sfn "$(basename "$dir")" "$link"
  echo "$bin"
}
done_already && exit 0
mkdir -p "$cache"

# One build at a time (make test and .ci/run may both call this).
exec 9>"$cache/.build-redis-libc.lock"
flock 9
done_already && exit 0

if [ "$(id -u)" -eq 0 ]; then
  sudo=()
elif command -v sudo >/dev/null 2>&1; then
  sudo=(sudo)
else
  sudo=(false)
fi
need=()
command -v dpkg-source >/dev/null 2>&1 || need+=(dpkg-dev)
command -v make >/dev/null 2>&1 || need+=(make)
command -v cc >/dev/null 2>&1 || need+=(gcc)
if [ ${#need[@]} -gt 0 ]; then
  say "installing ${need[*]} from apt ..."
  "${sudo[@]}" apt-get update -qq || die "cannot run apt-get as root; install ${need[*]} yourself"
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "${need[@]}" >/dev/null
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/locklab-redis-src.XXXXXX")
trap 'rm -rf "$work"' EXIT
chmod 755 "$work" # apt downloads as its unprivileged _apt user
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/sources.list.d" "$work/src"

# The archives that provide redis-server, as apt knows them (URIs only, e.g. the one the
# installed version came from and the release's main archive).
mapfile -t uris < <(apt-cache policy redis-server |
  awk '$1 ~ /^[0-9]+$/ && $2 ~ /:\/\// {print $2}' | sort -u)
[ ${#uris[@]} -gt 0 ] || die "apt knows no archive that provides redis-server"
is_uri() { local u; for u in "${uris[@]}"; do [ "${1%/}" = "${u%/}" ] && return 0; done; return 1; }

# deb822 stanzas (*.sources) and one-line entries (*.list) of those archives, as deb-src.
shopt -s nullglob
for f in /etc/apt/sources.list.d/*.sources; do
  awk -v want="$(printf '%s\n' "${uris[@]}")" '
    BEGIN { n = split(want, w, "\n"); for (i = 1; i <= n; i++) { sub(/\/$/, "", w[i]); ok[w[i]] = 1 } }
    function flush() { if (keep && deb) printf "%s\n", stanza; stanza = ""; keep = 0; deb = 0 }
    /^[ \t]*$/ { flush(); next }
    /^#/ { next }
    /^Types:/ { if ($0 ~ /[ \t]deb([ \t]|$)/) deb = 1; $0 = "Types: deb-src" }
    /^URIs:/ { for (i = 2; i <= NF; i++) { u = $i; sub(/\/$/, "", u); if (u in ok) keep = 1 } }
    { stanza = stanza $0 "\n" }
    END { flush() }' "$f" >>"$work/sources.list.d/derived.sources"
done
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
  [ -f "$f" ] || continue
  while read -r type rest; do
    [ "$type" = deb ] || continue
    uri=$rest
    [[ $uri == \[* ]] && uri=${uri#*] }
    uri=${uri%% *}
    is_uri "$uri" && echo "deb-src $rest" >>"$work/sources.list"
  done <"$f"
done
touch "$work/sources.list"
[ -s "$work/sources.list" ] || [ -s "$work/sources.list.d/derived.sources" ] ||
  die "found no apt source entry for ${uris[*]} to derive deb-src from"

apt=(apt-get -q
  -o Dir::Etc::SourceList="$work/sources.list"
  -o Dir::Etc::SourceParts="$work/sources.list.d"
  -o Dir::State::Lists="$work/lists"
  -o Dir::Cache="$work/cache")
say "fetching the source of redis $version ..."
"${apt[@]}" update >&2 || die "apt-get update of the derived deb-src entries failed"
(cd "$work/src" && "${apt[@]}" source "redis=$version" >&2) ||
  die "apt-get source redis=$version failed (is that version still in the archive?)"

srcdir=$(find "$work/src" -mindepth 1 -maxdepth 1 -type d -name 'redis-*' | head -n1)
[ -n "$srcdir" ] || die "apt-get source left no redis-* directory"
say "building $srcdir with MALLOC=libc ..."
start=$(date +%s)
make -C "$srcdir/src" -j"$(nproc)" MALLOC=libc redis-server >"$work/build.log" 2>&1 || {
  tail -n 40 "$work/build.log" >&2
  die "make MALLOC=libc redis-server failed"
}
say "built in $(($(date +%s) - start)) s"

"$srcdir/src/redis-server" --version | grep -q 'malloc=libc' ||
  die "the build does not report malloc=libc: $("$srcdir/src/redis-server" --version)"
mkdir -p "$dir"
cp "$srcdir/src/redis-server" "$bin.tmp"
mv "$bin.tmp" "$bin"
done_already
