# Crossplane core, pinned by tools/crossplane/go.mod. Offline rendering runs its
# `crossplane internal render` (the real composite reconciler, in memory); see
# functions/modelplane/dev/engine.py. The binary is cached in $(CACHE_DIR) by version.
CROSSPLANE := $(BIN)/crossplane

# The version go.mod pins, for the step's label and to tell a cached build from a new one.
CROSSPLANE_VERSION := $(shell awk '$$1 == "github.com/crossplane/crossplane/v2" {print $$2}' tools/crossplane/go.mod)
CROSSPLANE_STEP := Crossplane core $(CROSSPLANE_VERSION) (render engine)

$(CROSSPLANE): tools/crossplane/go.mod tools/crossplane/go.sum tools/crossplane/build.sh
	@$(STEP) crossplane "$(CROSSPLANE_STEP)" \
		--cached-if "test -x '$(CACHE_DIR)/crossplane-$(CROSSPLANE_VERSION)/crossplane'" \
		-- bash tools/crossplane/build.sh

.PHONY: crossplane
crossplane: $(CROSSPLANE) ## Build Crossplane core (the render engine) into the cache, linked as ./bin/crossplane.
	@$(STEP) --cached crossplane "$(CROSSPLANE_STEP)"

# `make demo` and `make render` render through it.
demo render: crossplane
