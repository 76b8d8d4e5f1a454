# A GPU fleet on this machine: the e2e control plane plus one real Kubernetes workload
# cluster per InferenceCluster of a fleet file (fake GPU nodes by KWOK, DRA devices
# allocated by the real kube-scheduler), the real provider-kubernetes between them.
# See tools/fleet/fleet.sh. FLEET: fleet files (e2e-fleet adds e2e/fleet/pools.yaml to the
# getting-started fleet: tools/fleet/run.sh); FLEET_CLUSTERS: how many (default 2).
FLEET_ARGS ?=
# e2e-fleet's own control plane state, apart from make e2e's (both may run at once).
E2E_FLEET_STATE ?= $(CURDIR)/build/e2e-fleet

.PHONY: fleet-build
fleet-build: e2e-build ## Build (or reuse) kube-scheduler, KWOK and provider-kubernetes too.
	E2E_FLEET=1 bash tools/e2e/build.sh

.PHONY: fleet-up
fleet-up: fleet-build ## Start the fleet on a running control plane (make cluster-up E2E_PROVIDERS_ARGS=--real-kubernetes).
	bash tools/fleet/fleet.sh up

.PHONY: fleet-down
fleet-down: ## Stop every process fleet-up started.
	bash tools/fleet/fleet.sh down

.PHONY: e2e-fleet
e2e-fleet: fleet-build ## Control plane + fleet, run the fleet scenarios (e2e/fleet), stop everything.
	E2E_STATE=$(E2E_FLEET_STATE) bash tools/fleet/run.sh $(FLEET_ARGS)
