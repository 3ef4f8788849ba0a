#!/usr/bin/env bash
# tests/fuzz/run.sh [seconds=60] [workdir] — builds tests/fuzz/fuzz_jsonfast.c with clang's
# libFuzzer (+ ASan/UBSan) against src/json/jsonfast.c and runs it for a bounded time from a seed
# corpus of JSON-RPC messages (tests/fuzz/corpus). Exit 0 when no difference was found.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
SECS="${1:-60}"
if [ -n "${2:-}" ]; then
    WORK="$2"
else
    WORK="$(mktemp -d /tmp/codemcp-fuzz-XXXXXX)"
    trap 'rm -rf "$WORK"' EXIT # a failure prints the input (and its base64) before this
fi
CC="${CC_FUZZ:-clang}"
command -v "$CC" >/dev/null || { echo "run.sh: $CC not found (clang with libFuzzer needed)" >&2; exit 77; }
mkdir -p "$WORK/corpus"
cp "$ROOT"/tests/fuzz/corpus/* "$WORK/corpus/" 2>/dev/null || true
"$CC" -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -I"$ROOT/src/json" -I"$ROOT/src/common" $(pkg-config --cflags jansson) \
    "$ROOT/tests/fuzz/fuzz_jsonfast.c" "$ROOT/src/json/jsonfast.c" "$ROOT/src/json/jsonscan.c" $(pkg-config --libs jansson) \
    -o "$WORK/fuzz_jsonfast"
cd "$WORK"
./fuzz_jsonfast -max_total_time="$SECS" -max_len=4096 -print_final_stats=1 \
    -dict="$ROOT/tests/fuzz/json.dict" corpus 2>&1 | tail -25
