#!/usr/bin/env bash
# go-containerregistry's crane and registry, pinned by tools/e2e/registry/go.mod, built
# into the same cache folder (and with the same stamp) as tools/e2e/build.sh builds them,
# but without the rest of the e2e binaries. Prints the folder.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mod="$here/../e2e/registry"
cache="${CACHE_DIR:-$HOME/.cache/modelplane}"
version="$(cd "$mod" && go list -m -f '{{.Version}}' github.com/google/go-containerregistry)"
out="$cache/go-containerregistry-$version"
want="$(cat "$mod/go.mod" "$mod/go.sum" | sha256sum | cut -c1-16)"
if [[ -x "$out/crane" && -x "$out/registry" && "$(cat "$out/.stamp" 2>/dev/null)" == "$want" ]]; then
    echo "$out"
    exit 0
fi
mkdir -p "$out"
for name in registry crane; do
    echo "package: building $name $version into $out" >&2
    (cd "$mod" && GOFLAGS=-mod=readonly nice -n 10 go build -trimpath -ldflags "-s -w" \
        -o "$out/$name.tmp" "github.com/google/go-containerregistry/cmd/$name")
    mv "$out/$name.tmp" "$out/$name"
done
echo "$want" >"$out/.stamp"
echo "$out"
