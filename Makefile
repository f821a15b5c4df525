# Runbook: rbc (compiler) and rbd (daemon).
#
#   make demo    run the main job on this machine
#   make test    the whole test suite (what CI runs)

GO        ?= go
BIN       := bin
EXAMPLES  := examples/runbooks
BENCHTIME ?= 5x
SOAK_DURATION ?= 10m
SOAK_SEED ?= 0

.PHONY: help build rbc-rbd test fmt lint bench bench-go bench-console check-model soak soak-failover cluster cluster-stop demo examples clean postgres chromium promtool npx

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-9s %s\n", $$1, $$2}'

build: ## build rbc, rbd and the bench's tools into bin/
	$(GO) build -o $(BIN)/ ./cmd/...
	@# River and DBOS Transact, for make bench only, are modules of their own that ./... leaves out.
	cd cmd/rbload/rbriver && $(GO) build -o $(abspath $(BIN))/ .
	cd cmd/rbload/rbdbos && $(GO) build -o $(abspath $(BIN))/ .

# rbc-rbd builds only rbc and rbd, what make demo and make examples run: a
# first make demo on a fresh clone neither builds the bench's runners nor
# downloads their modules.
rbc-rbd:
	$(GO) build -o $(BIN)/ ./cmd/rbc ./cmd/rbd

test: postgres chromium promtool npx ## run every test, with the race detector
	$(GO) vet ./...
	@test -z "$$(gofmt -l .)" || { echo "gofmt would change:"; gofmt -l .; exit 1; }
	$(GO) test -race -count=1 -timeout 25m ./... # cmd/rbd alone takes 7 minutes under -race on two loaded cores

fmt: ## format the Go code
	gofmt -w .

lint: ## go vet and gofmt -l
	$(GO) vet ./...
	cd cmd/rbload/rbriver && $(GO) vet ./...
	cd cmd/rbload/rbdbos && $(GO) vet ./...
	@out="$$(gofmt -l .)"; if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

bench: build postgres ## measure rbd and rbc on this machine and print the table (BENCHMARKS.md)
	$(BIN)/rbload --out $(BIN)/bench/results.json --profile $(BIN)/bench/rbd.pprof
	@echo
	@echo "Where rbd's CPU went in the first chain throughput run ($(BIN)/bench/rbd.pprof):"
	@$(GO) tool pprof -top -nodecount=25 $(BIN)/rbd $(BIN)/bench/rbd.pprof 2>/dev/null | sed -n '4,31p'

bench-go: postgres ## the packages' Go benchmarks: parser, compiler, rbc, rbc lsp, runtime
	$(GO) test -run '^$$' -bench . -benchtime $(BENCHTIME) ./lang ./compiler ./cmd/rbc ./cmd/rbc/internal/lsp
	PGTEST_DURABLE=1 $(GO) test -run '^$$' -bench . -benchtime 3x ./runtime

N ?= 50000
check-model: ## the model check on N generated runbooks (make test runs 2,000; docs/design/semantics.md)
	$(GO) test -count=1 -timeout 0 -run '^TestModelCheck$$' ./runtime -model.n $(N) -v | tail -3

soak: build postgres ## rbd under load and random faults, then check nothing repeated or was lost (SOAK_DURATION, SOAK_SEED; docs/reliability.md)
	$(BIN)/rbsoak --duration $(SOAK_DURATION) --seed $(SOAK_SEED)

cluster: ## pg_auto_failover (monitor, primary, synchronous standby) and two rbd workers on this machine; prints the URLs (docs/scaling.md)
	$(GO) build -o $(BIN)/ ./cmd/rbd
	@BIN=$(BIN) cluster/cluster.sh up

cluster-stop: ## stop what make cluster started and remove its directory
	@cluster/cluster.sh down

FAILOVER_DURATION ?= 10m
FAILOVER_FAULTS ?= switchover,primary-kill9,kill9,pg-terminate

soak-failover: ## the soak on make cluster's PostgreSQL with switchovers and kill -9 of the primary (FAILOVER_DURATION; docs/reliability.md)
	$(GO) build -o $(BIN)/ ./cmd/rbd ./cmd/rbsoak
	@cluster/cluster.sh down >/dev/null
	@CLUSTER_WORKERS= BIN=$(BIN) cluster/cluster.sh up
	$(BIN)/rbsoak --duration $(FAILOVER_DURATION) --seed $(SOAK_SEED) --fault-gap 25s --faults $(FAILOVER_FAULTS) \
		--failover-cmd cluster/cluster.sh --database-url "$$(cluster/cluster.sh url)"; \
		status=$$?; cluster/cluster.sh down; exit $$status

demo: rbc-rbd postgres ## run the KYC example end to end on rbd with its own PostgreSQL (DEMO_SERVER=URL: on an rbd already running, as make cluster's)
	@BIN=$(BIN) DEMO_SERVER=$(DEMO_SERVER) examples/demo.sh

examples: rbc-rbd ## compile, lint, draw and summarise the effects of every example runbook
	@for ex in kyc-onboarding funding-outreach incident-response db-failover access-review; do \
		echo "== $$ex"; \
		$(BIN)/rbc lint --verbs $(EXAMPLES)/$$ex/verbs $(EXAMPLES)/$$ex/$$ex.rbk && \
		$(BIN)/rbc compile --verbs $(EXAMPLES)/$$ex/verbs $(EXAMPLES)/$$ex/$$ex.rbk -o $(BIN)/$$ex.plan.json && \
		echo "plan: $(BIN)/$$ex.plan.json ($$(grep -c '{"key":"[^"]*","verb":' $(BIN)/$$ex.plan.json) steps)" && \
		$(BIN)/rbc graph --verbs $(EXAMPLES)/$$ex/verbs $(EXAMPLES)/$$ex/$$ex.rbk --format mermaid && \
		$(BIN)/rbc effects --verbs $(EXAMPLES)/$$ex/verbs $(EXAMPLES)/$$ex/$$ex.rbk || exit 1; \
	done

postgres: ## make sure PostgreSQL's binaries are installed (the tests start their own server)
	@.ci/ensure-postgres

chromium: ## make sure a headless Chromium is installed for the console's browser tests
	@.ci/ensure-chromium

promtool: ## make sure promtool is installed for the metrics test (promtool check metrics)
	@.ci/ensure-promtool

npx: ## make sure npx is installed for the MCP inspector's test
	@.ci/ensure-npx

bench-console: postgres chromium ## the console's render time for a 1,000-step runbook in headless Chromium
	$(GO) test -run '^$$' -bench BenchmarkConsoleRender -benchtime 5x ./cmd/rbd

clean: ## remove build output
	rm -rf $(BIN)
