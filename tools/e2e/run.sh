#!/usr/bin/env bash
# make e2e: start the stack (tools/e2e/cluster.sh up), run the scenarios (python -m e2e)
# inside its network namespace, and stop every process it started, also on failure or
# interrupt. Arguments are passed to python -m e2e (scenario names).
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
state="${E2E_STATE:-$root/build/e2e}"
export E2E_STATE="$state"

t0=$SECONDS
trap 'bash "$here/cluster.sh" down; echo "e2e: took $((SECONDS - t0)) s in all"' EXIT
trap 'exit 130' INT TERM

if ! bash "$here/cluster.sh" up; then
    echo "e2e: the stack did not come up; logs in $state/logs/" >&2
    for f in "$state"/logs/*.log; do
        [[ -f "$f" ]] || continue
        echo "---- tail of $f" >&2
        tail -n 15 "$f" >&2
    done
    echo "0 passed, 1 failed"
    exit 1
fi
up=$((SECONDS - t0))
echo "e2e: stack up in ${up} s"
eval "$(bash "$here/build.sh" --env)"
bash "$here/cluster.sh" exec env E2E_KUBECTL="$E2E_KUBECTL" PYTHONUNBUFFERED=1 \
    "$root/.venv/bin/python" -m e2e "$@"
rc=$?
if [[ $rc != 0 ]]; then
    echo "e2e: logs of the stack in $state/logs/ (kept until the next run)"
fi
exit $rc
