# The end-to-end suite: a real control plane (etcd, kube-apiserver,
# kube-controller-manager, Crossplane core) on this machine, our Configuration installed
# as a package, the docs' scenarios run against it. See the README's "End-to-end tests".
# Binaries are built once into $(CACHE_DIR), keyed by version (tools/e2e/build.sh).
# What gets installed is what `make package` built in _out/ (e2e/install.py pushes it to
# the local registry), so every target that starts the control plane needs `package`.
E2E_STATE ?= $(CURDIR)/build/e2e
export E2E_STATE
E2E_ARGS ?=

.PHONY: e2e-build
e2e-build: $(VENV)/.installed tools crossplane ## Build (or reuse) etcd, kube-apiserver, kube-controller-manager, kubectl, registry, crane.
	bash tools/e2e/build.sh

.PHONY: e2e
e2e: e2e-build package ## Start the control plane, install Modelplane, run the e2e scenarios, stop everything.
	bash tools/e2e/run.sh $(E2E_ARGS)

.PHONY: cluster-up
cluster-up: e2e-build package ## Start the e2e control plane with Modelplane installed; kubectl: tools/e2e/kubectl.
	bash tools/e2e/cluster.sh up

.PHONY: cluster-down
cluster-down: ## Stop every process cluster-up started.
	bash tools/e2e/cluster.sh down

# make e2e-fleet (mk/fleet.mk) starts the same control plane: it installs _out/ too.
e2e-fleet: package
