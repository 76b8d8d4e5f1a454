#!/usr/bin/env bash
# A GPU fleet on this machine: one real Kubernetes workload cluster per InferenceCluster
# of a fleet file (etcd, kube-apiserver, kube-controller-manager, kube-scheduler v1.35.4,
# KWOK v0.8.0 as every node's kubelet), inside the e2e control plane's network namespace
# (tools/e2e/cluster.sh up) on ports of their own, plus the real provider-kubernetes
# v1.3.1 against the control plane and a status faker for what has no controller here.
#
#   tools/fleet/fleet.sh up        start the fleet on the running control plane, register it
#   tools/fleet/fleet.sh down      stop every process it started, by pid
#   tools/fleet/fleet.sh status    which processes are alive
#   tools/fleet/fleet.sh kubectl CLUSTER ARGS…   kubectl against a workload cluster
#
# FLEET: fleet files or folders (InferenceClasses and InferenceClusters); FLEET_CLUSTERS:
# only the first N clusters (0: all). State (plan, kubeconfigs, data, logs, pids) in
# $FLEET_STATE (default build/fleet/), wiped by the next `up`. See e2e/fleet/plan.py.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
state="${FLEET_STATE:-$root/build/fleet}"
e2e_state="${E2E_STATE:-$root/build/e2e}"
py="${E2E_PYTHON:-$root/.venv/bin/python}"
FLEET="${FLEET:-examples/getting-started/platform.yaml examples/getting-started/scale-the-platform/eks/platform-scale.yaml}"
FLEET_CLUSTERS="${FLEET_CLUSTERS:-2}"
# provider-kubernetes' own listeners, clear of Crossplane's (8080, 8081, 9443, 9444).
PK_METRICS=127.0.0.1:18080 PK_PROBE=127.0.0.1:18081 PK_WEBHOOK=19443
# pod-garbage-collector-controller: pods bound to a deleted node go, as in a real cluster.
KCM_CONTROLLERS=node-lifecycle-controller,deployment-controller,replicaset-controller,resourceclaim-controller,job-controller,statefulset-controller,garbage-collector-controller,pod-garbage-collector-controller,namespace-controller,serviceaccount-controller,serviceaccount-token-controller
export FLEET_STATE="$state" E2E_STATE="$e2e_state"

# Process supervision (start, probe, stop by pid file): tools/lib/procs.sh. Every process
# runs in the control plane's network namespace (nsenter execs it: its pid is the process).
netns_pid() { cat "$e2e_state/pids/netns.pid" 2>/dev/null || true; }
PROCS_DIR="$state" PROCS_TAG=fleet PROCS_STOP_SECS=10 PROCS_PREFIX=(nsenter -t "$(netns_pid)" -n --)
# shellcheck source=../lib/procs.sh
source "$root/tools/lib/procs.sh"
log() { procs_log "$@"; }
die() { procs_die "$@"; }
in_ns() { nsenter -t "$(netns_pid)" -n -- "$@"; }
start() { procs_start "$@"; }
down() { procs_stop_all; }

# The KWOK Stages its module ships: nodes Ready with a lease heartbeat; pods Ready at
# once, Jobs' pods complete, deleted pods go. Plus ours (tools/fleet/stages): Running pods
# Ready again once their node is back, as a kubelet makes them.
kwok_stages() {
    local dir="$1/kustomize/stage" f out="$state/kwok-stages.yaml"
    : >"$out"
    for f in node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
        pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
        [[ -f "$dir/$f" ]] || die "no KWOK stage $dir/$f"
        { echo "---"; cat "$dir/$f"; } >>"$out"
    done
    for f in "$here"/stages/*.yaml; do
        { echo "---"; cat "$f"; } >>"$out"
    done
}

# start_cluster NAME ETCD PEER METRICS APISERVER KCM SCHED KWOK
start_cluster() {
    local c="$1" etcd="$2" peer="$3" metrics="$4" api="$5" p="$e2e_state/pki"
    mkdir -p "$state/$c/etcd"
    start "$c-etcd" "$E2E_ETCD" --name "$c" --data-dir "$state/$c/etcd" --unsafe-no-fsync \
        --listen-client-urls "http://127.0.0.1:$etcd" --advertise-client-urls "http://127.0.0.1:$etcd" \
        --listen-peer-urls "http://127.0.0.1:$peer" --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
        --initial-cluster "$c=http://127.0.0.1:$peer" --listen-metrics-urls "http://127.0.0.1:$metrics" \
        --log-level warn
    start "$c-kube-apiserver" "$E2E_KUBE_APISERVER" --etcd-servers "http://127.0.0.1:$etcd" \
        --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$api" \
        --tls-cert-file "$p/apiserver.crt" --tls-private-key-file "$p/apiserver.key" \
        --client-ca-file "$p/ca.crt" --token-auth-file "$p/tokens.csv" \
        --service-account-issuer https://kubernetes.default.svc.cluster.local \
        --service-account-key-file "$p/sa.pub" --service-account-signing-key-file "$p/sa.key" \
        --service-cluster-ip-range 10.96.0.0/16 --authorization-mode RBAC \
        --endpoint-reconciler-type none --enable-priority-and-fairness=false --profiling=false
}

# start_controllers NAME ... KCM SCHED KWOK (after the API server is ready)
start_controllers() {
    local c="$1" kcm="$6" sched="$7" kwok="$8" kc="$state/$1/kubeconfig" p="$e2e_state/pki"
    start "$c-kube-controller-manager" "$E2E_KUBE_CONTROLLER_MANAGER" --kubeconfig "$kc" \
        --leader-elect=false --controllers "$KCM_CONTROLLERS" \
        --service-account-private-key-file "$p/sa.key" --root-ca-file "$p/ca.crt" \
        --bind-address 127.0.0.1 --secure-port "$kcm" --profiling=false
    start "$c-kube-scheduler" "$E2E_KUBE_SCHEDULER" --kubeconfig "$kc" --leader-elect=false \
        --bind-address 127.0.0.1 --secure-port "$sched" --profiling=false
    start "$c-kwok" "$E2E_KWOK" --kubeconfig "$kc" --config "$state/kwok-stages.yaml" \
        --manage-all-nodes=false --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
        --cidr 10.0.0.1/24 --node-ip 10.0.0.1 --node-lease-duration-seconds=40 \
        --server-address "127.0.0.1:$kwok"
}

provider_tls() {
    local d="$state/provider-kubernetes-tls"
    mkdir -p "$d"
    openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=provider-kubernetes" \
        -addext "subjectAltName=IP:127.0.0.1" -keyout "$d/tls.key" -out "$d/tls.crt" 2>/dev/null
}

up() {
    procs_alive "$(netns_pid)" || die "the control plane is not up (tools/e2e/cluster.sh up first)"
    [[ -f "$state/pids/order" ]] && die "already up (tools/fleet/fleet.sh down first)"
    # The fake providers must leave Objects to the real provider-kubernetes.
    tr '\0' ' ' <"/proc/$(cat "$e2e_state/pids/providers.pid")/cmdline" | grep -q -- --real-kubernetes ||
        die "the control plane's fake providers fake Objects: start it with E2E_PROVIDERS_ARGS=--real-kubernetes (make cluster-up E2E_PROVIDERS_ARGS=--real-kubernetes)"
    local t0=$SECONDS
    rm -rf "$state"
    mkdir -p "$state"/{logs,pids}
    trap 'rc=$?; if [[ $rc != 0 ]]; then log "up failed ($rc): stopping what started"; down; fi' EXIT
    trap 'exit 130' INT TERM
    eval "$(E2E_FLEET=1 bash "$root/tools/e2e/build.sh" --env)"
    local kwok_dir
    kwok_dir="$(cd "$here/kwok" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)"
    kwok_stages "$kwok_dir"
    # shellcheck disable=SC2086 # FLEET is a list of paths
    (cd "$root" && "$py" -m e2e.fleet.plan --clusters "$FLEET_CLUSTERS" $FLEET) >"$state/plan.json"
    (cd "$root" && "$py" -m e2e.fleet.setup modules && "$py" -m e2e.fleet.setup kubeconfigs)
    local rows
    rows="$("$py" -c 'import json,sys; [print(c["name"], *c["ports"].values()) for c in json.load(open(sys.argv[1]))["clusters"]]' "$state/plan.json")"
    log "workload clusters: $(echo "$rows" | cut -d' ' -f1 | tr '\n' ' ')"
    local row c
    while read -r row; do
        # shellcheck disable=SC2086 # the row is the cluster's name and ports
        start_cluster $row
    done <<<"$rows"
    while read -r row; do
        c="${row%% *}"
        procs_wait "$c-kube-apiserver" 90 in_ns "$E2E_KUBECTL" --kubeconfig "$state/$c/kubeconfig" get --raw /readyz
        # shellcheck disable=SC2086
        start_controllers $row
    done <<<"$rows"
    log "API servers ready, controllers, schedulers and KWOK started ($((SECONDS - t0)) s)"
    local penv=(env PYTHONPATH="$root" PYTHONUNBUFFERED=1 FLEET_STATE="$state" E2E_STATE="$e2e_state")
    while read -r row; do
        in_ns "${penv[@]}" "$py" -m e2e.fleet.setup workload "${row%% *}"
    done <<<"$rows"
    start status-faker "${penv[@]}" "$py" -m e2e.fleet.faker
    provider_tls
    start provider-kubernetes env KUBECONFIG="$e2e_state/kubeconfig" \
        TLS_SERVER_CERTS_DIR="$state/provider-kubernetes-tls" "$E2E_PROVIDER_KUBERNETES" \
        --poll=15s --sync=1h --enable-watches --max-reconcile-rate=10 \
        --metrics-bind-address="$PK_METRICS" --health-probe-bind-addr="$PK_PROBE" \
        --webhook-port="$PK_WEBHOOK"
    procs_wait provider-kubernetes 60 in_ns curl -sf "http://$PK_PROBE/readyz"
    in_ns "${penv[@]}" KUBECONFIG="$e2e_state/kubeconfig" "$py" -m e2e.fleet.setup register
    trap - EXIT
    log "up in $((SECONDS - t0)) s: $(echo "$rows" | wc -l) workload clusters; tools/fleet/fleet.sh kubectl CLUSTER get nodes"
}

case "${1:-}" in
up) up ;;
down) down ;;
status) procs_status ;;
kubectl)
    [[ -n "${2:-}" ]] || die "usage: $0 kubectl CLUSTER ARGS..."
    c="$2"
    shift 2
    eval "$(bash "$root/tools/e2e/build.sh" --env 2>/dev/null)"
    in_ns "$E2E_KUBECTL" --kubeconfig "$state/$c/kubeconfig" "$@"
    ;;
*)
    echo "usage: $0 up|down|status|kubectl CLUSTER ARGS..." >&2
    exit 2
    ;;
esac
