# The end-to-end suite: a real control plane (etcd, kube-apiserver,
# kube-controller-manager, Crossplane core) on this machine, our Configuration installed
# as a package, the docs' scenarios run against it. See the README's "End-to-end tests".
# Binaries are built once into $(CACHE_DIR), keyed by version (tools/e2e/build.sh).
E2E_STATE ?= $(CURDIR)/build/e2e
export E2E_STATE
E2E_ARGS ?=

.PHONY: e2e-build
e2e-build: $(VENV)/.installed tools crossplane ## Build (or reuse) etcd, kube-apiserver, kube-controller-manager, kubectl, registry, crane.
	bash tools/e2e/build.sh

.PHONY: e2e
e2e: e2e-build ## Start the control plane, install Modelplane, run the e2e scenarios, stop everything.
	bash tools/e2e/run.sh $(E2E_ARGS)

.PHONY: cluster-up
cluster-up: e2e-build ## Start the e2e control plane with Modelplane installed; kubectl: tools/e2e/kubectl.
	bash tools/e2e/cluster.sh up

.PHONY: cluster-down
cluster-down: ## Stop every process cluster-up started.
	bash tools/e2e/cluster.sh down
