# The packages users install: the runtime image, the 14 Function packages and the
# Configuration, built without Docker into _out/ (tools/package/build.sh). The Debian
# rootfs the image is cut from is cached in $(CACHE_DIR), keyed by suite and packages.
PACKAGE_OUT := $(CURDIR)/_out
# What the packages are built from: rebuilt when one of these changes.
PACKAGE_INPUTS := $(shell find functions apis package examples tools/package -type f \
	-not -path '*/__pycache__/*' 2>/dev/null) crossplane.yaml pyproject.toml

$(PACKAGE_OUT)/digests.txt: $(PACKAGE_INPUTS) | $(VENV)/.installed $(CRANK)
	bash tools/package/build.sh

.PHONY: package
package: $(PACKAGE_OUT)/digests.txt ## Build the runtime image, the Function packages and the Configuration into _out/.

.PHONY: package-test
package-test: package ## Run a packaged Function's server from its image (mTLS, no Docker) and check the packages.
	$(PY) -m pytest tests/package -q $(PYTEST_ARGS)
