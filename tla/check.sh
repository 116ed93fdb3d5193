#!/usr/bin/env bash
# tla/check.sh — model-check every TLA+ config in tla/ with TLC and compare each
# outcome with tla/expectations.tsv.
#
# Usage: tla/check.sh [--update-traces] [CONFIG...]
#
#   TLA2TOOLS_JAR   path to the official tla2tools.jar v1.7.4 (required to run
#                   TLC; when unset, only the configs and expectations.tsv are
#                   checked against each other, and TLC is skipped)
#   TLC_WORKERS     TLC worker threads (default: auto)
#   TLC_JAVA_OPTS   JVM options (default: -XX:+UseParallelGC)
#   JAVA            java binary (default: java on PATH)
#
#   CONFIG...         check only these configs (names as in expectations.tsv)
#   --update-traces   also rewrite tla/testdata/<config>.trace for every config
#                     expected to fail, from a single-worker run (deterministic)
#
# TLC runs in a temporary directory (its states/ directory included) that is
# removed on exit, also on Ctrl-C.  Exit status: 0 when every outcome matches
# its expectation (or when skipped), 1 on any mismatch or TLC error, 2 on
# usage errors.
set -u

TLA_VERSION="v1.7.4"
TLA_SHA256="936a262061c914694dfd669a543be24573c45d5aa0ff20a8b96b23d01e050e88"
TLA_URL="https://github.com/tlaplus/tlaplus/releases/download/${TLA_VERSION}/tla2tools.jar"

here=$(cd "$(dirname "$0")" && pwd)
expectations="$here/expectations.tsv"
testdata="$here/testdata"

update_traces=0
only=()
for arg in "$@"; do
    case "$arg" in
        --update-traces) update_traces=1 ;;
        -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "tla/check.sh: unknown option $arg" >&2; exit 2 ;;
        *) only+=("${arg%.cfg}") ;;
    esac
done

# ---- expectations --------------------------------------------------------
if [ ! -f "$expectations" ]; then
    echo "tla: ERROR: $expectations is missing." >&2
    exit 1
fi
names=(); specs=(); expects=(); scenarios=()
while IFS=$'\t' read -r name spec expect scenario rest; do
    case "$name" in ''|'#'*) continue ;; esac
    if [ -z "${spec:-}" ] || [ -z "${expect:-}" ]; then
        echo "tla: ERROR: malformed line in expectations.tsv: $name" >&2
        exit 1
    fi
    names+=("$name"); specs+=("$spec"); expects+=("$expect"); scenarios+=("${scenario:--}")
done < "$expectations"

problems=0
# Every config must have an expectation and every expectation a config.
for cfg in "$here"/*.cfg; do
    [ -e "$cfg" ] || continue
    base=$(basename "$cfg" .cfg)
    found=0
    for n in "${names[@]}"; do [ "$n" = "$base" ] && found=1 && break; done
    if [ $found -eq 0 ]; then
        echo "tla: ERROR: $base.cfg has no line in expectations.tsv" >&2
        problems=$((problems + 1))
    fi
done
for i in "${!names[@]}"; do
    if [ ! -f "$here/${names[$i]}.cfg" ]; then
        echo "tla: ERROR: expectations.tsv lists ${names[$i]} but tla/${names[$i]}.cfg is missing" >&2
        problems=$((problems + 1))
    fi
    if [ ! -f "$here/${specs[$i]}.tla" ]; then
        echo "tla: ERROR: ${names[$i]}: spec tla/${specs[$i]}.tla is missing" >&2
        problems=$((problems + 1))
    fi
done
for o in "${only[@]+"${only[@]}"}"; do
    found=0
    for n in "${names[@]}"; do [ "$n" = "$o" ] && found=1 && break; done
    if [ $found -eq 0 ]; then
        echo "tla/check.sh: no config named $o in expectations.tsv" >&2
        exit 2
    fi
done

# ---- the jar -------------------------------------------------------------
if [ -z "${TLA2TOOLS_JAR:-}" ]; then
    cat <<EOF
tla: SKIP — TLA2TOOLS_JAR is not set, the TLA+ specs were not model-checked.
     To run them, download the official TLA+ tools ${TLA_VERSION} (Java 11+ needed):
         curl -fLo tla2tools.jar ${TLA_URL}
         sha256sum tla2tools.jar   # must be ${TLA_SHA256}
     and run:  TLA2TOOLS_JAR=\$PWD/tla2tools.jar make tla
     (keep the jar outside the repository).
EOF
    if [ $problems -gt 0 ]; then
        echo "tla: FAIL — $problems problems with the config/expectation files (checked even without TLC)." >&2
        exit 1
    fi
    echo "tla: every config has its expectation (${#names[@]} configs); TLC did not run."
    exit 0
fi
if [ ! -f "$TLA2TOOLS_JAR" ]; then
    echo "tla: ERROR: TLA2TOOLS_JAR=$TLA2TOOLS_JAR does not name a file." >&2
    exit 1
fi
if command -v sha256sum >/dev/null 2>&1; then
    sum=$(sha256sum "$TLA2TOOLS_JAR" | cut -d' ' -f1)
elif command -v shasum >/dev/null 2>&1; then
    sum=$(shasum -a 256 "$TLA2TOOLS_JAR" | cut -d' ' -f1)
else
    echo "tla: ERROR: neither sha256sum nor shasum found; cannot verify TLA2TOOLS_JAR." >&2
    exit 1
fi
if [ "$sum" != "$TLA_SHA256" ]; then
    cat >&2 <<EOF
tla: ERROR: TLA2TOOLS_JAR=$TLA2TOOLS_JAR is not the official tla2tools.jar ${TLA_VERSION}:
     sha256 $sum
     want   $TLA_SHA256
     Download it from ${TLA_URL}
EOF
    exit 1
fi
JAVA=${JAVA:-java}
if ! command -v "$JAVA" >/dev/null 2>&1; then
    echo "tla: ERROR: '$JAVA' not found; TLC needs Java 11 or newer (set JAVA=...)." >&2
    exit 1
fi
workers=${TLC_WORKERS:-auto}
# shellcheck disable=SC2206
java_opts=(${TLC_JAVA_OPTS:--XX:+UseParallelGC})

# ---- temporary directory, cleaned up on any exit -------------------------
tmp=$(mktemp -d "${TMPDIR:-/tmp}/locklab-tla.XXXXXX") || exit 1
tlc_pid=""
cleanup() {
    if [ -n "$tlc_pid" ]; then
        kill "$tlc_pid" 2>/dev/null
        wait "$tlc_pid" 2>/dev/null
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'echo; echo "tla: interrupted" >&2; exit 130' INT
trap 'exit 143' TERM HUP

now() {  # wall clock in nanoseconds when date supports it, else seconds * 1e9
    local t
    t=$(date +%s%N 2>/dev/null)
    case "$t" in *N|'') echo $(( $(date +%s) * 1000000000 )) ;; *) echo "$t" ;; esac
}

# run_tlc SPEC CONFIG WORKERS OUTFILE -> sets tlc_rc
run_tlc() {
    local spec=$1 cfg=$2 nworkers=$3 out=$4
    local dir="$tmp/run-$cfg"
    rm -rf "$dir"
    mkdir -p "$dir"
    cp "$here/$spec.tla" "$here/$cfg.cfg" "$dir/"
    (
        cd "$dir" &&
        exec "$JAVA" "${java_opts[@]}" -cp "$TLA2TOOLS_JAR" tlc2.TLC \
            -workers "$nworkers" -deadlock -cleanup -metadir "$dir/states" \
            -config "$cfg.cfg" "$spec.tla"
    ) > "$out" 2>&1 &
    tlc_pid=$!
    wait "$tlc_pid"
    tlc_rc=$?
    tlc_pid=""
    rm -rf "$dir"
}

# outcome OUTFILE RC -> prints the invariant violated, "none", or "error: ..."
outcome() {
    local out=$1 rc=$2 inv
    inv=$(sed -n 's/^Error: Invariant \([A-Za-z0-9_]*\) is violated\.$/\1/p' "$out" | head -n 1)
    if [ -n "$inv" ]; then
        if [ "$rc" -eq 12 ]; then echo "$inv"; else echo "error: TLC exit $rc after $inv"; fi
    elif grep -q '^Model checking completed\. No error has been found\.' "$out"; then
        if [ "$rc" -eq 0 ]; then echo none; else echo "error: TLC exit $rc"; fi
    else
        local why
        why=$(grep -m 1 -E '^Error:|Exception|error' "$out" | cut -c1-60)
        echo "error: ${why:-TLC exit $rc}"
    fi
}

# save_trace OUTFILE CONFIG SPEC INVARIANT
save_trace() {
    local out=$1 cfg=$2 spec=$3 inv=$4
    mkdir -p "$testdata"
    {
        echo "# TLC counterexample: config $cfg (tla/$cfg.cfg), spec $spec, invariant $inv violated."
        echo "# Written by tla/check.sh --update-traces (TLC ${TLA_VERSION}, one worker, breadth-first: a shortest trace)."
        echo "# Each state lists all variables; 'event' names the step that led to it."
        sed -n '/^Error: Invariant .* is violated\.$/,/^[0-9][0-9,]* states generated/p' "$out" \
            | sed '$d' | sed -e :a -e '/^\n*$/{$d;N;ba' -e '}'
    } > "$testdata/$cfg.trace"
}

printf '%-30s %-16s %-16s %10s %6s %8s  %s\n' config expected got distinct depth seconds result
printf '%-30s %-16s %-16s %10s %6s %8s  %s\n' ------ -------- --- -------- ----- ------- ------
failed=0
checked=0
for i in "${!names[@]}"; do
    name=${names[$i]} spec=${specs[$i]} expect=${expects[$i]}
    if [ ${#only[@]} -gt 0 ]; then
        sel=0
        for o in "${only[@]}"; do [ "$o" = "$name" ] && sel=1; done
        [ $sel -eq 1 ] || continue
    fi
    [ -f "$here/$name.cfg" ] && [ -f "$here/$spec.tla" ] || continue
    out="$tmp/$name.out"
    nworkers=$workers
    if [ $update_traces -eq 1 ] && [ "$expect" != none ]; then nworkers=1; fi
    t0=$(now)
    run_tlc "$spec" "$name" "$nworkers" "$out"
    t1=$(now)
    secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')
    got=$(outcome "$out" "$tlc_rc")
    distinct=$(sed -n 's/.* states generated, \([0-9,]*\) distinct states found.*/\1/p' "$out" | tail -n 1 | tr -d ,)
    depth=$(sed -n 's/^The depth of the complete state graph search is \([0-9]*\)\..*/\1/p' "$out" | tail -n 1)
    checked=$((checked + 1))
    if [ "$got" = "$expect" ]; then
        result=ok
    else
        result=MISMATCH
        failed=$((failed + 1))
    fi
    printf '%-30s %-16s %-16s %10s %6s %8s  %s\n' "$name" "$expect" "${got:0:16}" "${distinct:--}" "${depth:--}" "$secs" "$result"
    if [ "$result" != ok ]; then
        echo "---- TLC output for $name (last 40 lines) ----"
        tail -n 40 "$out" | sed 's/^/    /'
        echo "----"
    elif [ "$expect" != none ]; then
        if [ $update_traces -eq 1 ]; then
            save_trace "$out" "$name" "$spec" "$got"
        elif [ ! -f "$testdata/$name.trace" ]; then
            echo "    note: no saved counterexample tla/testdata/$name.trace (run with --update-traces)"
        fi
    fi
    rm -f "$out"
done

echo
if [ $checked -eq 0 ]; then
    echo "tla: nothing checked" >&2
    exit 1
fi
if [ $failed -gt 0 ] || [ $problems -gt 0 ]; then
    msg="$failed of $checked configs did not meet their expectation"
    [ $problems -gt 0 ] && msg="$msg; $problems problems with the config/expectation files"
    echo "tla: FAIL — $msg." >&2
    exit 1
fi
echo "tla: OK — all $checked configs met their expectation (TLC ${TLA_VERSION})."
exit 0
