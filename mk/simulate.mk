# `modelplane simulate`: play a fleet's timeline (examples/simulate/) through the
# ModelDeployment function's scheduler and write an HTML report with its charts.
SCENARIO ?= examples/simulate/drain-a-cluster.yaml
SIMULATE_DIR ?= build/simulate
SIMULATE_ARGS ?=

.PHONY: simulate
simulate: installed ## Simulate a scenario: make simulate SCENARIO=<file>; report in build/simulate/report.html.
	@mkdir -p $(SIMULATE_DIR)
	$(VENV)/bin/modelplane simulate $(SCENARIO) --report $(SIMULATE_DIR)/report.html $(SIMULATE_ARGS)

# Also the last line of `make demo`; the command's own progress goes to a log beside it.
SIMULATE_EXAMPLE = examples/simulate/drain-a-cluster.yaml
define simulate_example
	@mkdir -p $(SIMULATE_DIR)
	@$(VENV)/bin/modelplane simulate $(SIMULATE_EXAMPLE) --report $(SIMULATE_DIR)/drain-a-cluster.html \
		> $(SIMULATE_DIR)/drain-a-cluster.txt 2> $(SIMULATE_DIR)/drain-a-cluster.log \
		|| { cat $(SIMULATE_DIR)/drain-a-cluster.log >&2; exit 1; }
	@echo "  simulate   what-if report of $(SIMULATE_EXAMPLE): $(CURDIR)/$(SIMULATE_DIR)/drain-a-cluster.html"
endef

.PHONY: simulate-example
simulate-example: installed ## Write the drain example's report and print where it is.
	$(simulate_example)

# NO_BROWSER=1 skips it; build/no-browser records that choice, and the report's browser
# tests then skip saying so (without it, a missing Chromium fails them).
NO_BROWSER ?=
.PHONY: chromium
chromium: ## Install Debian's chromium if missing (tests/simulate renders the report in it); NO_BROWSER=1 skips it.
ifeq ($(NO_BROWSER),1)
	@mkdir -p build && echo "make setup NO_BROWSER=1" > build/no-browser
	@echo "  setup  Chromium (report tests, apt) ........ skipped (NO_BROWSER=1): the report's browser tests will skip" >&2
else
	@rm -f build/no-browser
	@test -x /usr/bin/chromium || bash tools/simulate/chromium.sh --announce
	@$(STEP) chromium "Chromium (report tests, apt)" --cached-if "test -x /usr/bin/chromium" -- bash tools/simulate/chromium.sh
endif
