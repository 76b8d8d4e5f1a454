#!/usr/bin/env bash
# Build the e2e control plane's binaries from the Go module proxy, each pinned by a small
# wrapper module next to this script, into $CACHE_DIR keyed by version:
#
#   etcd/      go.etcd.io/etcd/server/v3             -> $CACHE_DIR/etcd-<v>/etcd
#   kube/      k8s.io/kubernetes                     -> $CACHE_DIR/kubernetes-<v>/{kube-apiserver,kube-controller-manager,kubectl}
#   registry/  github.com/google/go-containerregistry -> $CACHE_DIR/go-containerregistry-<v>/{registry,crane}
#
# Crossplane core comes from tools/crossplane/build.sh (make crossplane).
# A binary is rebuilt only when it is missing or its wrapper module (go.mod + go.sum)
# changed. Cold: etcd ~1.5 min, Kubernetes 7-16 min and ~1.8 GB peak, registry ~30 s.
#
#   tools/e2e/build.sh            build what is missing, link bin/kubectl
#   tools/e2e/build.sh --env      build, then print E2E_* path assignments for eval
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cache="${CACHE_DIR:-$HOME/.cache/modelplane}"
print_env=0
[[ "${1:-}" == "--env" ]] && print_env=1

log() { echo "e2e build: $*" >&2; }

# version <module dir> <module path>
version() { (cd "$here/$1" && go list -m -f '{{.Version}}' "$2"); }

# stamp <module dir>: what the binaries were built from.
stamp() { cat "$here/$1/go.mod" "$here/$1/go.sum" | sha256sum | cut -c1-16; }

# build <module dir> <out dir> <ldflags> <name=package>...
build() {
    local mod="$1" out="$2" ldflags="$3"
    shift 3
    local want have=""
    want="$(stamp "$mod")"
    [[ -f "$out/.stamp" ]] && have="$(cat "$out/.stamp")"
    local missing=0 spec
    for spec in "$@"; do [[ -x "$out/${spec%%=*}" ]] || missing=1; done
    if [[ "$missing" == 0 && "$have" == "$want" ]]; then
        return 0
    fi
    mkdir -p "$out"
    for spec in "$@"; do
        local name="${spec%%=*}" pkg="${spec#*=}" start=$SECONDS
        log "building $name ($pkg) into $out"
        (cd "$here/$mod" && GOFLAGS=-mod=readonly nice -n 10 go build -trimpath \
            -ldflags "-s -w $ldflags" -o "$out/$name.tmp" "$pkg")
        mv "$out/$name.tmp" "$out/$name"
        log "built $name in $((SECONDS - start)) s"
    done
    echo "$want" > "$out/.stamp"
}

etcd_v="$(version etcd go.etcd.io/etcd/server/v3)"
kube_v="$(version kube k8s.io/kubernetes)"
ggcr_v="$(version registry github.com/google/go-containerregistry)"
etcd_dir="$cache/etcd-$etcd_v"
kube_dir="$cache/kubernetes-$kube_v"
ggcr_dir="$cache/go-containerregistry-$ggcr_v"

build registry "$ggcr_dir" "" \
    registry=github.com/google/go-containerregistry/cmd/registry \
    crane=github.com/google/go-containerregistry/cmd/crane

build etcd "$etcd_dir" "" etcd=go.etcd.io/etcd/server/v3

# Without these /version says v0.0.0 (and clients warn about the skew).
kmaj="${kube_v#v}"; kmaj="${kmaj%%.*}"
kmin="${kube_v#v*.}"; kmin="${kmin%%.*}"
kube_ld=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    kube_ld+=" -X $pkg.gitVersion=$kube_v -X $pkg.gitMajor=$kmaj -X $pkg.gitMinor=$kmin"
    kube_ld+=" -X $pkg.gitTreeState=clean"
done
build kube "$kube_dir" "$kube_ld" \
    kube-apiserver=k8s.io/kubernetes/cmd/kube-apiserver \
    kube-controller-manager=k8s.io/kubernetes/cmd/kube-controller-manager \
    kubectl=k8s.io/kubernetes/cmd/kubectl

# The fleet's workload clusters (make fleet-up, E2E_FLEET=1): kube-scheduler from the
# same module; KWOK and provider-kubernetes from their wrappers in tools/fleet/.
# Cold: kube-scheduler ~25 s on a warm Go cache, KWOK ~3 min, provider-kubernetes ~4 min.
if [[ "${E2E_FLEET:-0}" == 1 ]]; then
    kwok_v="$(version ../fleet/kwok sigs.k8s.io/kwok)"
    pk_v="$(version ../fleet/provider-kubernetes github.com/crossplane-contrib/provider-kubernetes)"
    kwok_dir="$cache/kwok-$kwok_v"
    pk_dir="$cache/provider-kubernetes-$pk_v"
    build kube "$kube_dir" "$kube_ld" kube-scheduler=k8s.io/kubernetes/cmd/kube-scheduler
    build ../fleet/kwok "$kwok_dir" "" kwok=sigs.k8s.io/kwok/cmd/kwok
    build ../fleet/provider-kubernetes "$pk_dir" "" \
        provider-kubernetes=github.com/crossplane-contrib/provider-kubernetes/cmd/provider
fi

mkdir -p "$root/bin"
ln -sfn "$kube_dir/kubectl" "$root/bin/kubectl"

if [[ "$print_env" == 1 ]]; then
    echo "E2E_ETCD=$etcd_dir/etcd"
    echo "E2E_KUBE_APISERVER=$kube_dir/kube-apiserver"
    echo "E2E_KUBE_CONTROLLER_MANAGER=$kube_dir/kube-controller-manager"
    echo "E2E_KUBECTL=$kube_dir/kubectl"
    echo "E2E_REGISTRY=$ggcr_dir/registry"
    echo "E2E_CRANE=$ggcr_dir/crane"
    if [[ "${E2E_FLEET:-0}" == 1 ]]; then
        echo "E2E_KUBE_SCHEDULER=$kube_dir/kube-scheduler"
        echo "E2E_KWOK=$kwok_dir/kwok"
        echo "E2E_PROVIDER_KUBERNETES=$pk_dir/provider-kubernetes"
    fi
fi
