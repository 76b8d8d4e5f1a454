#!/usr/bin/env bash
# Install Debian's chromium for the `modelplane simulate` report test (headless
# rendering of the HTML report), unless it is already there. Idempotent: safe to call
# from setup and CI on every run. The machine's own apt sources are used as configured.
#
#   chromium.sh             install it if missing
#   chromium.sh --announce  only say what installing it will do (apt, and sudo when not
#                           root), before `make setup` runs the step with its output in a log
#
# apt-get waits for another apt or dpkg to release its lock (up to APT_LOCK_TIMEOUT
# seconds, default 600) instead of failing at once.
set -euo pipefail

CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"
APT_LOCK_TIMEOUT="${APT_LOCK_TIMEOUT:-600}"

if [[ "$(id -u)" -ne 0 ]]; then
  SUDO=sudo
  AS="through sudo (it may ask for your password)"
else
  SUDO=
  AS="as root"
fi

if [[ "${1:-}" == "--announce" ]]; then
  echo "  setup  Chromium is missing: installing Debian's chromium with apt-get $AS," >&2
  echo "         waiting up to ${APT_LOCK_TIMEOUT}s for apt's lock if another apt runs." >&2
  echo "         The report tests need it; \`make setup NO_BROWSER=1\` skips it." >&2
  exit 0
fi

if [[ -x "$CHROMIUM" ]]; then
  echo "chromium: $("$CHROMIUM" --version 2>/dev/null || echo present) at $CHROMIUM"
  exit 0
fi

export DEBIAN_FRONTEND=noninteractive
# Wait for the lock rather than fail: the lists lock (update) and dpkg's (install).
LOCK=(-o "DPkg::Lock::Timeout=$APT_LOCK_TIMEOUT")
wait_for_lists_lock() {
  local waited=0
  while command -v fuser >/dev/null && fuser /var/lib/apt/lists/lock >/dev/null 2>&1; do
    if (( waited == 0 )); then echo "waiting for apt's lists lock (another apt is running) ..."; fi
    if (( waited >= APT_LOCK_TIMEOUT )); then echo "apt's lock still held after ${waited}s" >&2; exit 1; fi
    sleep 5
    waited=$((waited + 5))
  done
}
echo "installing chromium with apt-get $AS"
wait_for_lists_lock
# An old package list may not know chromium (or its dependencies' current versions).
$SUDO apt-get "${LOCK[@]}" update -qq
$SUDO apt-get "${LOCK[@]}" install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
echo "chromium: $("$CHROMIUM" --version 2>/dev/null) at $CHROMIUM"
