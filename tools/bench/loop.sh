#!/usr/bin/env bash
# make bench-loop: for each size (default S M), a fresh `make e2e` control plane with fake
# providers (tools/e2e/cluster.sh up, the packages installed as make e2e installs them),
# the fleet applied and watched by benches/loop.py inside the stack's network namespace,
# then every process the stack started stopped (also on failure or interrupt).
# Results: build/bench-loop/<size>.json and the report, build/bench-loop/report.md.
#
#   tools/bench/loop.sh [SIZE...]     BENCH_LOOP_STEADY=300 (seconds of steady state)
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${BENCH_LOOP_OUT:-$root/build/bench-loop}"
steady="${BENCH_LOOP_STEADY:-300}"
sizes=("$@")
((${#sizes[@]})) || sizes=(S M)
export E2E_STATE="$out/state"
cluster() { bash "$root/tools/e2e/cluster.sh" "$@"; }

trap 'cluster down >/dev/null 2>&1' EXIT
trap 'exit 130' INT TERM
mkdir -p "$out"
results=()
for size in "${sizes[@]}"; do
    # The function server counts its calls per kind here (modelplane.runtime.callstats);
    # outside $E2E_STATE, which `up` wipes.
    export MODELPLANE_CALL_STATS_DIR="$out/calls-$size"
    rm -rf "$MODELPLANE_CALL_STATS_DIR" && mkdir -p "$MODELPLANE_CALL_STATS_DIR"
    echo "bench-loop $size: starting the control plane ($(uptime))"
    if ! cluster up; then
        echo "bench-loop $size: the stack did not come up; logs in $E2E_STATE/logs/" >&2
        exit 1
    fi
    cluster exec env E2E_STATE="$E2E_STATE" MODELPLANE_CALL_STATS_DIR="$MODELPLANE_CALL_STATS_DIR" \
        PYTHONUNBUFFERED=1 "$root/.venv/bin/python" -m benches.loop run "$size" \
        --steady "$steady" --out "$out/$size.json"
    rc=$?
    cluster down
    if [[ $rc != 0 ]]; then
        echo "bench-loop $size: failed ($rc); the stack's logs are in $E2E_STATE/logs/" >&2
        exit "$rc"
    fi
    results+=("$out/$size.json")
done
"$root/.venv/bin/python" -m benches.loop report "${results[@]}" | tee "$out/report.md"
