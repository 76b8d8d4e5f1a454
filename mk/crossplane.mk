# Crossplane core, pinned by tools/crossplane/go.mod. Offline rendering runs its
# `crossplane internal render` (the real composite reconciler, in memory); see
# functions/modelplane/dev/engine.py. The binary is cached in $(CACHE_DIR) by version.
CROSSPLANE := $(BIN)/crossplane

$(CROSSPLANE): tools/crossplane/go.mod tools/crossplane/go.sum tools/crossplane/build.sh
	bash tools/crossplane/build.sh

.PHONY: crossplane
crossplane: $(CROSSPLANE) ## Build Crossplane core (the render engine) into the cache, linked as ./bin/crossplane.

# `make demo` and `make render` render through it.
demo render: $(CROSSPLANE)
