#!/usr/bin/env bash
# Build the DRA CEL oracle (Kubernetes' own selector code) into bin/dra-oracle.
# Modules come from the Go module proxy configured in the environment (go env GOPROXY).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
mkdir -p "$root/bin"
cd "$here"
GOFLAGS=-mod=readonly go build -trimpath -o "$root/bin/dra-oracle" .
echo "built $root/bin/dra-oracle"
