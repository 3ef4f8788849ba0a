#!/usr/bin/env bash
# bench/image_sizes.sh — sizes of what contrib/docker and contrib/debian ship: the base image,
# the codemcp image (and its node variant when built), each image's layers, the build stage
# that is not shipped, and the .deb. Sizes, not times: one run is the measurement.
#
#   bench/image_sizes.sh IMAGE [NODE_IMAGE] [BUILD_STAGE_IMAGE] [DEB]   # → bench/results/image_sizes.md
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=bench/results/image_sizes.md
image="${1:?usage: bench/image_sizes.sh IMAGE [NODE_IMAGE] [BUILD_STAGE_IMAGE] [DEB]}"
node_image="${2:-}" stage="${3:-}" deb="${4:-}"

mb() { awk -v b="$1" 'BEGIN { printf "%.1f MB", b / 1e6 }'; }
size() { docker image inspect "$1" --format '{{.Size}}'; }
row() { [ -n "$2" ] && echo "| $1 | \`$2\` | $(mb "$(size "$2")") |"; }
layers() {
    echo
    echo "Layers of \`$1\`:"
    echo
    echo '| size | step |'
    echo '|---|---|'
    docker history --no-trunc --format '{{.Size}}	{{.CreatedBy}}' "$1" |
        awk -F'\t' '$1 != "0B" {
            s = $2; gsub(/[|`]/, " ", s); sub(/^ *[0-9]+ [A-Z_]+=[^ ]* /, "", s)
            sub(/^\/bin\/sh -c (#\(nop\) *)?/, "", s); gsub(/  +/, " ", s)
            if (length(s) > 90) s = substr(s, 1, 90) "…"
            printf "| %s | %s |\n", $1, s == "" ? "(debian:bookworm-slim)" : "`" s "`" }'
}

{
    echo "# Image and package sizes"
    echo
    echo "\`bench/image_sizes.sh\` on $(date -u +%Y-%m-%d), Docker $(docker version --format '{{.Server.Version}}'), $(uname -m)."
    echo "Target: the image without node under 150 MB."
    echo
    echo '| what | image | size |'
    echo '|---|---|---|'
    row "base (contrib/docker/make-base.sh)" debian:bookworm-slim
    row "codemcp (shipped)" "$image"
    row "codemcp, WITH_NODE=1 (shipped variant)" "$node_image"
    row "build stage (not shipped)" "$stage"
    if [ -n "$deb" ]; then
        echo "| Debian package | \`$(basename "$deb")\` | $(mb "$(stat -c %s "$deb")") (installed: $(dpkg-deb -f "$deb" Installed-Size) KiB) |"
    fi
    layers "$image"
    echo
    echo "Packages \`$image\` adds to the base (installed size, KiB; /usr/share/doc, man and locale"
    echo "are not installed, as in the base):"
    echo
    pkgs() { docker run --rm --entrypoint dpkg-query "$1" -W -f='${Installed-Size} ${Package}\n' | sort -k2; }
    join -1 2 -2 2 -v 1 <(pkgs "$image") <(pkgs debian:bookworm-slim) |
        awk '{ print $2, $1 }' | sort -rn | awk '{ printf "%s %s, ", $2, $1 } END { print "" }'
    [ -z "$node_image" ] || layers "$node_image"
} >"$out"
cat "$out"
