# The Go benchmark client (tools/benchclient): it encodes requests as Crossplane does
# (structpb.NewStruct of unstructured objects, Go's default marshalling, one connection),
# so `make bench` measures the server on the bytes Crossplane sends. Cached in
# $(CACHE_DIR) by a digest of its sources.
BENCHCLIENT := $(BIN)/benchclient

$(BENCHCLIENT): tools/benchclient/go.mod tools/benchclient/go.sum tools/benchclient/main.go tools/benchclient/build.sh
	@$(STEP) benchclient "Go bench client (fn/v1)" \
		--cached-if "test -x '$(CACHE_DIR)/benchclient-$$(cat tools/benchclient/go.mod tools/benchclient/go.sum tools/benchclient/main.go | sha256sum | cut -c1-16)/benchclient'" \
		-- bash tools/benchclient/build.sh

.PHONY: benchclient
benchclient: $(BENCHCLIENT) ## Build the Go benchmark client (encodes as Crossplane does) into ./bin.
	@$(STEP) --cached benchclient "Go bench client (fn/v1)"

# The loop benchmark: the `make e2e` control plane with fake providers, a fleet of Existing
# InferenceClusters and ModelDeployments per size (benches/loop.py), from apply to all
# Ready and then steady; CPU of Crossplane, kube-apiserver, etcd and the function server,
# reconciles per kind, the ModelDeployment's request bytes. Long: not in CI, not in make test.
# BENCH_LOOP_SIZES: the sizes (S M); BENCH_LOOP_STEADY: the steady window in seconds (300).
BENCH_LOOP_SIZES ?= S M
BENCH_LOOP_STEADY ?= 300

.PHONY: bench-loop
bench-loop: e2e-build package ## Loop benchmark: converge and steady cost of fleets S and M on the e2e control plane.
	BENCH_LOOP_STEADY=$(BENCH_LOOP_STEADY) bash tools/bench/loop.sh $(BENCH_LOOP_SIZES)
