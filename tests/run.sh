#!/usr/bin/env bash
# tests/run.sh — THE test command: installs the pinned npm peers, builds, runs every meson test
# and ends with exactly one line "N passed, N failed[, N skipped]". Exit status 0 only when
# nothing failed.
#
#   ./tests/run.sh                 build/ (debugoptimized)
#   ./tests/run.sh --asan          build-asan/ with -Db_sanitize=address,undefined
#   ./tests/run.sh --all           both, counts summed
#   ./tests/run.sh --valgrind      build/, then unit tests under valgrind and the e2e tests
#                                  with codemcp under valgrind (CODEMCP_WRAPPER)
#   ./tests/run.sh [...] -- ARGS   extra arguments for `meson test` (e.g. --suite unit, a name)
#
# Options: --builddir DIR (plain build dir, default build), --npm-ci (force a fresh npm ci).
# Network: only the npm registry, and only when tests/node_modules does not match the lockfile.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 2

want_plain=1 want_asan=0 want_valgrind=0 force_npm=0
builddir=build
meson_test_args=()
while [ $# -gt 0 ]; do
    case "$1" in
    --asan) want_plain=0 want_asan=1 ;;
    --all) want_plain=1 want_asan=1 ;;
    --valgrind) want_valgrind=1 ;;
    --builddir) builddir="${2:?--builddir needs a directory}"; shift ;;
    --npm-ci) force_npm=1 ;;
    -h | --help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --) shift; meson_test_args=("$@"); break ;;
    *) echo "run.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done

say() { printf '\n== %s\n' "$*" >&2; }
die() { echo "run.sh: $*" >&2; echo "0 passed, 1 failed"; exit 1; }

# --- npm peers ---------------------------------------------------------------------------------
# Every tests/ directory with a package-lock.json (tests/ itself: the SDK and the reference
# servers; subdirectories such as tests/conformance may pin their own tools).
# `npm ci` deletes and reinstalls node_modules; skip it when the installed tree already matches
# package-lock.json exactly (same packages, versions and integrity), so repeated runs are
# offline and do not disturb a concurrent run.
npm_in_sync() { # dir
    [ -f "$1/node_modules/.package-lock.json" ] || return 1
    command -v node >/dev/null || return 1
    (cd "$1" && node -e '
      const want = require("./package-lock.json").packages || {};
      const have = require("./node_modules/.package-lock.json").packages || {};
      // Optional packages for other platforms (e.g. claude-code-darwin-arm64) are never installed.
      const keys = Object.keys(want).filter((k) => k !== "" && !(want[k].optional && !have[k]));
      const same = (k) => have[k] && have[k].version === want[k].version && have[k].integrity === want[k].integrity;
      process.exit(keys.every(same) && Object.keys(have).every((k) => k in want) ? 0 : 1);
    ' 2>/dev/null)
}

for lock in tests/package-lock.json tests/*/package-lock.json; do
    [ -f "$lock" ] || continue
    d="$(dirname "$lock")"
    if ! command -v npm >/dev/null; then
        echo "run.sh: npm not found; $d needs it (run ./install.sh)" >&2
    elif [ "$force_npm" = 1 ] || ! npm_in_sync "$d"; then
        say "npm ci ($d)"
        (cd "$d" && npm ci --no-audit --no-fund --loglevel=error) >&2 || die "npm ci failed in $d"
    else
        say "$d/node_modules matches package-lock.json; skipping npm ci"
    fi
done

# --- build and test one directory ----------------------------------------------------------------
total_pass=0 total_fail=0 total_skip=0

# Counts results from meson's machine-readable logs. Prints "pass fail skip".
count_results() {
    /usr/bin/python3 - "$@" <<'EOF'
import json, sys
ok = fail = skip = 0
lines = []
for path in sys.argv[1:]:
    try:
        lines += open(path, encoding="utf-8").read().splitlines()
    except FileNotFoundError:  # the unexpanded glob when no test ran
        pass
for line in lines:
    if not line.strip():
        continue
    r = json.loads(line).get("result", "")
    if r in ("OK", "EXPECTEDFAIL"):
        ok += 1
    elif r == "SKIP":
        skip += 1
    else:  # FAIL, UNEXPECTEDPASS, TIMEOUT, ERROR
        fail += 1
print(ok, fail, skip)
EOF
}

setup_dir() { # dir, setup options...
    local dir="$1"
    shift
    say "configure $dir"
    if [ -f "$dir/meson-private/coredata.dat" ]; then
        # Always reconfigure: meson.build uses fs.exists() for sources that appear later.
        meson setup --reconfigure "$dir" "$@" >&2 || return 1
    else
        meson setup "$dir" "$@" >&2 || return 1
    fi
    say "build $dir"
    ninja -C "$dir" >&2
}

test_dir() { # dir, label, meson test arguments...
    local dir="$1" label="$2" rc=0 counts p f s
    shift 2
    say "meson test -C $dir $* ($label)"
    # meson writes testlog.json, or testlog-<wrapper>.json with --wrapper.
    rm -f "$dir"/meson-logs/testlog*.json
    meson test -C "$dir" --num-processes 2 --print-errorlogs "$@" "${meson_test_args[@]}" >&2 || rc=$?
    counts=$(count_results "$dir"/meson-logs/testlog*.json) || counts="0 1 0"
    read -r p f s <<<"$counts"
    # meson failed without recording a failing test (e.g. a build error): count it.
    if [ "$rc" != 0 ] && [ "$f" = 0 ]; then f=1; fi
    echo "$label: $p passed, $f failed, $s skipped" >&2
    total_pass=$((total_pass + p)) total_fail=$((total_fail + f)) total_skip=$((total_skip + s))
}

if [ "$want_plain" = 1 ]; then
    if setup_dir "$builddir"; then
        test_dir "$builddir" "$builddir"
        if [ "$want_valgrind" = 1 ]; then
            command -v valgrind >/dev/null || die "valgrind not installed"
            vg="valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite --suppressions=$ROOT/tests/valgrind.supp"
            # C unit tests run under valgrind directly; in the e2e suite the harness starts the
            # codemcp binary under it (node itself is not worth checking).
            test_dir "$builddir" "$builddir valgrind unit" --suite unit --wrapper "$vg" --timeout-multiplier 8
            CODEMCP_WRAPPER="$vg" CODEMCP_TEST_TIME_FACTOR=${CODEMCP_TEST_TIME_FACTOR:-8} \
                test_dir "$builddir" "$builddir valgrind e2e" --suite e2e --timeout-multiplier 8
        fi
    else
        echo "$builddir: configure or build failed" >&2
        total_fail=$((total_fail + 1))
    fi
fi
if [ "$want_asan" = 1 ]; then
    # clang: gcc 12 reports a bogus -Wformat-truncation under the sanitizers, and clang's
    # ASan/LSan is the one verified with embedded CPython (tests/worker/lsan.supp).
    asan_cc=gcc
    command -v clang >/dev/null && asan_cc=clang
    if CC="$asan_cc" setup_dir build-asan -Db_sanitize=address,undefined -Db_lundef=false; then
        LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$ROOT/tests/worker/lsan.supp:print_suppressions=0} \
        ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:detect_stack_use_after_return=1:malloc_context_size=2} \
        UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1} \
        CODEMCP_TEST_TIME_FACTOR=${CODEMCP_TEST_TIME_FACTOR:-2} CODEMCP_TEST_SANITIZER=1 \
            test_dir build-asan build-asan --timeout-multiplier 2
    else
        echo "build-asan: configure or build failed" >&2
        total_fail=$((total_fail + 1))
    fi
fi

line="$total_pass passed, $total_fail failed"
[ "$total_skip" -gt 0 ] && line="$line, $total_skip skipped"
echo "$line"
[ "$total_fail" -eq 0 ]
