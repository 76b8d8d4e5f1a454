#!/usr/bin/env bash
# make e2e-fleet: start the control plane with provider-kubernetes' Objects left to the
# real provider (tools/e2e/cluster.sh up), the fleet on it (tools/fleet/fleet.sh up), run
# the fleet scenarios (python -m e2e.fleet) inside the namespace, then stop every process
# both started, also on failure or interrupt. Arguments go to python -m e2e.fleet.
# FLEET: the fleet files (default: the getting-started fleet and e2e/fleet/pools.yaml).
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
export E2E_STATE="${E2E_STATE:-$root/build/e2e}" FLEET_STATE="${FLEET_STATE:-$root/build/fleet}"
# The getting-started fleet (fleet.sh's default) plus the pools the sharing scenario needs.
export FLEET="${FLEET:-examples/getting-started/platform.yaml examples/getting-started/scale-the-platform/eks/platform-scale.yaml e2e/fleet/pools.yaml}"

t0=$SECONDS
trap 'bash "$here/fleet.sh" down; bash "$root/tools/e2e/cluster.sh" down; echo "e2e-fleet: took $((SECONDS - t0)) s in all"' EXIT
trap 'exit 130' INT TERM

fail_up() {
    echo "e2e-fleet: $1 did not come up; logs in $2/logs/" >&2
    for f in "$2"/logs/*.log; do
        [[ -f "$f" ]] || continue
        echo "---- tail of $f" >&2
        tail -n 15 "$f" >&2
    done
    echo "0 passed, 1 failed"
    exit 1
}

E2E_PROVIDERS_ARGS=--real-kubernetes bash "$root/tools/e2e/cluster.sh" up || fail_up "the control plane" "$E2E_STATE"
echo "e2e-fleet: control plane up in $((SECONDS - t0)) s"
t1=$SECONDS
bash "$here/fleet.sh" up || fail_up "the fleet" "$FLEET_STATE"
echo "e2e-fleet: fleet up in $((SECONDS - t1)) s"
eval "$(E2E_FLEET=1 bash "$root/tools/e2e/build.sh" --env)"
bash "$root/tools/e2e/cluster.sh" exec env E2E_KUBECTL="$E2E_KUBECTL" FLEET_STATE="$FLEET_STATE" \
    E2E_STATE="$E2E_STATE" PYTHONUNBUFFERED=1 "$root/.venv/bin/python" -m e2e.fleet "$@"
rc=$?
if [[ $rc != 0 ]]; then
    echo "e2e-fleet: logs in $E2E_STATE/logs/ and $FLEET_STATE/logs/ (kept until the next run)"
fi
exit $rc
