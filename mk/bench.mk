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
