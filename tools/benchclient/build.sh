#!/usr/bin/env bash
# Build the Go benchmark client (main.go, pinned by go.mod next to this script) into
# $CACHE_DIR/benchclient-<digest of its sources>/benchclient and link it as bin/benchclient.
# Modules come from the Go module proxy configured in the environment (go env GOPROXY);
# the build is skipped when the cached binary exists.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$here"

key="$(cat go.mod go.sum main.go | sha256sum | cut -c1-16)"
cache="${CACHE_DIR:-$HOME/.cache/modelplane}"
out="$cache/benchclient-$key/benchclient"

if [[ ! -x "$out" ]]; then
    mkdir -p "$(dirname "$out")"
    GOFLAGS=-mod=readonly go build -trimpath -o "$out.tmp" .
    mv "$out.tmp" "$out"
    echo "built $out"
fi

mkdir -p "$root/bin"
ln -sfn "$out" "$root/bin/benchclient"
echo "linked $root/bin/benchclient -> $out"
