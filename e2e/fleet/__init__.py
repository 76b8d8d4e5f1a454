"""A whole GPU fleet on this machine: workload clusters as real Kubernetes with fake GPU
nodes (make fleet-up, make e2e-fleet). See tools/fleet/fleet.sh."""
