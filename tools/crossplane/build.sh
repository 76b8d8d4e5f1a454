#!/usr/bin/env bash
# Build Crossplane core (cmd/crossplane, pinned by go.mod next to this script) into
# $CACHE_DIR/crossplane-<version>/crossplane and link it as bin/crossplane.
#
# Offline rendering runs its hidden `crossplane internal render` command: Crossplane's
# real composite reconciler against an in-memory client (functions/modelplane/dev/engine.py).
# Modules come from the Go module proxy configured in the environment (go env GOPROXY).
# The build takes 4-7 minutes cold; it is skipped when the cached binary exists.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$here"

version="$(go list -m -f '{{.Version}}' github.com/crossplane/crossplane/v2)"
cache="${CACHE_DIR:-$HOME/.cache/modelplane}"
out="$cache/crossplane-$version/crossplane"

if [[ ! -x "$out" ]]; then
    mkdir -p "$(dirname "$out")"
    start=$SECONDS
    GOFLAGS=-mod=readonly go build -trimpath \
        -ldflags "-s -w -X github.com/crossplane/crossplane-runtime/v2/pkg/version.version=$version" \
        -o "$out.tmp" github.com/crossplane/crossplane/v2/cmd/crossplane
    mv "$out.tmp" "$out"
    echo "built $out in $((SECONDS - start)) s"
fi

mkdir -p "$root/bin"
ln -sfn "$out" "$root/bin/crossplane"
echo "linked $root/bin/crossplane -> $out"
