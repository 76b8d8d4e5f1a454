#!/usr/bin/env bash
# The Debian root filesystem the runtime image is cut from, built with debootstrap from
# Debian's packages (no base image can be pulled here) and cached outside the checkout,
# keyed by suite, variant and package list:
#
#   $CACHE_DIR/debian-<suite>-<key>/rootfs
#
# Prints that rootfs path. The mirror is read from this machine's apt sources at run
# time, so no host name is written anywhere. Needs root (debootstrap, chroot).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/config.sh"
cache="${CACHE_DIR:-$HOME/.cache/modelplane}"

log() { echo "package: $*" >&2; }

# mirror: the first plain Debian URI of the apt sources serving $SUITE (not -security,
# -updates: debootstrap takes one mirror, and only the main archive has the release).
mirror() {
    local f
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [[ -r "$f" ]] || continue
        awk -v s="$SUITE" '$1 == "deb" && $3 == s { print $2; exit }' "$f"
    done
    for f in /etc/apt/sources.list.d/*.sources; do
        [[ -r "$f" ]] || continue
        # deb822 stanzas: remember URIs, print them when the stanza's Suites has $SUITE.
        awk -v s="$SUITE" '
            /^[[:space:]]*$/ { uri = ""; suites = "" }
            $1 == "URIs:"   { uri = $2 }
            $1 == "Suites:" { for (i = 2; i <= NF; i++) if ($i == s) suites = s }
            uri != "" && suites != "" { print uri; exit }' "$f"
    done
}

key="$(printf '%s\n' "$SUITE" "$VARIANT" "$INCLUDE" "$BASE_RECIPE" | sha256sum | cut -c1-12)"
dir="$cache/debian-$SUITE-$key"
if [[ -f "$dir/.done" ]]; then
    echo "$dir/rootfs"
    exit 0
fi

if ! command -v debootstrap >/dev/null; then
    log "installing debootstrap with apt-get"
    apt-get install -y -q debootstrap >&2 || { apt-get update -q >&2 && apt-get install -y -q debootstrap >&2; }
fi
url="$(mirror | head -n1)"
if [[ -z "$url" ]]; then
    echo "package: no apt source serves '$SUITE' in /etc/apt/sources.list*; cannot debootstrap" >&2
    exit 1
fi

rm -rf "$dir"
mkdir -p "$dir"
start=$SECONDS
log "debootstrap --variant=$VARIANT $SUITE (cached in $dir)"
debootstrap --variant="$VARIANT" --include="$INCLUDE" "$SUITE" "$dir/rootfs" "$url" >"$dir/debootstrap.log" 2>&1 || {
    tail -n 30 "$dir/debootstrap.log" >&2
    exit 1
}
# Not reproducible, and nothing at run time reads it.
rm -f "$dir/rootfs/var/cache/ldconfig/aux-cache"
touch "$dir/.done"
log "debootstrap took $((SECONDS - start)) s"
echo "$dir/rootfs"
