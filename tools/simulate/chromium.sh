#!/usr/bin/env bash
# Install Debian's chromium for the `modelplane simulate` report test (headless
# rendering of the HTML report), unless it is already there. Idempotent: safe to call
# from setup and CI on every run. The machine's own apt sources are used as configured.
set -euo pipefail

CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"

if [[ -x "$CHROMIUM" ]]; then
  echo "chromium: $("$CHROMIUM" --version 2>/dev/null || echo present) at $CHROMIUM"
  exit 0
fi

if [[ "$(id -u)" -ne 0 ]]; then
  SUDO=sudo
else
  SUDO=
fi

export DEBIAN_FRONTEND=noninteractive
# An old package list may not know chromium (or its dependencies' current versions).
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
echo "chromium: $("$CHROMIUM" --version 2>/dev/null) at $CHROMIUM"
