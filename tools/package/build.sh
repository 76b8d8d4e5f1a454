#!/usr/bin/env bash
# `make package`: the runtime image and every package, without Docker, into $OUT_DIR
# (default _out/):
#
#   image.tar                 the runtime image (an image tarball), linux/amd64
#   function-<kind>.xpkg      the 14 Function packages, each embedding image.tar
#   modelplane.xpkg           the Configuration package (crossplane.yaml + apis/)
#   digests.txt               sha256 of each file: same inputs, same digests
#
# The image is cut from a Debian rootfs (tools/package/base.sh, cached in $CACHE_DIR):
# python3.11, the shared libraries it loads, its stdlib and a venv of our wheels (built
# on the host with pip, installed in the rootfs by chroot); no shell, no apt. It is put
# together by go-containerregistry's crane against its in-memory registry, run in a
# network namespace of its own (crane mutate works only against a registry).
# Needs root (debootstrap, chroot, unshare).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
source "$here/config.sh"
out="${OUT_DIR:-$root/_out}"
work="$out/build"
py="${PY:-$root/.venv/bin/python}"
crank="${CRANK:-$root/bin/crank}"
started=$SECONDS

log() { echo "package: $*" >&2; }
chrooted() { env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root SOURCE_DATE_EPOCH="$SOURCE_DATE_EPOCH" PYTHONHASHSEED=0 chroot "$@"; }

if [[ "$(id -u)" != 0 ]]; then
    echo "package: needs root (debootstrap, chroot, unshare)" >&2
    exit 1
fi
ggcr="$(bash "$here/ggcr.sh")"
base="$(bash "$here/base.sh")"

# Every file's time is clamped to this, and pip compiles the venv's .pyc hash-based (as
# Debian's stdlib ones are) because of it. The Debian release's date: later than the
# files its packages hold, earlier than anything made here, and the same for the same
# base, so the same sources give the same digests whatever the commit or the clock.
if [[ -z "${SOURCE_DATE_EPOCH:-}" ]]; then
    release="$(ls "$base"/var/lib/apt/lists/*_InRelease "$base"/var/lib/apt/lists/*_Release 2>/dev/null | head -n1)"
    SOURCE_DATE_EPOCH="$(date -d "$(sed -n 's/^Date: //p' "$release" | head -n1)" +%s)"
fi
export SOURCE_DATE_EPOCH

rm -rf "$work"
mkdir -p "$work"
rm -f "$out"/*.xpkg "$out/image.tar" "$out/digests.txt"

# 1. Wheels on the host, at the versions the tests ran with (.venv), from a copy of the
#    sources (no build/ or egg-info in the checkout), kept in $work/src; SRC_DIR builds
#    from such a copy instead (the rebuild that checks the digests repeat).
step=$SECONDS
mkdir -p "$work/src"
if [[ -n "${SRC_DIR:-}" ]]; then
    cp -r "$SRC_DIR"/. "$work/src/"
else
    cp -r "$root/pyproject.toml" "$root/README.md" "$root/functions" "$work/src/"
    find "$work/src" -name __pycache__ -prune -exec rm -rf {} +
fi
"$root/.venv/bin/pip" freeze --exclude-editable >"$work/constraints.txt"
"$root/.venv/bin/pip" wheel --quiet --disable-pip-version-check -c "$work/constraints.txt" \
    -w "$work/wheels" "$work/src" >"$work/wheels.log" 2>&1 || { tail -n 30 "$work/wheels.log" >&2; exit 1; }
rm -rf "$work/src/build" "$work/src"/functions/*.egg-info  # the copy stays pristine
log "wheels in $((SECONDS - step)) s: $(ls "$work/wheels" | wc -l) files"

# 2. The venv, installed in a copy of the cached rootfs, where its python is.
step=$SECONDS
cp -a "$base" "$work/rootfs"
cp -r "$work/wheels" "$work/rootfs/tmp/wheels"
chrooted "$work/rootfs" /usr/bin/python3 -m venv "$VENV"
chrooted "$work/rootfs" "$VENV/bin/pip" install --quiet --no-index --no-cache-dir \
    --disable-pip-version-check --find-links /tmp/wheels modelplane >&2
chrooted "$work/rootfs" "$VENV/bin/pip" uninstall --quiet --yes pip setuptools >&2
rm -rf "$work/rootfs/tmp/wheels"
log "venv in $((SECONDS - step)) s"

# 3. The cut and its two layers: base (python, libraries, stdlib) and venv.
step=$SECONDS
"$py" "$here/xpkg.py" cut "$work/rootfs" "$work/base" "$work/venv"
"$py" "$here/xpkg.py" layer "$work/base" "$work/base.tar"
"$py" "$here/xpkg.py" layer "$work/venv" "$work/venv.tar"
log "cut and layers in $((SECONDS - step)) s"

# 4. The image: crane against its in-memory registry on this namespace's loopback.
step=$SECONDS
unshare --net bash -euo pipefail -c '
    exec 2>>"$2/crane.log"
    ggcr="$1" work="$2" image="$3" venv="$4" uid="$5" port="$6"
    ip link set lo up
    "$ggcr/registry" -port 5000 >"$work/registry.log" 2>&1 &
    registry=$!
    trap "kill $registry" EXIT
    for _ in $(seq 50); do "$ggcr/crane" catalog 127.0.0.1:5000 >/dev/null 2>&1 && break; sleep 0.1; done
    ref=127.0.0.1:5000/modelplane-function:build
    "$ggcr/crane" append --oci-empty-base -f "$work/base.tar" -f "$work/venv.tar" -t "$ref" >/dev/null
    "$ggcr/crane" mutate "$ref" --set-platform linux/amd64 \
        --entrypoint "$venv/bin/modelplane-function,all" --user "$uid:$uid" \
        --exposed-ports "$port/tcp" --workdir / \
        --env "PATH=$venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
        --env SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
        -t "$ref" -o "$image" >/dev/null
' image "$ggcr" "$work" "$out/image.tar" "$VENV" "$RUN_UID" "$PORT" || {
    tail -n 30 "$work/crane.log" >&2
    exit 1
}
log "image in $((SECONDS - step)) s"

# 5. The packages.
step=$SECONDS
"$py" "$here/xpkg.py" examples "$work/examples"
for fn in "$root"/package/functions/*/; do
    kind="$(basename "$fn")"
    "$crank" xpkg build --package-root="$fn" --examples-root="$work/examples/$kind" \
        --embed-runtime-image-tarball="$out/image.tar" -o "$out/function-$kind.xpkg" >/dev/null
done
CRANK="$crank" "$py" "$here/xpkg.py" configuration "$out/modelplane.xpkg"
log "packages in $((SECONDS - step)) s"

# The rootfs copy is big and rebuilt every time; the layers stay for inspection.
rm -rf "$work/rootfs"
"$py" "$here/xpkg.py" report "$out" "$((SECONDS - started))"
