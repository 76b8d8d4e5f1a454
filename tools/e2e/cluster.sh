#!/usr/bin/env bash
# A real control plane on this machine, with no Docker: etcd, kube-apiserver,
# kube-controller-manager, a local OCI registry and Crossplane core (with its webhooks),
# all on loopback inside a private network namespace, plus what stands in for the rest
# of a Crossplane install: our Python functions behind mTLS, an External package
# runtime, and fake providers. Then the packages `make package` built are pushed and installed.
#
#   tools/e2e/cluster.sh up        start everything; the Configuration ends up Healthy
#   tools/e2e/cluster.sh down      stop every process it started, by pid
#   tools/e2e/cluster.sh status    which processes are alive
#   tools/e2e/cluster.sh exec CMD  run CMD inside the network namespace, KUBECONFIG set
#   tools/e2e/cluster.sh kubectl … kubectl against the control plane (also: tools/e2e/kubectl)
#
# State (PKI, data, logs, pids) lives in $E2E_STATE (default build/e2e/): it is
# wiped by the next `up`. Binaries come from tools/e2e/build.sh and
# tools/crossplane/build.sh (cached in $CACHE_DIR).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
state="${E2E_STATE:-$root/build/e2e}"
py="${E2E_PYTHON:-$root/.venv/bin/python}"

# Ports, all on 127.0.0.1 inside the private network namespace.
ETCD_PORT=2379 ETCD_PEER_PORT=2380 APISERVER_PORT=6443 REGISTRY_PORT=5000
FUNCTION_PORT=9443 XP_METRICS_PORT=8080 XP_PROBE_PORT=8081 XP_WEBHOOK_PORT=9444
# Crossplane's webhooks (the Usage deletion guard): the API server reaches them through
# the Service crossplane-webhooks, resolved to its EndpointSlice (no kube-proxy here), whose
# endpoint may not be a loopback address, so the namespace's lo also carries this one.
WEBHOOK_IP=10.200.0.1 WEBHOOK_SERVICE=crossplane-webhooks WEBHOOK_SERVICE_PORT=9443

# Process supervision (start, probe, stop by pid file): tools/lib/procs.sh.
PROCS_DIR="$state" PROCS_TAG=cluster PROCS_PREFIX=()
# shellcheck source=../lib/procs.sh
source "$root/tools/lib/procs.sh"
log() { procs_log "$@"; }
die() { procs_die "$@"; }

netns_pid() { procs_pid netns; }

# in_ns CMD...: run CMD in the private network namespace.
in_ns() { nsenter -t "$(netns_pid)" -n -- "$@"; }

# start NAME CMD...: start CMD in the namespace, in the background; record its pid.
start() { procs_start "$@"; }

# Stop in reverse start order: the namespace holder, started first, goes last.
down() { procs_stop_all; }

pki() {
    local d="$state/pki"
    mkdir -p "$d"
    openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=modelplane-e2e-ca" \
        -keyout "$d/ca.key" -out "$d/ca.crt" 2>/dev/null
    cat >"$d/apiserver.ext" <<EOF
subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc
extendedKeyUsage=serverAuth
EOF
    openssl req -newkey rsa:2048 -nodes -subj "/CN=kube-apiserver" \
        -keyout "$d/apiserver.key" -out "$d/apiserver.csr" 2>/dev/null
    openssl x509 -req -in "$d/apiserver.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" \
        -CAcreateserial -days 30 -extfile "$d/apiserver.ext" -out "$d/apiserver.crt" 2>/dev/null
    openssl genrsa -out "$d/sa.key" 2048 2>/dev/null
    openssl rsa -in "$d/sa.key" -pubout -out "$d/sa.pub" 2>/dev/null
    local token
    token="$(openssl rand -hex 24)"
    echo "$token,admin,admin,system:masters" >"$d/tokens.csv"
    cat >"$state/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: modelplane-e2e
  cluster:
    server: https://127.0.0.1:$APISERVER_PORT
    certificate-authority: $d/ca.crt
users:
- name: admin
  user:
    token: $token
contexts:
- name: modelplane-e2e
  context: {cluster: modelplane-e2e, user: admin}
current-context: modelplane-e2e
EOF
    log "PKI made (openssl)"
}

# The function server's certificate, signed by Crossplane's root CA (Secret
# crossplane-root-ca, made by `crossplane core init`), for 127.0.0.1 and localhost.
function_certs() {
    local d="$state/functions-tls" k=(in_ns "$E2E_KUBECTL" --kubeconfig "$state/kubeconfig")
    mkdir -p "$d"
    "${k[@]}" -n crossplane-system get secret crossplane-root-ca -o jsonpath='{.data.tls\.crt}' | base64 -d >"$d/ca.crt"
    "${k[@]}" -n crossplane-system get secret crossplane-root-ca -o jsonpath='{.data.tls\.key}' | base64 -d >"$d/ca.key"
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n' >"$d/server.ext"
    openssl req -newkey rsa:2048 -nodes -subj "/CN=modelplane-functions" \
        -keyout "$d/tls.key" -out "$d/server.csr" 2>/dev/null
    openssl x509 -req -in "$d/server.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" \
        -CAcreateserial -days 30 -extfile "$d/server.ext" -out "$d/tls.crt" 2>/dev/null
    rm -f "$d/ca.key" "$d/server.csr"
    local c="$state/crossplane/tls-client"
    mkdir -p "$c"
    for key in tls.crt tls.key ca.crt; do
        "${k[@]}" -n crossplane-system get secret crossplane-tls-client \
            -o jsonpath="{.data.${key//./\\.}}" | base64 -d >"$c/$key"
    done
    log "function server certificate signed by crossplane-root-ca"
}

# Crossplane's webhook server: its certificate (Secret crossplane-tls-server, made by
# `crossplane core init` for the Service, whose CA init put in the
# ValidatingWebhookConfiguration crossplane-no-usages) in the folder a pod would mount,
# and the Service with the EndpointSlice a cluster's controllers would publish for it:
# port 9443 to the webhook port on $WEBHOOK_IP, where Crossplane listens (every interface).
webhook_endpoint() {
    local d="$state/crossplane/tls-server" k=(in_ns "$E2E_KUBECTL" --kubeconfig "$state/kubeconfig")
    mkdir -p "$d"
    for key in tls.crt tls.key; do
        "${k[@]}" -n crossplane-system get secret crossplane-tls-server \
            -o jsonpath="{.data.${key//./\\.}}" | base64 -d >"$d/$key"
    done
    "${k[@]}" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Service
metadata: {name: $WEBHOOK_SERVICE, namespace: crossplane-system}
spec:
  ports: [{protocol: TCP, port: $WEBHOOK_SERVICE_PORT, targetPort: $XP_WEBHOOK_PORT}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: $WEBHOOK_SERVICE
  namespace: crossplane-system
  labels: {kubernetes.io/service-name: $WEBHOOK_SERVICE}
addressType: IPv4
endpoints: [{addresses: ["$WEBHOOK_IP"], conditions: {ready: true}}]
ports: [{name: "", protocol: TCP, port: $XP_WEBHOOK_PORT}]
EOF
    log "webhook Service $WEBHOOK_SERVICE -> $WEBHOOK_IP:$XP_WEBHOOK_PORT"
}

up() {
    if procs_alive "$(netns_pid)"; then
        die "already up (tools/e2e/cluster.sh down first); KUBECONFIG=$state/kubeconfig"
    fi
    local t0=$SECONDS
    rm -rf "$state"
    mkdir -p "$state"/{logs,pids,etcd,crossplane/xpkg,crossplane/xfn}
    # Whatever happens from here, a failed `up` leaves no process behind.
    trap 'rc=$?; if [[ $rc != 0 ]]; then log "up failed ($rc): stopping what started"; down; fi' EXIT
    trap 'exit 130' INT TERM

    eval "$(bash "$here/build.sh" --env)"
    export E2E_KUBECTL
    local xp_dir xp_version
    xp_dir="$(cd "$root/tools/crossplane" && go list -m -f '{{.Dir}}' github.com/crossplane/crossplane/v2)"
    xp_version="$(cd "$root/tools/crossplane" && go list -m -f '{{.Version}}' github.com/crossplane/crossplane/v2)"
    local crossplane="${CACHE_DIR:-$HOME/.cache/modelplane}/crossplane-$xp_version/crossplane"
    [[ -x "$crossplane" ]] || die "no $crossplane: run make crossplane"
    pki
    E2E_STATE="$state" "$py" -m e2e.modules

    # The namespace holder: `unshare` execs `sleep`, so its pid is the process in the
    # namespace. Every process started after it runs inside (nsenter execs the command).
    start netns unshare -n sleep infinity
    PROCS_PREFIX=(nsenter -t "$(netns_pid)" -n --)
    sleep 0.2
    in_ns ip link set lo up
    in_ns ip addr add "$WEBHOOK_IP/32" dev lo
    log "private network namespace held by pid $(netns_pid)"

    local p="$state/pki"
    start etcd "$E2E_ETCD" --name e2e --data-dir "$state/etcd" --unsafe-no-fsync \
        --listen-client-urls "http://127.0.0.1:$ETCD_PORT" \
        --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
        --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
        --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
        --initial-cluster "e2e=http://127.0.0.1:$ETCD_PEER_PORT" \
        --listen-metrics-urls "http://127.0.0.1:2381" --log-level warn
    start kube-apiserver "$E2E_KUBE_APISERVER" \
        --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
        --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$APISERVER_PORT" \
        --tls-cert-file "$p/apiserver.crt" --tls-private-key-file "$p/apiserver.key" \
        --client-ca-file "$p/ca.crt" --token-auth-file "$p/tokens.csv" \
        --service-account-issuer https://kubernetes.default.svc.cluster.local \
        --service-account-key-file "$p/sa.pub" --service-account-signing-key-file "$p/sa.key" \
        --service-cluster-ip-range 10.96.0.0/16 --authorization-mode RBAC \
        --endpoint-reconciler-type none --enable-priority-and-fairness=false \
        --enable-aggregator-routing=true \
        --profiling=false
    local k=(in_ns "$E2E_KUBECTL" --kubeconfig "$state/kubeconfig")
    procs_wait kube-apiserver 90 "${k[@]}" get --raw /readyz
    start kube-controller-manager "$E2E_KUBE_CONTROLLER_MANAGER" \
        --kubeconfig "$state/kubeconfig" --leader-elect=false \
        --controllers garbage-collector-controller,namespace-controller,serviceaccount-controller,serviceaccount-token-controller \
        --service-account-private-key-file "$p/sa.key" --root-ca-file "$p/ca.crt" \
        --bind-address 127.0.0.1 --secure-port 10257 --profiling=false
    start registry "$E2E_REGISTRY" -port "$REGISTRY_PORT"
    procs_wait registry 30 in_ns "$E2E_CRANE" catalog "127.0.0.1:$REGISTRY_PORT" --insecure

    # Crossplane core: init (its CRDs, the TLS CA and client certificate), then start.
    # The watch circuit breaker's burst (default 100 events per composite, refilled 1 a
    # second) is raised: our fake providers make Ready in seconds what clouds take
    # minutes for, and Crossplane's own events (creates, two status updates per
    # reconcile) exceed 100 for any composite of more than ~14 resources made Ready
    # within a minute (measured: e2e/providers.py). Tripped, it drops events for 5
    # minutes but for a probe every 30 s. E2E_CIRCUIT_BREAKER_BURST=100 runs with the
    # default. A hot loop still trips it, and the scenarios check that composites go quiet.
    # init's first run can lose a race with the API server's REST mapper: retry.
    local xenv=(env KUBECONFIG="$state/kubeconfig" CRDS_PATH="$xp_dir/cluster/crds"
        TLS_CA_SECRET_NAME=crossplane-root-ca TLS_CLIENT_SECRET_NAME=crossplane-tls-client
        TLS_SERVER_SECRET_NAME=crossplane-tls-server POD_NAMESPACE=crossplane-system)
    # What the chart's init container gets with webhooks on: the webhook Service, whose
    # name goes into the server certificate and the ValidatingWebhookConfiguration.
    local xinit=(WEBHOOK_SERVICE_NAME="$WEBHOOK_SERVICE" WEBHOOK_SERVICE_NAMESPACE=crossplane-system
        WEBHOOK_SERVICE_PORT="$WEBHOOK_SERVICE_PORT"
        WEBHOOK_CONFIGS_PATH="$xp_dir/cluster/webhookconfigurations")
    "${k[@]}" create namespace crossplane-system >/dev/null  # helm install --create-namespace
    local i
    for i in 1 2 3 4 5; do
        if in_ns "${xenv[@]}" "${xinit[@]}" "$crossplane" core init --namespace=crossplane-system \
            --service-account=crossplane >"$state/logs/crossplane-init.log" 2>&1; then
            break
        fi
        ((i < 5)) || die "crossplane core init failed: $state/logs/crossplane-init.log"
        sleep 2
    done
    log "crossplane core init done"
    function_certs
    webhook_endpoint
    start crossplane "${xenv[@]}" "$crossplane" core start --package-runtime=External \
        --tls-server-certs-dir="$state/crossplane/tls-server" \
        --tls-client-certs-dir="$state/crossplane/tls-client" \
        --xpkg-cache-dir="$state/crossplane/xpkg" --xfn-cache-dir="$state/crossplane/xfn" \
        --metrics-port="$XP_METRICS_PORT" --health-probe-port="$XP_PROBE_PORT" \
        --webhook-port="$XP_WEBHOOK_PORT" --poll-interval=10s \
        --enable-dependency-version-upgrades \
        --circuit-breaker-burst="${E2E_CIRCUIT_BREAKER_BURST:-1000}"
    procs_wait crossplane 60 in_ns curl -sf "http://127.0.0.1:$XP_PROBE_PORT/readyz"

    # What a real install runs in pods: our functions, the package runtime, providers.
    local penv=(env KUBECONFIG="$state/kubeconfig" PYTHONPATH="$root" PYTHONUNBUFFERED=1 E2E_STATE="$state")
    start functions "$root/.venv/bin/modelplane-function" all \
        --tls-certs-dir "$state/functions-tls" --address "127.0.0.1:$FUNCTION_PORT"
    start package-runtime "${penv[@]}" "$py" -m e2e.runtime \
        --endpoint "127.0.0.1:$FUNCTION_PORT" --tls-dir "$state/functions-tls"
    # E2E_PROVIDERS_ARGS: e.g. --real-kubernetes (make e2e-fleet runs provider-kubernetes).
    # shellcheck disable=SC2086 # a list of flags
    start providers "${penv[@]}" "$py" -m e2e.providers ${E2E_PROVIDERS_ARGS:-}

    # Provider CRDs, the docs' prerequisites, our packages, the Configuration.
    in_ns "${penv[@]}" E2E_STATE="$state" E2E_CRANE="$E2E_CRANE" CRANK="$root/bin/crank" \
        "$py" -m e2e.install --registry "127.0.0.1:$REGISTRY_PORT"

    trap - EXIT
    log "up in $((SECONDS - t0)) s. kubectl: export KUBECONFIG=$state/kubeconfig; tools/e2e/kubectl get pkg"
}

case "${1:-}" in
up) up ;;
down) down ;;
status) procs_status ;;
exec)
    shift
    procs_alive "$(netns_pid)" || die "not up"
    in_ns env KUBECONFIG="$state/kubeconfig" PYTHONPATH="$root" "$@"
    ;;
kubectl)
    shift
    procs_alive "$(netns_pid)" || die "not up"
    eval "$(bash "$here/build.sh" --env 2>/dev/null)"
    in_ns "$E2E_KUBECTL" --kubeconfig "$state/kubeconfig" "$@"
    ;;
*)
    echo "usage: $0 up|down|status|exec CMD...|kubectl ARGS..." >&2
    exit 2
    ;;
esac
