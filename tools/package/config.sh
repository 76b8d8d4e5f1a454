# What the runtime image is built from; sourced by the scripts next to it.
# The Debian release whose python3 (3.11) the wheels are built for.
SUITE=bookworm
VARIANT=minbase
INCLUDE=python3-venv,ca-certificates
# Bump when base.sh changes what it leaves in the cached rootfs.
BASE_RECIPE=1
# The non-root user the image runs as (distroless' "nonroot").
RUN_UID=65532
PORT=9443
VENV=/venv/fn
